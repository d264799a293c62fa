"""One escaping function per output medium: text strangers wrote never becomes markup.

forktool prints text it did not write (commit subjects, PR titles, author names,
patch headers and file names) into eight media. The rule is the same in each: data
is shown as the characters it holds, and only what forktool writes is markup. Every
renderer of a medium calls that medium's function here, and no other:

- terminal: :func:`terminal` (control characters and escape sequences are shown as
  ``\\x1b``, never sent; rich markup is switched off in forktool's consoles);
- HTML: :func:`html_text`, and :func:`script_json` for JSON inside ``<script>``;
- markdown: :func:`md_text` for prose, :func:`md_code` for a code span,
  :func:`md_fence` for a block of lines;
- XML (JUnit): :func:`xml_text`;
- GitHub workflow commands: :func:`github_data` and :func:`github_property`;
- JSON: :func:`json_safe` (a name's bytes that are not UTF-8 as ``\\xNN`` text);
- FORK.md's record cells: ``model/record.py`` (its cells must also read back).

Only the standard library here: the CLI imports this at start-up.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from typing import Any

# Shown, never sent: control characters (Cc: C0, DEL, C1), format characters (Cf:
# bidirectional overrides and isolates that reorder what follows on screen, zero-width
# spaces and joiners that make two different names look the same, the BOM), line and
# paragraph separators, lone surrogates.
_UNSAFE = frozenset(("Cc", "Cf", "Zl", "Zp", "Cs"))


def _shown(ch: str) -> str:
    """``ch`` as an escape a reader can see: ``\\x1b``, ``\\n``, ``\\u202e``."""
    return ch.encode("unicode_escape").decode("ascii")


def _unsafe_on_screen(ch: str) -> bool:
    return unicodedata.category(ch) in _UNSAFE


def terminal(text: str, *, keep: str = "") -> str:
    """``text`` for a terminal: control characters (ESC of an ANSI CSI or OSC 8
    sequence, BEL, CR, line breaks), format characters (bidirectional overrides,
    zero-width spaces and joiners) and lone surrogates shown as escapes; the
    characters in ``keep`` (``"\\n"`` for a text that is several lines on purpose)
    pass as they are."""
    if text.isprintable():
        return text
    return "".join(_shown(ch) if ch not in keep and _unsafe_on_screen(ch) else ch for ch in text)


# -- HTML and XML ---------------------------------------------------------------------


def _xml_forbidden(ch: str) -> bool:
    code = ord(ch)
    if code < 0x20:
        return ch not in "\t\n\r"
    return 0xD800 <= code <= 0xDFFF or code in (0xFFFE, 0xFFFF)


def _visible(text: str, forbidden: Callable[[str], bool]) -> str:
    if text.isprintable():
        return text
    return "".join(_shown(ch) if forbidden(ch) else ch for ch in text)


def html_text(text: str) -> str:
    """``text`` as HTML character data or a quoted attribute value: ``< > & " '``
    escaped, and characters HTML forbids (C0 controls but tab and line breaks,
    DEL and C1 controls, lone surrogates) or that disguise text (format characters,
    as on a terminal) shown as escapes."""
    import html

    return html.escape(_visible(text, _html_forbidden), quote=True)


def _html_forbidden(ch: str) -> bool:
    return _xml_forbidden(ch) or 0x7F <= ord(ch) <= 0x9F or _disguising(ch)


def _disguising(ch: str) -> bool:
    """A character shown as an escape in every medium, even one that keeps tab and
    line breaks: everything a terminal escapes but those."""
    return ch not in "\t\n\r" and _unsafe_on_screen(ch)


_SCRIPT_UNSAFE = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}


def script_json(payload: Any) -> str:
    """``payload`` as JSON that is safe inside ``<script>``: no ``<``, ``>`` or ``&``
    appears (``</script>`` and ``<!--`` can neither end the element nor switch the
    parser into its escaped state), and ``JSON.parse`` gives the same value back."""
    import json

    text = json.dumps(payload)  # ensure_ascii: lone surrogates become \\udcxx
    return re.sub("[<>&\u2028\u2029]", lambda m: _SCRIPT_UNSAFE[m.group()], text)


# -- JSON --------------------------------------------------------------------------------


def json_safe(value: Any) -> Any:
    """``value`` (JSON data) with each lone surrogate of its strings written as text:
    ``\\xNN`` for a byte that is not UTF-8 (U+DC80-U+DCFF, as Python reads a file name
    or patch it cannot decode), ``\\udNNN`` for any other. JSON's ``\\udcff`` is read
    as U+FFFD by some parsers and kept by others; the text is read alike by all."""
    if isinstance(value, str):
        if not _SURROGATE.search(value):
            return value
        return _SURROGATE.sub(lambda m: _shown_surrogate(m.group()), value)
    if isinstance(value, dict):
        return {json_safe(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(item) for item in value]
    return value


_SURROGATE = re.compile("[\ud800-\udfff]")


def _shown_surrogate(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


# -- markdown (GitHub-flavoured) -------------------------------------------------------

# ASCII punctuation markdown reads as syntax inside a line; each is backslash-escaped.
_MD_PUNCTUATION = frozenset("\\`*_[]!|~#")
_MD_ENTITY = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def _md_char(ch: str) -> str:
    if ch in _MD_ENTITY:
        return _MD_ENTITY[ch]
    if ch in _MD_PUNCTUATION:
        return "\\" + ch
    if ch == "@":
        # a zero-width space after '@': '@user' must not mention (notify) anyone
        return "@&#8203;"
    if ch in "\r\n\u2028\u2029\x85":
        return " "
    if _unsafe_on_screen(ch) or _html_forbidden(ch):
        return _shown(ch)
    return ch


# What GitHub turns into a link with no markup at all (its autolink extension): a
# scheme's '://' and 'www.'. Escaped, the characters still show, and the text stays
# text. ('@' is kept from forming an address by _md_char.)
_MD_AUTOLINK = re.compile(r"://|(?i:www)\.")


def md_unlinked(text: str) -> str:
    """``text`` (markdown already) with each scheme's ``://`` and each ``www.``
    backslash-escaped: GitHub's autolinks cannot form from it, and it reads the same."""
    return _MD_AUTOLINK.sub(_md_unlinked, text)


def _md_unlinked(found: re.Match[str]) -> str:
    text = found.group()
    return "\\:\\/\\/" if text == "://" else text[:3] + "\\."


# What starts a block when it opens a line (a list item's text is such a line): a sign,
# or up to nine digits then a '.' or ')'. The '.' or ')' may come from the text or from
# whatever the caller writes right after it ("- " + md_text("1") + "." is an ordered
# list), so text that is all digits gets its first digit as a character reference.
_MD_BLOCK_SIGN = frozenset("-+>=")
_MD_LIST_NUMBER = re.compile(r"[0-9]{1,9}")


def md_text(text: str) -> str:
    """``text`` as literal markdown prose on one line (a table cell, a list item):
    markdown syntax backslash-escaped, ``< > &`` as entities (no raw HTML, no
    image, no link from data: a URL's ``://`` and a ``www.`` are escaped too, so
    GitHub's autolinks cannot form), ``@`` kept from mentioning, line breaks as spaces,
    whitespace at either end (which markdown trims, no-break spaces included) as
    character references, so it shows as itself and opens no block."""
    shown = md_unlinked("".join(_md_char(ch) for ch in text))
    body = shown.lstrip()
    lead = shown[: len(shown) - len(body)]
    core = body.rstrip()
    trail = body[len(core) :]
    number = _MD_LIST_NUMBER.match(core)
    if core[:1] in _MD_BLOCK_SIGN:
        core = "\\" + core
    elif number and number.end() == len(core):
        core = f"&#{ord(core[0])};" + core[1:]
    elif number and core[number.end()] in ".)":
        core = core[: number.end()] + "\\" + core[number.end() :]
    return "".join(f"&#{ord(ch)};" for ch in lead) + core + "".join(f"&#{ord(ch)};" for ch in trail)


def md_code(text: str, *, table: bool = False) -> str:
    """``text`` as one inline code span: nothing in it renders (HTML, mentions,
    emphasis). The fence is longer than any backtick run in ``text``; in a table
    cell (``table``) a ``|`` is written ``\\|`` so it cannot end the cell."""
    flat = "".join(" " if ch in "\r\n\u2028\u2029\x85" else ch for ch in text)
    flat = _visible(flat, lambda ch: _unsafe_on_screen(ch) or _html_forbidden(ch))
    if table:
        flat = flat.replace("|", "\\|")
    longest = max((len(run) for run in re.findall("`+", flat)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if flat.startswith(("`", " ")) or flat.endswith(("`", " ")) or not flat else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


def md_fence(text: str, info: str = "") -> str:
    """``text`` (several lines) as a fenced code block no line of it can close."""
    body = _visible(text, lambda ch: ch != "\n" and (_unsafe_on_screen(ch) or _html_forbidden(ch)))
    longest = max((len(run) for run in re.findall("`{3,}", body)), default=2)
    fence = "`" * (longest + 1)
    return f"{fence}{info}\n{body}\n{fence}"


# -- XML (JUnit) -----------------------------------------------------------------------


def xml_text(text: str) -> str:
    """``text`` with the characters XML 1.0 forbids (C0 controls but tab and line
    breaks, lone surrogates, U+FFFE/U+FFFF), and those every medium shows as escapes
    (DEL and C1 controls, format characters), shown as escapes; the XML writer
    escapes ``< > &`` and quotes itself."""
    return _visible(text, lambda ch: _xml_forbidden(ch) or _disguising(ch))


# -- GitHub workflow commands ------------------------------------------------------------


def github_data(text: str) -> str:
    """The message of ``::error ...::message``: ``%``, CR and LF percent-encoded, so
    data can neither end the command nor start a second one on a new line; other
    control characters shown as on a terminal (the log renders ANSI sequences)."""
    return terminal(text, keep="\r\n").replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def github_property(text: str) -> str:
    """A property value (``file=``, ``title=``): also ``:`` and ``,`` encoded."""
    return github_data(text).replace(":", "%3A").replace(",", "%2C")
