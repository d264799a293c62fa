"""``forktool forecast``: what will the next releases absorb, and what will they break?

A matrix, the series' patches down and the targets across (release tags newer than
the pin, and upstream's branch head). Each cell holds:

* ``verdict``: what ``absorbed --tag <target>`` says, from :func:`absorbed` itself
  (the tag-independent part found once for all targets);
* ``apply``: how the patch meets the target in a refresh: the patches that would
  remain (every one not retired), applied cumulatively in series order
  (:mod:`~forktool.engine.upstream.cumulative`);
* ``first_break``: the first upstream commit after which a patch that applied
  exactly at the start stops applying (:mod:`~forktool.engine.upstream.first_break`).

The targets are chosen in :mod:`~forktool.engine.upstream.targets`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from forktool.config import ApplyRule
from forktool.engine.apply.verdict import allows_offset, says_already_applied
from forktool.engine.patches.merge_patch import seen_by_merge
from forktool.engine.release.pin_state import require_tree
from forktool.engine.retirement.absorbed import Shared, absorbed, shared_knowledge
from forktool.engine.retirement.absorption import Verdict
from forktool.engine.upstream.cumulative import Applied, ApplyState, Presence, cumulative_apply
from forktool.engine.upstream.first_break import (
    FirstBreak,
    Prober,
    describe_breaks,
    find_first_break,
    start_point,
)
from forktool.engine.upstream.targets import Target, with_tarball_files
from forktool.fork import Fork
from forktool.git import Git

Progress = Callable[[int], None]
TARGET_WORKERS = 2  # targets judged side by side: git runs, not Python, do the work


@dataclass(frozen=True)
class Cell:
    ref: str
    verdict: Verdict
    apply: ApplyState
    first_break: FirstBreak | None
    reason: str  # the verdict in words
    message: str  # why it does not apply exactly ("" when it does)
    without: tuple[str, ...] = ()  # applied without these conflicting patches (keep going)

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "ref": self.ref,
            "verdict": self.verdict,
            "apply": self.apply,
            "first_break": self.first_break.to_json() if self.first_break else None,
            "reason": self.reason,
            "message": self.message,
        }
        if self.without:
            data["without"] = list(self.without)
        return data


@dataclass(frozen=True)
class PatchRow:
    patch: str
    cells: tuple[Cell, ...]

    def to_json(self) -> dict[str, object]:
        return {"patch": self.patch, "cells": [c.to_json() for c in self.cells]}


@dataclass(frozen=True)
class TargetSummary:
    ref: str
    retires: tuple[str, ...]
    breaks: tuple[tuple[str, FirstBreak | None], ...]  # conflict or offset
    carry: int  # applies exactly
    not_tried: int
    present: tuple[str, ...] = ()  # of the breaks, those the target already carries
    merged: tuple[str, ...] = ()  # of those, the ones only a 3-way merge saw there

    def to_json(self) -> dict[str, object]:
        return {
            "ref": self.ref,
            "retires": list(self.retires),
            "breaks": [name for name, _ in self.breaks],
            "already_applied": list(self.present),
            "carry_over": self.carry,
            "not_tried": self.not_tried,
        }


@dataclass(frozen=True)
class ForecastResult:
    pin: str
    pin_commit: str
    targets: tuple[Target, ...]
    patches: tuple[PatchRow, ...]
    fetched: bool = False
    rule: ApplyRule = "exact"  # the fork's apply rule: under dpkg's an offset is no break

    def summaries(self) -> list[TargetSummary]:
        breaking = ("conflict",) if allows_offset(self.rule) else ("conflict", "offset")
        carried = ("exact", "offset") if allows_offset(self.rule) else ("exact",)
        found = []
        for column, target in enumerate(self.targets):
            cells = [(row.patch, row.cells[column]) for row in self.patches]
            found.append(
                TargetSummary(
                    target.name,
                    tuple(name for name, c in cells if c.verdict == "retire"),
                    tuple((name, c.first_break) for name, c in cells if c.apply in breaking),
                    sum(c.apply in carried for _, c in cells),
                    sum(c.apply == "not-tried" for _, c in cells),
                    tuple(
                        name
                        for name, c in cells
                        if c.apply == "conflict" and says_already_applied(c.message)
                    ),
                    tuple(name for name, c in cells if seen_by_merge(c.message)),
                )
            )
        return found

    def to_json(self) -> dict[str, object]:
        return {
            "pin": self.pin,
            "pin_commit": self.pin_commit,
            "fetched": self.fetched,
            "targets": [t.to_json() for t in self.targets],
            "patches": [p.to_json() for p in self.patches],
            "summary": [s.to_json() for s in self.summaries()],
        }


def _column(
    fork: Fork,
    git: Git,
    target: Target,
    shared: Shared,
    prober: Prober,
    keep_going: bool = False,
) -> dict[str, Cell]:
    """One target's cells: absorbed's verdicts, the cumulative apply, the first breaks."""
    report = absorbed(fork, git, target.revision, shared=shared)
    remaining = [p for p in fork.patches if report.patch(p.name).verdict != "retire"]
    rule = fork.config.apply_rule
    maybe = frozenset(p.patch for p in report.patches if p.verdict == "revisit")
    present = Presence(maybe, require_tree(fork.config, git), fork.patches, rule) if maybe else None
    applied = cumulative_apply(git, target, remaining, rule, keep_going=keep_going, present=present)
    # Under dpkg-source's rule an offset is accepted: only a conflict breaks.
    breaking = ("conflict",) if allows_offset(rule) else ("conflict", "offset")
    broken = [p for p in remaining if applied[p.name].state in breaking]
    start = start_point(git, fork.config.pin_commit, target) if broken else None
    found: dict[str, tuple[str, int, int]] = {}
    for patch in broken:
        hit = find_first_break(git, prober, start, target, fork.patches, patch) if start else None
        if hit is not None:
            found[patch.name] = hit
    breaks = describe_breaks(git, fork.config, found)
    column = {}
    for verdict in report.patches:
        state = applied.get(verdict.patch, Applied("absorbed"))
        column[verdict.patch] = Cell(
            target.name,
            verdict.verdict,
            state.state,
            breaks.get(verdict.patch),
            verdict.reason,
            state.message,
            state.without,
        )
    return column


def forecast(
    fork: Fork,
    git: Git,
    targets: Sequence[Target],
    *,
    fetched: bool = False,
    progress: Progress | None = None,
    keep_going: bool = False,
) -> ForecastResult:
    """The matrix: each target judged on its own (read-only git runs, two at a time).
    With ``keep_going`` the cumulative apply goes on past each conflict."""
    config = fork.config
    columns: list[dict[str, Cell]] = []
    targets = with_tarball_files(config, git, targets)
    if targets:
        shared = shared_knowledge(fork, git)
        prober = Prober(git)
        with ThreadPoolExecutor(max_workers=TARGET_WORKERS) as pool:
            futures = [
                pool.submit(_column, fork, git, t, shared, prober, keep_going) for t in targets
            ]
            for future in futures:
                columns.append(future.result())
                if progress:
                    progress(1)
    rows = tuple(PatchRow(p.name, tuple(col[p.name] for col in columns)) for p in fork.patches)
    return ForecastResult(
        config.pin_tag, config.pin_commit, tuple(targets), rows, fetched, config.apply_rule
    )
