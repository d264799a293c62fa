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
from typing import Literal, NamedTuple

ProblemKind = Literal["malformed", "unsafe"]


HeaderStyle = Literal["mbox", "plain"]


UPSTREAM_PR = "Upstream-PR"


UPSTREAM_MERGE = "Upstream-Merge"


EXIT_CRITERION = "Exit-Criterion"


TRAILER_KEYS = (UPSTREAM_PR, UPSTREAM_MERGE, EXIT_CRITERION)


ENCODING = "utf-8"


ERRORS = "surrogateescape"


_SHA = re.compile(r"^[0-9a-fA-F]{40}$")


SYMLINK_MODE = "120000"


class PatchProblem(NamedTuple):
    kind: ProblemKind
    message: str
    line: int | None  # 1-based line in the patch file


class Trailer(NamedTuple):
    key: str  # canonical spelling, e.g. "Upstream-PR"
    value: str  # as written, surrounding blanks removed
    line: int


class Hunk(NamedTuple):
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    section: str  # text after the closing "@@", e.g. a function name
    line: int  # 1-based line of the "@@" header
    lines: tuple[str, ...]  # body lines as decoded text without the newline
    header: str = ""  # the "@@" line as written, so formatting is exact

    @property
    def has_context(self) -> bool:
        """Whether a line of the body is context (an empty line is one whose space was
        lost, and a lone CR one of a CR LF file: the parser counts both so)."""
        return any(line[:1] in (" ", "", "\r") for line in self.lines)


class FileDiff(NamedTuple):
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


class PatchHeader(NamedTuple):
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


class PatchFile(NamedTuple):
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
