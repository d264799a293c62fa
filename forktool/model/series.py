"""The ``series`` file: apply order, quilt-compatible. The only series parser.

Format: one patch file name per line; blank lines and ``#`` lines ignored; a
trailing ``# comment`` allowed; an optional ``-p1`` after the name. Anything
else is an error with its line. Edits (retire, undo) keep every other line.

A ``#`` line that holds one patch name (``#name``, ``# name -p1``) is how quilt
and Debian maintainers disable a patch while keeping its file: such lines are kept
as :attr:`Series.disabled`, so the fork can tell a disabled patch file from a
forgotten one.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import NamedTuple

from forktool.errors import Finding
from forktool.model.paths import check_relative_path
from forktool.model.text import decode_lines, split_comment


class SeriesEntry(NamedTuple):
    name: str
    line: int  # 1-based line in the series file
    strip: int = 1


class Series(NamedTuple):
    """Parsed series plus the raw lines, so edits can keep comments and layout."""

    entries: tuple[SeriesEntry, ...]
    lines: tuple[str, ...]
    findings: tuple[Finding, ...] = ()
    disabled: tuple[SeriesEntry, ...] = ()  # "#name" lines: patches switched off
    refused: tuple[SeriesEntry, ...] = ()  # lines naming a patch with an option refused

    def disabled_entry(self, name: str) -> SeriesEntry | None:
        """The ``#name`` line that disables patch ``name``, if the series has one."""
        return next((e for e in self.disabled if e.name == name), None)

    @property
    def names(self) -> list[str]:
        return [e.name for e in self.entries]

    def entry(self, name: str) -> SeriesEntry | None:
        return next((e for e in self.entries if e.name == name), None)

    def without(self, name: str) -> Series:
        """The series with ``name``'s line removed, every other line untouched."""
        entry = self.entry(name)
        if entry is None:
            raise KeyError(name)
        lines = list(self.lines)
        del lines[entry.line - 1]
        return parse_series(format_lines(lines))

    def with_entry(self, name: str, after: str | None) -> Series:
        """The series with ``name`` inserted after ``after`` (None: at the top)."""
        lines = list(self.lines)
        position = 0
        if after is not None and (anchor := self.entry(after)) is not None:
            position = anchor.line
        elif after is not None and self.entries:
            position = self.entries[-1].line
        lines.insert(position, name)
        return parse_series(format_lines(lines))

    def to_bytes(self) -> bytes:
        return format_lines(list(self.lines))


def format_lines(lines: list[str]) -> bytes:
    return "".join(line + "\n" for line in lines).encode("utf-8")


def format_series(names: list[str]) -> bytes:
    """A fresh series file listing ``names`` in order."""
    return format_lines(names)


def parse_series(data: bytes, path: str = "series") -> Series:
    text = decode_lines(data, path)
    findings = list(text.findings)
    entries: list[SeriesEntry] = []
    seen: dict[str, int] = {}
    seen_folded: dict[str, tuple[str, int]] = {}
    disabled: list[SeriesEntry] = []
    refused: list[SeriesEntry] = []
    for number, line in enumerate(text.lines, start=1):
        content = split_comment(line)
        if not content:
            if (name := _disabled_name(line)) is not None:
                disabled.append(SeriesEntry(name, number))
            continue
        name, *options = content.split()
        problem = _entry_problem(name, options)
        if problem is not None:
            message, hint = problem
            findings.append(Finding("error", message, path, number, hint))
            if options and not name.startswith("-") and check_relative_path(name) is None:
                refused.append(SeriesEntry(name, number))  # listed, if not as forktool can
            continue
        key = PurePosixPath(name).as_posix()  # './x.patch' and 'sub//x' name the same files
        if key in seen:
            findings.append(
                Finding(
                    "error",
                    f"'{name}' is listed twice (first on line {seen[key]})",
                    path,
                    number,
                    "list each patch once (quilt would apply it twice)",
                )
            )
            continue
        folded = key.casefold()
        if folded in seen_folded:
            other, other_line = seen_folded[folded]
            findings.append(
                Finding(
                    "error",
                    f"'{name}' differs from '{other}' (line {other_line}) only by case",
                    path,
                    number,
                    "patch names must stay distinct on case-insensitive file systems",
                )
            )
            continue
        seen[key] = number
        seen_folded[folded] = (name, number)
        entries.append(SeriesEntry(name, number))
    return Series(tuple(entries), text.lines, tuple(findings), tuple(disabled), tuple(refused))


# A commented-out entry: "#" (or several), then one name, at most a -pN option, and
# at most a "# why" of its own.
_DISABLED = re.compile(r"#+\s*(\S+)(?:\s+-p[0-9]+)?(?:\s+#.*)?\s*")


def _disabled_name(line: str) -> str | None:
    """The patch name a ``#name`` line disables, or None for any other line."""
    match = _DISABLED.fullmatch(line.strip())
    if match is None or match.group(1).startswith(("-", "#")):
        return None
    return match.group(1) if check_relative_path(match.group(1)) is None else None


# What a series line with an option forktool does not take should become.
ONLY_P1 = (
    "forktool applies every patch with -p1 and nothing else: regenerate a -p0/-p2 patch "
    "with -p1 paths (quilt refresh -p ab), and drop -R/--fuzz options"
)


def _entry_problem(name: str, options: list[str]) -> tuple[str, str] | None:
    """What is wrong with a series line (a name, then options), and what to do."""
    if name.startswith("-"):
        return (
            f"expected a patch file name, found option '{name}'",
            "a series line is a patch file name, then at most -p1",
        )
    for option in options:
        if option != "-p1":
            return f"unsupported option '{option}' for '{name}' (only -p1 is allowed)", ONLY_P1
    if len(options) > 1:
        return f"'-p1' given more than once for '{name}'", "give it once"
    reason = check_relative_path(name)
    if reason is not None:
        return (
            f"patch name escapes the patches directory: {reason}",
            "name a file inside the patches directory",
        )
    return None
