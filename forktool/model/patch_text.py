"""The lines and names of a patch file: CR LF lines, preamble and signature lines,
C-quoted names, ``---``/``+++`` name fields with timestamps, the two names of a
``diff --git`` line, RFC 2047 words and mail header fields, which line may come next in
a hunk body; a file's bytes as lines (:func:`split_lines`) and the outline of its file
diffs (:func:`diff_outline`)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from forktool.model import paths
from forktool.model.patchfile import ENCODING, ERRORS

# GNU diff separates the name from the timestamp with a tab; some tools use spaces.
_TIMESTAMP = re.compile(
    r"[ \t]+[0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?"
    r"(?: ?[+-][0-9]{4})?$"
)

# diff_outline: a rename or copy line of a diff's header names a path.
_GIT_RENAME_LINE = re.compile(rb"^(?:rename|copy) (?:from|to) ([^\n]*?)\r?$", re.MULTILINE)


_C_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


_OCTAL = re.compile(r"[0-3][0-7]{2}")


NOTHING_UNDER = (
    "'{}' has a 'diff --git' header and no change under it (its hunks removed by hand?): "
    "git refuses the patch ('only garbage'), GNU patch skips the header; delete the "
    "header's lines"
)
CONTENT_CUT = (
    "'{}' is created with the content its index line names ({}), but no hunk under it "
    "(cut by hand?): git creates the file empty, GNU patch as dpkg-source runs it (-E) "
    "not at all; give it its hunk back, or delete the header's lines"
)
# The empty blob's id (SHA-1, SHA-256): what an index line names for an empty file.
EMPTY_BLOBS = (
    "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391",
    "473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813",
)


# Extended header lines git writes between ``diff --git`` and ``---``.
GIT_EXTENDED = (
    "old mode ",
    "new mode ",
    "deleted file mode ",
    "new file mode ",
    "similarity index ",
    "dissimilarity index ",
    "rename from ",
    "rename to ",
    "copy from ",
    "copy to ",
    "index ",
)


def bare(line: str) -> str:
    """The line without a trailing CR, for recognising structure in CR LF patches."""
    return line[:-1] if line.endswith("\r") else line


def is_blank(line: str) -> bool:
    return bare(line).strip() == ""


def is_preamble(line: str) -> bool:
    """Lines plain diff tools write just before ``---``: ``Index:``, ``diff -u``, ``====``."""
    text = bare(line)
    if text.startswith("Index: "):
        return True
    if text.startswith("diff ") and not text.startswith("diff --git "):
        return True
    return len(text) >= 3 and set(text) == {"="}


def is_signature(line: str, after: str | None = None) -> bool:
    """A mail signature's separator (``-- ``), or topgit's footer (``---`` followed by
    its ``tg:`` line, ``after``)."""
    text = bare(line)
    return text in ("-- ", "--") or (
        text == "---" and after is not None and bare(after).startswith("tg: ")
    )


# What may sit between two file diffs besides blank lines: a commit's header (its message
# follows; ``git log -p``), a submodule's header (``git diff --submodule=diff``), or the
# end of one mail and the next one's header (``format-patch --stdout`` of several
# commits: a "-- " signature, then "From <sha> Mon Sep 17 00:00:00 2001"; with
# ``--no-signature``, as Debian's dovecot ships its CVE series, the "From" line alone).
_BETWEEN_DIFFS = re.compile(
    r"commit [0-9a-f]{40}(?:[0-9a-f]{24})?(?: \(.*\))?"
    r"|Submodule \S.* [0-9a-f]{7,64}\.\.\.?[0-9a-f]{7,64}.*:"
)
_NEXT_MAIL = re.compile(r"From [0-9a-f]{40}(?:[0-9a-f]{24})? Mon Sep 17 00:00:00 2001")


def starts_next_part(gap: Sequence[str], at: int) -> bool:
    """Whether the lines between two file diffs, from ``gap[at]`` (their first that is
    not blank) on, are a patch's own structure (see above), not stray text."""
    text = bare(gap[at])
    if _BETWEEN_DIFFS.fullmatch(text) or _NEXT_MAIL.fullmatch(text):
        return True
    return text in ("-- ", "--") and any(_NEXT_MAIL.fullmatch(bare(line)) for line in gap[at:])


def unquote(text: str) -> tuple[str, int] | None:
    """A C-quoted name as git writes it (``"a/sp ace\\tx"``, octal bytes) and its end."""
    out = bytearray()
    index = 1
    while index < len(text):
        char = text[index]
        if char == '"':
            return out.decode(ENCODING, ERRORS), index + 1
        if char != "\\":
            out += char.encode(ENCODING, ERRORS)
            index += 1
            continue
        escape = text[index + 1 : index + 2]
        if escape in _C_ESCAPES:
            out.append(_C_ESCAPES[escape])
            index += 2
        elif _OCTAL.fullmatch(text[index + 1 : index + 4]):
            out.append(int(text[index + 1 : index + 4], 8))
            index += 4
        else:
            return None
    return None


def name_field(field_text: str) -> str | None:
    """The file name in a ``---``/``+++`` line's field, without any timestamp."""
    if field_text.startswith('"'):
        unquoted = unquote(field_text)
        return None if unquoted is None else unquoted[0]
    if "\t" in field_text:
        return field_text.split("\t", 1)[0]
    if " " not in field_text:  # no room for a timestamp: the common case
        return field_text
    return _TIMESTAMP.sub("", field_text)


def spaced_name(field_text: str, name: str) -> str | None:
    """Why a ``---``/``+++`` name the two appliers read apart is malformed: a name with a
    space and no tab after it (nor quotes) is read whole by git, but by GNU patch (so
    quilt and dpkg-source) only up to the space (python3.11's ``frame_dealloc-crash.diff``
    and its ``Misc/NEWS.d/next/Core and Builtins/...``). None when they agree."""
    if " " not in name or "\t" in field_text or field_text.startswith('"'):
        return None
    return (
        f"'{name}': a name with a space and no tab after it: git reads it whole, GNU patch "
        f"(so quilt and dpkg-source) only up to the space ('{name.split(' ', 1)[0]}'); end "
        "the name with a tab, or quote it"
    )


def split_git_names(rest: str, strip: int) -> tuple[str, str] | None:
    """The two names of a ``diff --git`` line, quoted or not.

    Unquoted names may contain spaces, so the split is the one that leaves the
    same name on both sides after stripping, as git itself decides.
    """
    if rest.startswith('"'):
        first = unquote(rest)
        if first is None or rest[first[1] : first[1] + 1] != " ":
            return None
        second = rest[first[1] + 1 :]
        return _with_second(first[0], second)
    quoted_at = rest.find(' "')
    if quoted_at != -1:
        return _with_second(rest[:quoted_at], rest[quoted_at + 1 :])
    if rest.count(" ") == 1:  # the common case: one split, whatever the names
        old, _, new = rest.partition(" ")
        return old, new
    spaces = [i for i, char in enumerate(rest) if char == " "]
    for i in spaces:
        old, new = rest[:i], rest[i + 1 :]
        if paths.strip_components(old, strip) == paths.strip_components(new, strip):
            return old, new
    if len(spaces) == 1:
        return rest[: spaces[0]], rest[spaces[0] + 1 :]
    return None


def _with_second(first: str, second: str) -> tuple[str, str] | None:
    if not second.startswith('"'):
        return first, second
    unquoted = unquote(second)
    if unquoted is None or unquoted[1] != len(second):
        return None
    return first, unquoted[0]


def shown_name(names: Sequence[str | None], strip: int, fallback: str) -> str:
    """How a file diff is named in messages: its first name that is not ``/dev/null``."""
    for name in names:
        if name is not None and not paths.is_dev_null(name):
            return paths.strip_components(name, strip) or name
    return fallback


def names_disagree(
    git_names: tuple[str, str] | None,
    minus: str | None,
    plus: str | None,
    strip: int,
    moves: tuple[str | None, str | None, str | None, str | None] = (None, None, None, None),
) -> str | None:
    """Why a ``diff --git`` file diff means one thing to git and another to GNU patch:
    its ``---`` or ``+++`` line names another file than its ``diff --git`` line with no
    rename or copy line saying so (git reads a rename the patch never states; GNU patch,
    so quilt and dpkg-source, patches whichever of the names exists), or a rename or
    copy line (``moves``: rename from, rename to, copy from, copy to) names another file
    than the ``diff --git`` line (git refuses the patch, GNU patch follows the rename
    line: qemu's v7.2.13.diff). None when the names agree (a ``/dev/null`` side aside)."""
    if git_names is None:
        return None
    if any(moves):
        return _moves_disagree(git_names, moves, strip)
    for side, mark, named in ((0, "---", minus), (1, "+++", plus)):
        if named is None or paths.is_dev_null(named):
            continue
        if paths.strip_components(named, strip) != paths.strip_components(git_names[side], strip):
            return (
                f"its '{mark} {named}' line names another file than its 'diff --git' line "
                f"({git_names[side]}) and no rename line says so: git reads a rename, GNU "
                "patch patches whichever name exists; make the names agree"
            )
    return None


def _moves_disagree(
    git_names: tuple[str, str],
    moves: tuple[str | None, str | None, str | None, str | None],
    strip: int,
) -> str | None:
    rename_from, rename_to, copy_from, copy_to = moves
    for side, kind, named in (
        (0, "from", rename_from or copy_from),
        (1, "to", rename_to or copy_to),
    ):
        said = paths.strip_components(git_names[side], strip)
        if named is not None and said is not None and named != said:
            what = "rename" if (rename_from or rename_to) else "copy"
            return (
                f"its '{what} {kind} {named}' line names another file than its 'diff --git' "
                f"line ({git_names[side]}): git refuses the patch, GNU patch follows the "
                f"{what} line; make the names agree"
            )
    return None


def decode_rfc2047(value: str) -> str:
    """A header value with ``=?UTF-8?q?...?=`` words decoded (format-patch writes them)."""
    if "=?" not in value:
        return value
    from email.errors import HeaderParseError  # only for an encoded word: keeps start-up lean
    from email.header import decode_header, make_header

    try:
        return str(make_header(decode_header(value)))
    except (HeaderParseError, UnicodeError, LookupError, ValueError):
        return value


def trimmed(lines: Sequence[str]) -> str:
    """Lines joined, without leading and trailing blank lines."""
    text = [bare(line) for line in lines]
    while text and not text[-1].strip():
        text.pop()
    while text and not text[0].strip():
        text.pop(0)
    return "\n".join(text)


class Cursor:
    """A position in the patch's lines; ``number`` is the 1-based line number."""

    def __init__(self, lines: Sequence[str]) -> None:
        self.lines = lines
        self.pos = 0

    @property
    def at_end(self) -> bool:
        return self.pos >= len(self.lines)

    @property
    def number(self) -> int:
        return self.pos + 1

    def peek(self, ahead: int = 0) -> str | None:
        """The line ``ahead`` lines on, CR removed, or None past the end."""
        index = self.pos + ahead
        if index >= len(self.lines):
            return None
        line = self.lines[index]
        return line[:-1] if line.endswith("\r") else line  # bare(), inline: the hot path

    def take(self) -> str:
        line = self.lines[self.pos]
        self.pos += 1
        return line


def rfc822_fields(lines: Sequence[str]) -> tuple[dict[str, str], int]:
    """Mail headers after ``From <sha>`` (folded lines joined) and where the body starts."""
    fields: dict[str, str] = {}
    last: str | None = None
    index = 1
    while index < len(lines):
        text = bare(lines[index])
        if text == "":
            return fields, index + 1
        if text[0] in " \t" and last is not None:
            fields[last] += " " + text.strip()
        elif ":" in text:
            key, _, value = text.partition(":")
            # The first of repeated fields wins; its continuation lines go with it.
            last = key.strip().lower() if key.strip().lower() not in fields else None
            if last is not None:
                fields[last] = value.strip()
        else:
            break
        index += 1
    return fields, index


def body_misfit(kind: str, old_left: int, new_left: int) -> str | None:
    """Why a hunk body line cannot come next, or None if it fits the counts."""
    if kind == "\\":
        return None
    if kind not in " -+":
        return (
            "line does not start with ' ', '-', '+' or '\\' while "
            f"{old_left} old and {new_left} new lines are still expected"
        )
    if kind == " " and (old_left == 0 or new_left == 0):
        return "more context lines than the header counts"
    if kind == "-" and old_left == 0:
        return "more removed lines than the header counts"
    if kind == "+" and new_left == 0:
        return "more added lines than the header counts"
    return None


def split_lines(data: bytes) -> tuple[list[str], bool]:
    """A patch file's lines (decoded, without their ``\\n``), and whether the file ends
    with a newline. The whole file is decoded at once: with surrogateescape, UTF-8
    decodes a line the same whether alone or in its file (a ``\\n`` byte is never part
    of a multi-byte sequence, so no sequence spans two lines)."""
    lines = data.decode(ENCODING, ERRORS).split("\n")
    newline_at_eof = lines[-1] == ""
    if newline_at_eof:
        lines.pop()
    return lines, newline_at_eof


def diff_outline(data: bytes, *, strip: int = 1) -> tuple[tuple[int, tuple[str, ...]], ...] | None:
    """Where each file diff of a patch in git's format starts (its 1-based line) and
    the paths it names, read from its ``diff --git`` and rename/copy lines alone: a
    byte search, not a parse. None when a name is quoted or a ``diff --git`` line
    cannot be split.

    The outline is a guess about the parse (a patch may hold diffs in another format,
    or a preamble): whoever acts on it checks it against :func:`parse_patch`'s files
    (the same first lines, no path the outline lacks) before trusting the result."""
    found = diff_git_lines(data)
    starts = [begin for _, begin in found]
    outline: list[tuple[int, tuple[str, ...]]] = []
    for number, (line, begin) in enumerate(found):
        eol = data.find(b"\n", begin)
        eol = len(data) if eol == -1 else eol
        rest = data[begin + len(b"diff --git ") : eol].decode(ENCODING, ERRORS).removesuffix("\r")
        names = None if '"' in rest else split_git_names(rest, strip)
        if names is None:
            return None
        touched = {p for p in (paths.strip_components(name, strip) for name in names) if p}
        end = starts[number + 1] if number + 1 < len(starts) else len(data)
        hunks = data.find(b"\n@@ ", eol, end)
        header = data[eol : end if hunks == -1 else hunks]
        if b"\nrename " in header or b"\ncopy " in header:
            for renamed in _GIT_RENAME_LINE.finditer(header):
                name = renamed.group(1).decode(ENCODING, ERRORS)
                if name.startswith('"'):
                    return None
                touched.add(name)
        outline.append((line, tuple(sorted(touched))))
    return tuple(outline)


def diff_git_lines(data: bytes) -> list[tuple[int, int]]:
    """Every ``diff --git`` line of a patch: its 1-based line and its byte offset."""
    starts = [at + 1 for at in _find_all(data, b"\ndiff --git ")]
    if data.startswith(b"diff --git "):
        starts.insert(0, 0)
    found = []
    line, counted = 1, 0
    for begin in starts:
        line += data.count(b"\n", counted, begin)
        counted = begin
        found.append((line, begin))
    return found


def _find_all(data: bytes, needle: bytes) -> list[int]:
    found = []
    at = data.find(needle)
    while at != -1:
        found.append(at)
        at = data.find(needle, at + 1)
    return found
