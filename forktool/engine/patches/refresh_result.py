"""What a refresh reports: one entry per patch (how it moved, or why it did not) and
the result of a run, as the ``refresh`` JSON and its renderer read them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from forktool.engine.patches.canonical import Chain, Link
from forktool.engine.patches.refresh_moves import already_on

RefreshStatus = Literal["unchanged", "rebased", "merged", "conflict", "resolved", "not-tried"]
MOVED = ("unchanged", "rebased", "merged", "resolved")  # the statuses a written refresh has


@dataclass(frozen=True)
class RefreshEntry:
    patch: str
    path: str
    status: RefreshStatus
    message: str = ""
    bytes_changed: bool = False
    commit: str | None = field(default=None, compare=False)

    def to_json(self) -> dict[str, object]:
        return {
            "patch": self.patch,
            "path": self.path,
            "status": self.status,
            "message": self.message,
            "bytes_changed": self.bytes_changed,
        }


@dataclass(frozen=True)
class RefreshResult:
    onto: str
    onto_commit: str
    pin: str
    entries: tuple[RefreshEntry, ...]
    written: tuple[str, ...] = ()
    range_diff: str = ""
    worktree: str | None = None  # the hand-resolution worktree, while one is open
    message: str = ""
    aborted: bool = False

    @property
    def ok(self) -> bool:
        if self.aborted:
            return True
        return bool(self.entries) and all(e.status in MOVED for e in self.entries)

    @property
    def in_progress(self) -> bool:
        return self.worktree is not None

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "onto": self.onto,
            "onto_commit": self.onto_commit,
            "pin": self.pin,
            "ok": self.ok,
            "patches": [e.to_json() for e in self.entries],
            "written": list(self.written),
            "range_diff": self.range_diff,
            "in_progress": self.in_progress,
            "worktree": self.worktree,
        }
        if self.message:
            data["message"] = self.message
        if self.aborted:
            data["aborted"] = True
        return data


def chain_entries(chain: Chain, keeps_offsets: bool = False) -> list[RefreshEntry]:
    """One entry per link of a refresh chain, in series order (``keeps_offsets``: a
    patch the fork's rule accepts at an offset is written as it is, in the maintainers'
    form, not regenerated)."""
    return [_entry(link, keeps_offsets) for link in chain.links]


def _entry(link: Link, keeps_offsets: bool) -> RefreshEntry:
    verdict, patch = link.verdict, link.patch
    if already_on(link):
        message = f"{verdict.message}; retire it first, or drop it"
        return RefreshEntry(patch.name, patch.rel, "conflict", message)
    if link.commit is None:
        return RefreshEntry(patch.name, patch.rel, "conflict", verdict.message)
    if link.merged:
        return RefreshEntry(patch.name, patch.rel, "merged", verdict.message, commit=link.commit)
    if verdict.status == "exact":
        return RefreshEntry(patch.name, patch.rel, "unchanged", "", commit=link.commit)
    if keeps_offsets and verdict.status == "offset":
        message = f"{verdict.message}; kept byte for byte"
    else:
        message = verdict.message.replace("; run 'forktool refresh'", "") + "; regenerated"
    return RefreshEntry(patch.name, patch.rel, "rebased", message, commit=link.commit)


def unwritten(entries: Sequence[RefreshEntry]) -> list[RefreshEntry]:
    """The entries of a refresh that wrote nothing: a rebased patch *would be* regenerated."""
    return [
        replace(e, message=e.message.removesuffix("; regenerated") + "; would be regenerated")
        if e.status == "merged" or (e.status == "rebased" and e.message.endswith("; regenerated"))
        else e
        for e in entries
    ]


def first_conflict(entries: Sequence[RefreshEntry]) -> int:
    """The position of the first patch that did not move."""
    return next(i for i, e in enumerate(entries) if e.status not in MOVED)
