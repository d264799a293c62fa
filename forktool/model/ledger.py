"""``alignment.ledger``: the fork's declared divergence from the pinned tag.

Format: ``<add|del> <path-or-glob> <permanent|until:<condition>> <rationale...>``.
``*`` and ``?`` stay within one path component; ``dir/**`` matches a subtree.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Literal, NamedTuple

from forktool.errors import Finding
from forktool.model.revision import CommitId, is_hex40
from forktool.model.text import decode_lines

Action = Literal["add", "del"]


@lru_cache(maxsize=1024)  # an entry's pattern, compiled once however often it is matched
def glob_to_regex(pattern: str) -> re.Pattern[str]:
    """Compile a ledger glob. ``**`` crosses directories, ``*`` and ``?`` do not."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


class LedgerEntry(NamedTuple):
    action: Action
    pattern: str
    criterion: str  # "permanent" or "until:<condition>"
    rationale: str
    line: int

    def matches(self, path: str) -> bool:
        return glob_to_regex(self.pattern).match(path) is not None

    @property
    def until(self) -> str | None:
        """The condition after ``until:``, or None for a permanent entry."""
        return self.criterion[len("until:") :] if self.criterion.startswith("until:") else None

    @property
    def until_commit(self) -> CommitId | None:
        """The commit whose arrival in the pinned tag retires this entry, if the condition is one."""
        until = self.until
        return until if until is not None and is_hex40(until) else None

    def render(self) -> str:
        return f"{self.action} {self.pattern} {self.criterion} {self.rationale}"


class Ledger(NamedTuple):
    entries: tuple[LedgerEntry, ...]
    findings: tuple[Finding, ...] = ()

    @property
    def adds(self) -> tuple[LedgerEntry, ...]:
        return tuple(e for e in self.entries if e.action == "add")

    @property
    def dels(self) -> tuple[LedgerEntry, ...]:
        return tuple(e for e in self.entries if e.action == "del")

    def declaring(self, action: Action, path: str) -> LedgerEntry | None:
        entries = self.adds if action == "add" else self.dels
        return next((e for e in entries if e.matches(path)), None)


def format_ledger(entries: list[LedgerEntry]) -> bytes:
    return "".join(e.render() + "\n" for e in entries).encode("utf-8")


def parse_ledger(data: bytes, path: str = "alignment.ledger") -> Ledger:
    text = decode_lines(data, path)
    findings = list(text.findings)
    entries: list[LedgerEntry] = []
    for number, line in enumerate(text.lines, start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        parts = stripped.split(None, 3)
        problem = _entry_problem(parts)
        if problem is not None:
            findings.append(Finding("error", problem, path, number))
            continue
        action, pattern, criterion, rationale = parts
        entries.append(LedgerEntry(action, pattern, criterion, rationale, number))  # type: ignore[arg-type]
    return Ledger(tuple(entries), tuple(findings))


def _entry_problem(parts: list[str]) -> str | None:
    if parts[0] not in ("add", "del"):
        return f"unknown action '{parts[0]}' (expected 'add' or 'del')"
    if len(parts) < 2:
        return "missing path or glob"
    if parts[1].startswith("/") or ".." in parts[1].split("/"):
        return f"'{parts[1]}' must be a path relative to the repository root"
    if len(parts) < 3:
        return f"'{parts[1]}' has no exit criterion (permanent or until:<condition>)"
    criterion = parts[2]
    if criterion != "permanent" and not (criterion.startswith("until:") and len(criterion) > 6):
        return f"exit criterion '{criterion}' must be 'permanent' or 'until:<condition>'"
    if len(parts) < 4:
        return f"'{parts[1]}' has no rationale: say why the fork diverges here"
    return None
