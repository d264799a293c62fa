"""One patch file as data: header, trailers, file diffs and hunks, parsed without git.

Two header styles are read: ``git format-patch`` mbox output (``From <sha> ...``,
RFC 822 headers, message, ``---``, diffstat) and plain diffs with free leading
text (``# Upstream-PR: ...`` comment lines, DEP-3 fields). Diffs are git diffs
(``diff --git`` with extended headers, binary patches) or plain unified diffs
(``Index:``/``diff -u`` preambles, ``--- old<TAB>timestamp``).

Patch files are bytes, not text: lines are decoded with ``surrogateescape`` and
every line is kept verbatim somewhere in the result, so ``format_patch`` gives
back the exact input bytes. Parsing never raises on bad input; what is wrong is
returned as problems with the patch line that shows it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from forktool.model import paths

ProblemKind = Literal["malformed", "unsafe"]
HeaderStyle = Literal["mbox", "plain"]

UPSTREAM_PR = "Upstream-PR"
UPSTREAM_MERGE = "Upstream-Merge"
EXIT_CRITERION = "Exit-Criterion"
TRAILER_KEYS = (UPSTREAM_PR, UPSTREAM_MERGE, EXIT_CRITERION)
_CANONICAL_KEY = {key.lower(): key for key in TRAILER_KEYS}

ENCODING = "utf-8"
ERRORS = "surrogateescape"

# [0-9] rather than \d: \d also matches non-ASCII digits, which no diff tool writes.
_MBOX_FROM = re.compile(r"^From ([0-9a-fA-F]{40}) ")
_PATCH_TAG = re.compile(r"^\[PATCH[^\]]*\]\s*", re.IGNORECASE)
_TRAILER = re.compile(
    r"^(upstream-pr|upstream-merge|exit-criterion)[ \t]*:[ \t]*(.*?)[ \t]*$", re.IGNORECASE
)
_DEP3_SUBJECT = re.compile(r"^(?:# )?(?:Description|Subject):[ \t]*(.*?)[ \t]*$")
_DEP3_AUTHOR = re.compile(r"^(?:# )?(?:Author|From):[ \t]*(.*?)[ \t]*$")
_SHA = re.compile(r"^[0-9a-fA-F]{40}$")
# diff_outline: a rename or copy line of a diff's header names a path.
_GIT_RENAME_LINE = re.compile(rb"^(?:rename|copy) (?:from|to) ([^\n]*?)\r?$", re.MULTILINE)
# A character of Parser.kinds() that no hunk body line has.
_NOT_BODY = re.compile(r"[^ +\\\-]")
_HUNK = re.compile(r"^@@ -([0-9]+)(?:,([0-9]+))? \+([0-9]+)(?:,([0-9]+))? @@(.*)$")
_INDEX = re.compile(r"^index [0-9a-fA-F]+\.\.[0-9a-fA-F]+(?: ([0-7]{6}))?$")
_BINARY_DIFFER = re.compile(r"^Binary files (.+) and (.+) differ$")
_BINARY_BLOCK = re.compile(r"^(?:literal|delta) [0-9]+$")
# GNU diff separates the name from the timestamp with a tab; some tools use spaces.
_TIMESTAMP = re.compile(
    r"[ \t]+[0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?"
    r"(?: ?[+-][0-9]{4})?$"
)
_C_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}
_OCTAL = re.compile(r"[0-3][0-7]{2}")

# Extended header lines git writes between ``diff --git`` and ``---``.
_GIT_EXTENDED = (
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
SYMLINK_MODE = "120000"


@dataclass(frozen=True)
class PatchProblem:
    kind: ProblemKind
    message: str
    line: int | None  # 1-based line in the patch file


@dataclass(frozen=True)
class Trailer:
    key: str  # canonical spelling, e.g. "Upstream-PR"
    value: str  # as written, surrounding blanks removed
    line: int


@dataclass(frozen=True)
class Hunk:
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    section: str  # text after the closing "@@", e.g. a function name
    line: int  # 1-based line of the "@@" header
    lines: tuple[str, ...]  # body lines as decoded text without the newline
    header: str = ""  # the "@@" line as written, so formatting is exact


@dataclass(frozen=True)
class FileDiff:
    old_path: str | None  # stripped; None for a created file
    new_path: str | None  # stripped; None for a deleted file
    raw_old: str  # as written (unquoted), e.g. "a/src/x.py" or "/dev/null"
    raw_new: str
    old_mode: str | None
    new_mode: str | None
    is_new: bool
    is_deleted: bool
    is_rename: bool
    is_copy: bool
    is_binary: bool
    is_symlink: bool
    line: int  # 1-based line where this file's diff starts
    hunks: tuple[Hunk, ...]
    header_lines: tuple[str, ...]  # every line before the first hunk, as written

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or self.raw_new


@dataclass(frozen=True)
class PatchHeader:
    style: HeaderStyle
    from_sha: str | None
    author: str | None
    date: str | None
    subject: str | None
    message: str
    trailers: tuple[Trailer, ...]
    lines: tuple[str, ...]  # every line before the first diff, as written

    def trailer(self, key: str) -> Trailer | None:
        """The first trailer named ``key`` (case-insensitive), or None."""
        wanted = key.lower()
        return next((t for t in self.trailers if t.key.lower() == wanted), None)


@dataclass(frozen=True)
class PatchFile:
    header: PatchHeader
    files: tuple[FileDiff, ...]
    trailer_lines: tuple[str, ...]  # signature and blank lines after the last diff
    problems: tuple[PatchProblem, ...]
    newline_at_eof: bool

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def empty(self) -> bool:
        """A 0-byte patch file: quilt and dpkg-source apply it as a no-op, and so does
        every forktool command (with a notice)."""
        return not self.files and not self.header.lines and not self.problems

    @property
    def unsafe(self) -> bool:
        return any(p.kind == "unsafe" for p in self.problems)

    @property
    def malformed(self) -> bool:
        return any(p.kind == "malformed" for p in self.problems)

    def upstream_merge(self) -> tuple[str, ...] | None:
        """Lowercase commits of the Upstream-Merge trailer; () for 'none'.

        None when there is no trailer, or when it is malformed (that is a problem).
        """
        trailer = self.header.trailer(UPSTREAM_MERGE)
        return None if trailer is None else parse_upstream_merge(trailer.value)


def parse_upstream_merge(value: str) -> tuple[str, ...] | None:
    """Commits named by an Upstream-Merge value, lowercase; () for 'none'; None if invalid."""
    if value.lower() == "none":
        return ()
    commits = [part.strip() for part in value.split(",")]
    if not all(_SHA.match(commit) for commit in commits):
        return None
    return tuple(dict.fromkeys(commit.lower() for commit in commits))


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


def parse_patch(data: bytes, *, strip: int = 1) -> PatchFile:
    """Parse one patch file; problems are returned, never raised."""
    text, newline_at_eof = split_lines(data)
    return _Parser(text, strip).parse(newline_at_eof)


def diff_outline(data: bytes, *, strip: int = 1) -> tuple[tuple[int, tuple[str, ...]], ...] | None:
    """Where each file diff of a patch in git's format starts (its 1-based line) and
    the paths it names, read from its ``diff --git`` and rename/copy lines alone: a
    byte search, not a parse. None when a name is quoted or a ``diff --git`` line
    cannot be split.

    The outline is a guess about the parse (a patch may hold diffs in another format,
    or a preamble): whoever acts on it checks it against :func:`parse_patch`'s files
    (the same first lines, no path the outline lacks) before trusting the result."""
    starts = [at + 1 for at in _find_all(data, b"\ndiff --git ")]
    if data.startswith(b"diff --git "):
        starts.insert(0, 0)
    outline: list[tuple[int, tuple[str, ...]]] = []
    line, counted = 1, 0
    for number, begin in enumerate(starts):
        line += data.count(b"\n", counted, begin)
        counted = begin
        eol = data.find(b"\n", begin)
        eol = len(data) if eol == -1 else eol
        rest = data[begin + len(b"diff --git ") : eol].decode(ENCODING, ERRORS).removesuffix("\r")
        names = None if '"' in rest else _split_git_names(rest, strip)
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


def _find_all(data: bytes, needle: bytes) -> list[int]:
    found = []
    at = data.find(needle)
    while at != -1:
        found.append(at)
        at = data.find(needle, at + 1)
    return found


def parse_header(data: bytes, *, strip: int = 1) -> PatchHeader:
    """``parse_patch(data).header``, without reading the diffs."""
    text, _ = split_lines(data)
    parser = _Parser(text, strip)
    first = parser.next_diff(0)
    return parser.parse_header(text[: len(text) if first is None else first])


def format_patch(patch: PatchFile) -> bytes:
    """The patch's bytes: the exact inverse of ``parse_patch``."""
    lines: list[str] = list(patch.header.lines)
    for diff in patch.files:
        lines += diff.header_lines
        for hunk in diff.hunks:
            lines.append(hunk.header)
            lines += hunk.lines
    lines += patch.trailer_lines
    out = "".join(line + "\n" for line in lines)
    if not patch.newline_at_eof and out:
        out = out[:-1]
    return out.encode(ENCODING, ERRORS)


def touched_paths(patch: PatchFile) -> list[str]:
    """Every stripped path the patch reads or writes (both sides of a rename), in order."""
    seen: dict[str, None] = {}
    for diff in patch.files:
        for path in (diff.old_path, diff.new_path):
            if path is not None:
                seen.setdefault(path)
    return list(seen)


# --- lines and names -------------------------------------------------------------


def _bare(line: str) -> str:
    """The line without a trailing CR, for recognising structure in CR LF patches."""
    return line[:-1] if line.endswith("\r") else line


def _is_blank(line: str) -> bool:
    return _bare(line).strip() == ""


def _is_preamble(line: str) -> bool:
    """Lines plain diff tools write just before ``---``: ``Index:``, ``diff -u``, ``====``."""
    text = _bare(line)
    if text.startswith("Index: "):
        return True
    if text.startswith("diff ") and not text.startswith("diff --git "):
        return True
    return len(text) >= 3 and set(text) == {"="}


def _is_signature(line: str) -> bool:
    return _bare(line) in ("-- ", "--")


def _unquote(text: str) -> tuple[str, int] | None:
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


def _name_field(field_text: str) -> str | None:
    """The file name in a ``---``/``+++`` line's field, without any timestamp."""
    if field_text.startswith('"'):
        unquoted = _unquote(field_text)
        return None if unquoted is None else unquoted[0]
    if "\t" in field_text:
        return field_text.split("\t", 1)[0]
    return _TIMESTAMP.sub("", field_text)


def _split_git_names(rest: str, strip: int) -> tuple[str, str] | None:
    """The two names of a ``diff --git`` line, quoted or not.

    Unquoted names may contain spaces, so the split is the one that leaves the
    same name on both sides after stripping, as git itself decides.
    """
    if rest.startswith('"'):
        first = _unquote(rest)
        if first is None or rest[first[1] : first[1] + 1] != " ":
            return None
        second = rest[first[1] + 1 :]
        return _with_second(first[0], second)
    quoted_at = rest.find(' "')
    if quoted_at != -1:
        return _with_second(rest[:quoted_at], rest[quoted_at + 1 :])
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
    unquoted = _unquote(second)
    if unquoted is None or unquoted[1] != len(second):
        return None
    return first, unquoted[0]


def _decode_rfc2047(value: str) -> str:
    """A header value with ``=?UTF-8?q?...?=`` words decoded (format-patch writes them)."""
    if "=?" not in value:
        return value
    from email.errors import HeaderParseError  # only for an encoded word: keeps start-up lean
    from email.header import decode_header, make_header

    try:
        return str(make_header(decode_header(value)))
    except (HeaderParseError, UnicodeError, LookupError, ValueError):
        return value


def _trimmed(lines: Sequence[str]) -> str:
    """Lines joined, without leading and trailing blank lines."""
    text = [_bare(line) for line in lines]
    while text and not text[-1].strip():
        text.pop()
    while text and not text[0].strip():
        text.pop(0)
    return "\n".join(text)


# --- the parser -------------------------------------------------------------------


class _Cursor:
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
        return _bare(self.lines[index]) if index < len(self.lines) else None

    def take(self) -> str:
        line = self.lines[self.pos]
        self.pos += 1
        return line


@dataclass
class _FileBuilder:
    """What is known about one file diff while its lines are read."""

    line: int  # where the diff itself starts, after any separator lines carried in front
    label: str = ""
    header_lines: list[str] = field(default_factory=list)
    hunks: list[Hunk] = field(default_factory=list)
    git_names: tuple[str, str] | None = None
    minus: str | None = None  # name from "---" (or a plain "Binary files" line)
    plus: str | None = None
    rename_from: str | None = None
    rename_to: str | None = None
    copy_from: str | None = None
    copy_to: str | None = None
    old_mode: str | None = None
    new_mode: str | None = None
    index_mode: str | None = None
    is_new: bool = False
    is_deleted: bool = False
    is_binary: bool = False
    reported: bool = False  # a malformed problem was reported; don't pile on
    unsafe_reasons: set[str] = field(default_factory=set)

    def raw_old(self) -> str:
        if self.minus is not None:
            return self.minus
        return self.git_names[0] if self.git_names else ""

    def raw_new(self) -> str:
        if self.plus is not None:
            return self.plus
        return self.git_names[1] if self.git_names else ""


class _Parser:
    def __init__(self, lines: Sequence[str], strip: int) -> None:
        self.lines = lines
        self.strip = strip
        self.cursor = _Cursor(lines)
        self.problems: list[PatchProblem] = []
        self._kinds: str | None = None

    def malformed(self, message: str, line: int | None) -> None:
        self.problems.append(PatchProblem("malformed", message, line))

    def parse(self, newline_at_eof: bool) -> PatchFile:
        first = self.next_diff(0)
        header = self.parse_header(self.lines[: len(self.lines) if first is None else first])
        files: list[FileDiff] = []
        trailer_lines: tuple[str, ...] = ()
        if first is None and self.lines:  # 0 bytes: an empty patch, a no-op for quilt
            self.malformed("contains no diff", None)
        self.cursor.pos = len(self.lines) if first is None else first
        gap: list[str] = []
        while not self.cursor.at_end:
            before = self.cursor.pos
            diff, reported = self.parse_file(gap)
            if self.cursor.pos == before:
                raise RuntimeError(f"patch parser made no progress at line {before + 1}")
            files.append(diff)
            gap = self.gap_after(diff, reported)
            if self.cursor.at_end:
                trailer_lines = tuple(gap)
        problems = sorted(self.problems, key=lambda p: p.line or 0)
        return PatchFile(header, tuple(files), trailer_lines, tuple(problems), newline_at_eof)

    # -- where diffs start ---------------------------------------------------------

    def diff_starts_at(self, index: int) -> bool:
        text = _bare(self.lines[index])
        if text.startswith("diff --git "):
            return True
        if _BINARY_DIFFER.match(text):
            return True
        # Like git: "---" and "+++" only start a diff when a hunk follows, so a
        # "--- " line in a commit message is not mistaken for one.
        return (
            text.startswith("--- ")
            and index + 2 < len(self.lines)
            and _bare(self.lines[index + 1]).startswith("+++ ")
            and _bare(self.lines[index + 2]).startswith("@@ ")
        )

    def next_diff(self, start: int) -> int | None:
        """Index where the next file diff (its preamble included) starts, from ``start`` on."""
        for index in range(start, len(self.lines)):
            if self.diff_starts_at(index):
                while index > start and _is_preamble(self.lines[index - 1]):
                    index -= 1
                return index
        return None

    def gap_after(self, diff: FileDiff, reported: bool) -> list[str]:
        """Consume the lines between this file diff and the next one (or the end).

        Blank lines may separate diffs; after the last one only blank lines and a
        ``-- `` signature may follow. Anything else is text the apply tools would
        silently skip, so it is reported.
        """
        start = self.cursor.pos
        end = self.next_diff(start)
        stop = len(self.lines) if end is None else end
        gap = list(self.lines[start:stop])
        self.cursor.pos = stop
        for offset, line in enumerate(gap):
            if end is None and _is_signature(line):
                break
            if not _is_blank(line):
                if not reported:  # the line that broke the diff was named already
                    self.malformed(
                        f"unexpected text after the last hunk of '{diff.path}'", start + offset + 1
                    )
                break
        return gap

    # -- the header ----------------------------------------------------------------

    def parse_header(self, lines: Sequence[str]) -> PatchHeader:
        match = _MBOX_FROM.match(_bare(lines[0])) if lines else None
        if match is None:
            return self.plain_header(lines)
        fields, body_start = _rfc822_fields(lines)
        body_end = next(
            (i for i in range(body_start, len(lines)) if _bare(lines[i]) == "---"), len(lines)
        )
        subject = fields.get("subject")
        if subject is not None:
            subject = _PATCH_TAG.sub("", _decode_rfc2047(subject))
        author = fields.get("from")
        return PatchHeader(
            style="mbox",
            from_sha=match.group(1).lower(),
            author=None if author is None else _decode_rfc2047(author),
            date=fields.get("date"),
            subject=subject,
            message=_trimmed(lines[body_start:body_end]),
            trailers=self.trailers(lines, body_start),
            lines=tuple(lines),
        )

    def plain_header(self, lines: Sequence[str]) -> PatchHeader:
        subject = author = None
        for line in lines:
            if subject is None and (m := _DEP3_SUBJECT.match(_bare(line))):
                subject = m.group(1)
            if author is None and (m := _DEP3_AUTHOR.match(_bare(line))):
                author = m.group(1)
        return PatchHeader(
            style="plain",
            from_sha=None,
            author=author,
            date=None,
            subject=subject,
            message=_trimmed(lines),
            trailers=self.trailers(lines, 0),
            lines=tuple(lines),
        )

    def trailers(self, lines: Sequence[str], start: int) -> tuple[Trailer, ...]:
        found: list[Trailer] = []
        for index in range(start, len(lines)):
            text = _bare(lines[index])
            if text.startswith("# "):
                text = text[2:]
            match = _TRAILER.match(text)
            if match is None:
                continue
            trailer = Trailer(_CANONICAL_KEY[match.group(1).lower()], match.group(2), index + 1)
            self.check_trailer(trailer, found)
            found.append(trailer)
        return tuple(found)

    def check_trailer(self, trailer: Trailer, earlier: list[Trailer]) -> None:
        if trailer.value == "":
            self.malformed(f"empty {trailer.key} trailer", trailer.line)
            return
        if trailer.key != UPSTREAM_MERGE:
            return
        first = next((t for t in earlier if t.key == UPSTREAM_MERGE), None)
        if first is not None:
            message = f"second Upstream-Merge trailer (first on line {first.line})"
            self.malformed(message, trailer.line)
        elif parse_upstream_merge(trailer.value) is None:
            self.malformed(
                f"Upstream-Merge must be 40-hex commits or 'none', not '{trailer.value}'",
                trailer.line,
            )

    # -- one file diff -------------------------------------------------------------

    def parse_file(self, gap: list[str]) -> tuple[FileDiff, bool]:
        """One file diff from the cursor, and whether a malformed problem ended it early."""
        cursor = self.cursor
        builder = _FileBuilder(line=cursor.number, header_lines=list(gap))
        while (text := cursor.peek()) is not None and _is_preamble(text):
            self.read_preamble(builder)
        text = cursor.peek() or ""
        if text.startswith("diff --git "):
            self.read_git_line(builder)
            self.read_git_extended(builder)
        elif (binary := _BINARY_DIFFER.match(text)) is not None:
            builder.minus, builder.plus = binary.group(1), binary.group(2)
            builder.is_binary = True
            self.check_path(builder, builder.minus, cursor.number)
            self.check_path(builder, builder.plus, cursor.number)
            builder.header_lines.append(cursor.take())
        self.read_names(builder)
        self.read_hunks(builder)
        return self.finish(builder), builder.reported

    def read_preamble(self, builder: _FileBuilder) -> None:
        text = self.cursor.peek() or ""
        if text.startswith("Index: "):
            # Never stripped, but GNU patch may fall back to it: it must be safe too.
            reason = paths.check_relative_path(text[len("Index: ") :])
            self.unsafe(builder, reason, self.cursor.number)
        builder.header_lines.append(self.cursor.take())

    def read_git_line(self, builder: _FileBuilder) -> None:
        number = self.cursor.number
        text = self.cursor.peek() or ""
        builder.git_names = _split_git_names(text[len("diff --git ") :], self.strip)
        if builder.git_names is not None:
            builder.label = paths.strip_components(builder.git_names[1], self.strip) or ""
            for name in builder.git_names:
                self.check_path(builder, name, number)
        builder.header_lines.append(self.cursor.take())

    def read_git_extended(self, builder: _FileBuilder) -> None:
        cursor = self.cursor
        while (text := cursor.peek()) is not None:
            if text == "GIT binary patch":
                self.read_binary(builder)
                continue
            if _BINARY_DIFFER.match(text):
                builder.is_binary = True
            elif not text.startswith(_GIT_EXTENDED):
                return
            self.read_extended(builder, text)
            builder.header_lines.append(cursor.take())

    def read_extended(self, builder: _FileBuilder, text: str) -> None:
        number = self.cursor.number
        key, _, value = text.partition(" ")
        if text.startswith(("rename from ", "rename to ", "copy from ", "copy to ")):
            kind, _, value = value.partition(" ")
            name = self.unquote_name(value, number)
            if name is None:
                return
            self.unsafe(builder, paths.check_relative_path(name), number)
            setattr(builder, f"{key}_{kind}", name)
        elif text.startswith("old mode "):
            builder.old_mode = value.partition(" ")[2]
        elif text.startswith("new mode "):
            builder.new_mode = value.partition(" ")[2]
        elif text.startswith("deleted file mode "):
            builder.is_deleted = True
            builder.old_mode = text[len("deleted file mode ") :]
        elif text.startswith("new file mode "):
            builder.is_new = True
            builder.new_mode = text[len("new file mode ") :]
        elif (index := _INDEX.match(text)) is not None:
            builder.index_mode = index.group(1)

    def read_binary(self, builder: _FileBuilder) -> None:
        """``GIT binary patch``: a forward and an optional reverse block, each ending blank."""
        cursor = self.cursor
        builder.is_binary = True
        start = cursor.number
        builder.header_lines.append(cursor.take())
        for block in range(2):
            if not _BINARY_BLOCK.match(cursor.peek() or ""):
                if block == 0:
                    self.report(builder, f"binary patch of '{builder.label}' has no data", start)
                return
            builder.header_lines.append(cursor.take())
            while (text := cursor.peek()) is not None and text != "":
                builder.header_lines.append(cursor.take())
            if text is None:
                self.report(builder, f"binary patch of '{builder.label}' is truncated", start)
                return
            builder.header_lines.append(cursor.take())

    def read_names(self, builder: _FileBuilder) -> None:
        cursor = self.cursor
        old, new = cursor.peek(), cursor.peek(1)
        if old is None or new is None or not old.startswith("--- ") or not new.startswith("+++ "):
            return
        for attr, text in (("minus", old), ("plus", new)):
            number = cursor.number
            name = self.unquote_name(text[4:], number, field_name=True)
            if name is not None:
                setattr(builder, attr, name)
                self.check_path(builder, name, number)
            builder.header_lines.append(cursor.take())
        builder.label = self.label(builder)
        if (cursor.peek() or "")[:2] != "@@" and not builder.is_binary:
            message = f"'{builder.label}' has '---'/'+++' lines but no hunk"
            self.report(builder, message, cursor.number - 1)

    def read_hunks(self, builder: _FileBuilder) -> None:
        while not builder.reported and (self.cursor.peek() or "").startswith("@@"):
            hunk = self.read_hunk(builder, len(builder.hunks) + 1)
            if hunk is None:
                return
            builder.hunks.append(hunk)

    def read_hunk(self, builder: _FileBuilder, number: int) -> Hunk | None:
        cursor = self.cursor
        where = f"hunk {number} of '{builder.label}'"
        start = cursor.number
        match = _HUNK.match(cursor.peek() or "")
        if match is None:
            self.report(builder, f"{where} has a malformed header", start)
            return None
        old_start, old_count, new_start, new_count = (
            int(group) if group is not None else 1 for group in match.group(1, 2, 3, 4)
        )
        header = cursor.take()
        length = self.body_length(cursor.pos, old_count, new_count)
        if length is not None:
            body = list(cursor.lines[cursor.pos : cursor.pos + length])
            cursor.pos += length
        else:
            body = self.read_body(builder, where, start, old_count, new_count)
        # "\ No newline at end of file" follows the line it qualifies.
        while (cursor.peek() or "").startswith("\\"):
            body.append(cursor.take())
        section = match.group(5)
        return Hunk(
            old_start=old_start,
            old_count=old_count,
            new_start=new_start,
            new_count=new_count,
            section=section[1:] if section.startswith(" ") else section,
            line=start,
            lines=tuple(body),
            header=header,
        )

    def kinds(self) -> str:
        """Each line's kind as a hunk body reads it, one character a line: its first
        character, a space for an empty line (an empty context line may lose its space;
        git accepts that, and so do we) and for a lone CR (so CR LF patch files count
        too)."""
        if self._kinds is None:
            self._kinds = "".join([(raw[:1] if raw != "\r" else "") or " " for raw in self.lines])
        return self._kinds

    def body_length(self, pos: int, old_count: int, new_count: int) -> int | None:
        """How many lines from ``pos`` make a hunk body of exactly these counts, read in
        bulk; None when the lines do not (:meth:`read_body` then says why).

        The body is the shortest run of lines whose context and removed lines number
        ``old_count`` and whose context and added lines number ``new_count``, every line
        a context, removed, added or ``\\`` line. Each line adds at most one to each
        count, so the run is at least as long as the larger shortfall: it grows by that
        until the counts meet, and a run that overshoots one count cannot be a body
        (line by line, the first line too many is a misfit)."""
        kinds = self.kinds()
        length = max(old_count, new_count)
        while True:
            stop = pos + length
            if stop > len(kinds):
                return None
            context = kinds.count(" ", pos, stop)
            old_short = old_count - context - kinds.count("-", pos, stop)
            new_short = new_count - context - kinds.count("+", pos, stop)
            if old_short < 0 or new_short < 0:
                return None
            if old_short == 0 and new_short == 0:
                break
            length += max(old_short, new_short)
        return None if _NOT_BODY.search(kinds, pos, pos + length) else length

    def read_body(
        self, builder: _FileBuilder, where: str, start: int, old_count: int, new_count: int
    ) -> list[str]:
        """A hunk body read line by line, reporting the first line that does not fit."""
        cursor = self.cursor
        body: list[str] = []
        old_left, new_left = old_count, new_count
        lines, pos, end = cursor.lines, cursor.pos, len(cursor.lines)
        while old_left > 0 or new_left > 0:
            if pos >= end:
                cursor.pos = pos
                self.report(
                    builder,
                    f"{where} is truncated: {old_left} old and {new_left} new lines missing",
                    start,
                )
                break
            raw = lines[pos]
            # An empty context line may lose its space (git accepts that, and so
            # do we); a lone CR counts as empty so CR LF patch files count too.
            kind = (raw[:1] if raw != "\r" else "") or " "
            if kind == " " and old_left and new_left:
                old_left -= 1
                new_left -= 1
            elif kind == "-" and old_left:
                old_left -= 1
            elif kind == "+" and new_left:
                new_left -= 1
            else:
                wrong = self.misfit(kind, old_left, new_left)
                if wrong is not None:
                    cursor.pos = pos
                    self.report(builder, f"{where}: {wrong}", cursor.number)
                    break
            body.append(raw)
            pos += 1
        else:
            cursor.pos = pos
        return body

    @staticmethod
    def misfit(kind: str, old_left: int, new_left: int) -> str | None:
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

    def finish(self, builder: _FileBuilder) -> FileDiff:
        raw_old, raw_new = builder.raw_old(), builder.raw_new()
        is_new = builder.is_new or paths.is_dev_null(raw_old)
        is_deleted = builder.is_deleted or paths.is_dev_null(raw_new)
        old_path = None if is_new else builder.rename_from or builder.copy_from
        new_path = None if is_deleted else builder.rename_to or builder.copy_to
        if old_path is None and not is_new:
            old_path = paths.strip_components(raw_old, self.strip)
        if new_path is None and not is_deleted:
            new_path = paths.strip_components(raw_new, self.strip)
        if not raw_old and not raw_new:
            self.report(builder, "cannot tell which file this diff changes", builder.line)
        elif old_path is None and new_path is None and not builder.unsafe_reasons:
            self.report(builder, "both sides of the diff are /dev/null", builder.line)
        old_mode = builder.old_mode or builder.index_mode
        new_mode = builder.new_mode or builder.index_mode
        return FileDiff(
            old_path=old_path,
            new_path=new_path,
            raw_old=raw_old,
            raw_new=raw_new,
            old_mode=old_mode,
            new_mode=new_mode,
            is_new=is_new,
            is_deleted=is_deleted,
            is_rename=builder.rename_from is not None or builder.rename_to is not None,
            is_copy=builder.copy_from is not None or builder.copy_to is not None,
            is_binary=builder.is_binary,
            is_symlink=SYMLINK_MODE in (old_mode, new_mode),
            line=builder.line,
            hunks=tuple(builder.hunks),
            header_lines=tuple(builder.header_lines),
        )

    # -- problems ------------------------------------------------------------------

    def label(self, builder: _FileBuilder) -> str:
        for name in (builder.plus, builder.minus):
            if name is not None and not paths.is_dev_null(name):
                return paths.strip_components(name, self.strip) or name
        return builder.label

    def unquote_name(self, text: str, number: int, *, field_name: bool = False) -> str | None:
        """A name from a header line, C-unquoted; ``field_name`` also drops a timestamp."""
        if field_name:
            name = _name_field(text)
        elif text.startswith('"'):
            unquoted = _unquote(text)
            name = None if unquoted is None or unquoted[1] != len(text) else unquoted[0]
        else:
            name = text
        if name is None:
            self.malformed("badly quoted file name", number)
        return name

    def check_path(self, builder: _FileBuilder, raw: str, number: int) -> None:
        self.unsafe(builder, paths.check_patch_path(raw, self.strip), number)

    def unsafe(self, builder: _FileBuilder, reason: str | None, number: int) -> None:
        # The same name usually appears on the diff --git, ---, and +++ lines:
        # report each reason once per file diff, at its first line.
        if reason is None or reason in builder.unsafe_reasons:
            return
        builder.unsafe_reasons.add(reason)
        self.problems.append(PatchProblem("unsafe", reason, number))

    def report(self, builder: _FileBuilder, message: str, number: int | None) -> None:
        builder.reported = True
        self.malformed(message, number)


def _rfc822_fields(lines: Sequence[str]) -> tuple[dict[str, str], int]:
    """Mail headers after ``From <sha>`` (folded lines joined) and where the body starts."""
    fields: dict[str, str] = {}
    last: str | None = None
    index = 1
    while index < len(lines):
        text = _bare(lines[index])
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
