"""One escaping function per output medium: text strangers wrote never becomes markup.

forktool prints text it did not write (commit subjects, PR titles, author names,
patch headers and file names) into seven media. The rule is the same in each: data
is shown as the characters it holds, and only what forktool writes is markup. Every
renderer of a medium calls that medium's function here, and no other:

- terminal: :func:`terminal` (control characters and escape sequences are shown as
  ``\\x1b``, never sent; rich markup is switched off in forktool's consoles);
- HTML: :func:`html_text`, and :func:`script_json` for JSON inside ``<script>``;
- markdown: :func:`md_text` for prose, :func:`md_code` for a code span,
  :func:`md_fence` for a block of lines;
- XML (JUnit): :func:`xml_text`;
- GitHub workflow commands: :func:`github_data` and :func:`github_property`;
- FORK.md's record cells: ``model/record.py`` (its cells must also read back).

Only the standard library here: the CLI imports this at start-up.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from typing import Any

# Characters that reorder what follows on screen (bidirectional overrides and
# isolates): shown, never sent, like control characters.
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _shown(ch: str) -> str:
    """``ch`` as an escape a reader can see: ``\\x1b``, ``\\n``, ``\\u202e``."""
    return ch.encode("unicode_escape").decode("ascii")


def _unsafe_on_screen(ch: str) -> bool:
    return ch in _BIDI or unicodedata.category(ch) in ("Cc", "Zl", "Zp", "Cs")


def terminal(text: str, *, keep: str = "") -> str:
    """``text`` for a terminal: control characters (ESC of an ANSI CSI or OSC 8
    sequence, BEL, CR, line breaks), bidirectional overrides and lone surrogates
    shown as escapes; the characters in ``keep`` (``"\\n"`` for a text that is
    several lines on purpose) pass as they are."""
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
    DEL and C1 controls, lone surrogates) shown as escapes."""
    import html

    return html.escape(_visible(text, _html_forbidden), quote=True)


def _html_forbidden(ch: str) -> bool:
    return _xml_forbidden(ch) or 0x7F <= ord(ch) <= 0x9F


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


# What starts a block when it opens a line (a list item's text is such a line): a sign,
# or up to nine digits then a '.' or ')'. The '.' or ')' may come from the text or from
# whatever the caller writes right after it ("- " + md_text("1") + "." is an ordered
# list), so text that is all digits gets its first digit as a character reference.
_MD_BLOCK_SIGN = frozenset("-+>=")
_MD_LIST_NUMBER = re.compile(r"[0-9]{1,9}")


def md_text(text: str) -> str:
    """``text`` as literal markdown prose on one line (a table cell, a list item):
    markdown syntax backslash-escaped, ``< > &`` as entities (no raw HTML, no
    image, no link from data), ``@`` kept from mentioning, line breaks as spaces,
    whitespace at either end (which markdown trims, no-break spaces included) as
    character references, so it shows as itself and opens no block."""
    shown = "".join(_md_char(ch) for ch in text)
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
    breaks, lone surrogates, U+FFFE/U+FFFF) shown as escapes; the XML writer
    escapes ``< > &`` and quotes itself."""
    return _visible(text, _xml_forbidden)


# -- GitHub workflow commands ------------------------------------------------------------


def github_data(text: str) -> str:
    """The message of ``::error ...::message``: ``%``, CR and LF percent-encoded, so
    data can neither end the command nor start a second one on a new line; other
    control characters shown as on a terminal (the log renders ANSI sequences)."""
    return terminal(text, keep="\r\n").replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def github_property(text: str) -> str:
    """A property value (``file=``, ``title=``): also ``:`` and ``,`` encoded."""
    return github_data(text).replace(":", "%3A").replace(",", "%2C")
