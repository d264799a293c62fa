"""The ``series`` file: apply order, quilt-compatible. The only series parser.

Format: one patch file name per line; blank lines and ``#`` lines ignored; a
trailing ``# comment`` allowed; an optional ``-p1`` after the name. Anything
else is an error with its line. Edits (retire, undo) keep every other line.
"""

from __future__ import annotations

from dataclasses import dataclass

from forktool.errors import Finding
from forktool.model.paths import check_relative_path
from forktool.model.text import decode_lines, split_comment


@dataclass(frozen=True)
class SeriesEntry:
    name: str
    line: int  # 1-based line in the series file
    strip: int = 1


@dataclass(frozen=True)
class Series:
    """Parsed series plus the raw lines, so edits can keep comments and layout."""

    entries: tuple[SeriesEntry, ...]
    lines: tuple[str, ...]
    findings: tuple[Finding, ...] = ()

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
    for number, line in enumerate(text.lines, start=1):
        content = split_comment(line)
        if not content:
            continue
        name, *options = content.split()
        problem = _entry_problem(name, options)
        if problem is not None:
            findings.append(Finding("error", problem, path, number))
            continue
        if name in seen:
            findings.append(
                Finding(
                    "error", f"'{name}' is listed twice (first on line {seen[name]})", path, number
                )
            )
            continue
        folded = name.casefold()
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
        seen[name] = number
        seen_folded[folded] = (name, number)
        entries.append(SeriesEntry(name, number))
    return Series(tuple(entries), text.lines, tuple(findings))


def _entry_problem(name: str, options: list[str]) -> str | None:
    if name.startswith("-"):
        return f"expected a patch file name, found option '{name}'"
    for option in options:
        if option != "-p1":
            return f"unsupported option '{option}' for '{name}' (only -p1 is allowed)"
    if len(options) > 1:
        return f"'-p1' given more than once for '{name}'"
    reason = check_relative_path(name)
    if reason is not None:
        return f"patch name escapes the patches directory: {reason}"
    return None
