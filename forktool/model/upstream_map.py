"""``upstream.map``: which upstream commit(s) retire each patch.

Format: ``<patch-file> <commit>[,<commit>...] [<url-or-note>...]`` with ``#``
comments. A commit is 40 hex digits. ``none`` marks a fork-only patch (no upstream
commit will ever retire it); ``pending [PR-url] [note...]`` marks a patch waiting for
upstream (never retired until the commit is written in). Edits keep every other line
as written.
"""

from __future__ import annotations

import re
from functools import cached_property
from typing import Final, Literal, NamedTuple

from forktool.errors import Finding
from forktool.model.text import decode_lines

_HEX40 = re.compile(r"^[0-9a-fA-F]{40}$")
_URL = re.compile(r"^https?://\S+$")

# What the second column says: commits that retire the patch, ``none`` (fork-only for
# good) or ``pending`` (waiting for upstream: a PR not merged yet).
MapKind = Literal["commits", "none", "pending"]


# The word written for an entry without commits (a bare entry reads as fork-only).
_EMPTY_WORD: dict[MapKind, str] = {"commits": "none", "none": "none", "pending": "pending"}


class MapEntry(NamedTuple):
    patch: str
    commits: tuple[str, ...]  # empty for ``none`` and ``pending``
    note: str
    line: int
    kind: MapKind = "commits"

    @property
    def fork_only(self) -> bool:
        return self.kind == "none"

    @property
    def pending(self) -> bool:
        return self.kind == "pending"

    @property
    def pr(self) -> str | None:
        """The PR (or merge request) URL: the note's first word when it is a URL."""
        first = self.note.split(None, 1)[0] if self.note else ""
        return first if _URL.match(first) else None

    def render(self) -> str:
        commits = ",".join(self.commits) if self.commits else _EMPTY_WORD[self.kind]
        return " ".join(part for part in (self.patch, commits, self.note) if part)


class UpstreamMap:
    """``upstream.map`` read: its entries, its lines as written, and what is wrong with
    it. Read-only once made."""

    def __init__(
        self,
        entries: tuple[MapEntry, ...],
        lines: tuple[str, ...],
        findings: tuple[Finding, ...] = (),
        refused: tuple[str, ...] = (),  # patches on lines with a commit field refused (a finding)
    ) -> None:
        self.entries: Final = entries
        self.lines: Final = lines
        self.findings: Final = findings
        self.refused: Final = refused

    def _key(self) -> tuple[object, ...]:
        return (self.entries, self.lines, self.findings, self.refused)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UpstreamMap) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"UpstreamMap({len(self.entries)} entries)"

    @cached_property
    def _first_by_patch(self) -> dict[str, MapEntry]:
        # load_fork looks every series entry up: a scan each time is quadratic.
        index: dict[str, MapEntry] = {}
        for entry in self.entries:
            index.setdefault(entry.patch, entry)
        return index

    def get(self, patch: str) -> MapEntry | None:
        return self._first_by_patch.get(patch)

    def without(self, patch: str) -> UpstreamMap:
        entry = self.get(patch)
        if entry is None:
            raise KeyError(patch)
        lines = list(self.lines)
        del lines[entry.line - 1]
        return parse_map(_join(lines))

    def with_entry(self, entry: MapEntry) -> UpstreamMap:
        """The map with ``entry`` appended (or its existing line replaced)."""
        lines = list(self.lines)
        existing = self.get(entry.patch)
        if existing is not None:
            lines[existing.line - 1] = entry.render()
        else:
            lines.append(entry.render())
        return parse_map(_join(lines))

    def to_bytes(self) -> bytes:
        return _join(list(self.lines))


def _join(lines: list[str]) -> bytes:
    return "".join(line + "\n" for line in lines).encode("utf-8")


def format_map(entries: list[MapEntry]) -> bytes:
    return _join([e.render() for e in entries])


def parse_commit_list(text: str) -> tuple[tuple[str, ...] | None, str | None]:
    """``a,b``, ``none`` or ``pending`` -> (commits, None); garbage -> (None, reason)."""
    if text in ("none", "pending"):
        return (), None
    commits = text.split(",")
    for commit in commits:
        if not _HEX40.match(commit):
            shown = commit or "(empty)"
            return None, f"'{shown}' is not a 40-hex commit id (abbreviated ids are ambiguous)"
    lowered = tuple(c.lower() for c in commits)
    if len(set(lowered)) != len(lowered):
        return None, "a commit is listed twice"
    return lowered, None


def parse_map(data: bytes, path: str = "upstream.map") -> UpstreamMap:
    text = decode_lines(data, path)
    findings = list(text.findings)
    entries: list[MapEntry] = []
    refused: list[str] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(text.lines, start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        parts = stripped.split(None, 2)
        if len(parts) < 2:
            findings.append(
                Finding(
                    "error",
                    f"'{parts[0]}' has no commit (write 'pending [PR-url]' while upstream has "
                    "not merged it, or 'none' for a fork-only patch)",
                    path,
                    number,
                )
            )
            refused.append(parts[0])
            continue
        patch, commit_text = parts[0], parts[1]
        note = parts[2] if len(parts) > 2 else ""
        commits, problem = parse_commit_list(commit_text)
        if commits is None:
            findings.append(
                Finding(
                    "error",
                    f"{patch}: {problem}",
                    path,
                    number,
                    "write full 40-hex commits (git rev-parse <id>), 'pending [PR-url]' while "
                    "upstream has not merged it, or 'none' for a fork-only patch "
                    "('forktool map suggest' reads them from the patch headers)",
                )
            )
            refused.append(patch)
            continue
        if patch in seen:
            findings.append(
                Finding(
                    "error",
                    f"'{patch}' is mapped twice (first on line {seen[patch]})",
                    path,
                    number,
                )
            )
            continue
        seen[patch] = number
        kind: MapKind = "commits"
        if commit_text == "none":
            kind = "none"
        elif commit_text == "pending":
            kind = "pending"
        entries.append(MapEntry(patch, commits, note, number, kind))
    return UpstreamMap(tuple(entries), text.lines, tuple(findings), tuple(refused))
