"""``forktool forecast``: what will the next releases absorb, and what will they break?

A matrix, the series' patches down and the targets across (release tags newer than
the pin, and upstream's branch head). Each cell holds:

* ``verdict``: what ``absorbed --tag <target>`` says, from :func:`absorbed` itself
  (the tag-independent part found once for all targets);
* ``apply``: how the patch meets the target in a refresh: the patches that would
  remain (every one not retired), applied cumulatively in series order in ONE
  ``git apply --cached`` call on a temporary index holding the target's tree. When
  that call fails, the longest prefix that applies is found by bisection, the first
  patch after it is the ``conflict`` and the rest are ``not-tried``;
* ``first_break``: for a patch that applied exactly at the start (the pin, or its
  branch point with the target when the pin is on a release branch) but not on the
  target, the first commit on the target's first-parent line after which it stops
  applying exactly, found by bisection over only the commits touching its files.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Literal

from forktool.config import ApplyRule, Config
from forktool.engine.apply.applier_output import read_git_apply
from forktool.engine.apply.attempt import classify, try_patch
from forktool.engine.apply.precheck import precheck
from forktool.engine.apply.verdict import Attempt, allows_offset, is_exact
from forktool.engine.release.tarball import carried_files
from forktool.engine.retirement.absorbed import Shared, Verdict, absorbed, shared_knowledge
from forktool.engine.retirement.releases import newer_releases
from forktool.engine.upstream.fetch import Fetched, fetch_upstream
from forktool.engine.upstream.resolve import (
    branch_ref,
    merged_prs,
    pattern_prs,
)
from forktool.fork import Fork, Patch
from forktool.git import Git, TempIndex
from forktool.model.patchfile import touched_paths

ApplyState = Literal["exact", "offset", "conflict", "absorbed", "not-tried"]
Progress = Callable[[int], None]
TARGET_WORKERS = 2  # targets judged side by side: git runs, not Python, do the work


Entry = tuple[str, str, str]  # (mode, blob, path)


@dataclass(frozen=True)
class Target:
    ref: str
    commit: str
    # A tarball-import pin: the files its release tarball adds to the pinned tag that this
    # target lacks, carried onto it (the next tarball will have them too).
    overlay: tuple[Entry, ...] = ()
    tarball: bool = False  # judged with a tarball-import pin's files

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"ref": self.ref, "commit": self.commit}
        if self.tarball:
            out["tarball_files"] = len(self.overlay)
        return out


@dataclass(frozen=True)
class FirstBreak:
    commit: str
    subject: str
    author: str
    date: str
    pr: str | None
    checks: int  # git apply checks the bisection ran
    touching: int  # commits touching the patch's files between the start and the target

    def to_json(self) -> dict[str, object]:
        return {
            "commit": self.commit,
            "subject": self.subject,
            "author": self.author,
            "date": self.date,
            "pr": self.pr,
            "checks": self.checks,
            "touching": self.touching,
        }


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

    def to_json(self) -> dict[str, object]:
        return {
            "ref": self.ref,
            "retires": list(self.retires),
            "breaks": [name for name, _ in self.breaks],
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
                    target.ref,
                    tuple(name for name, c in cells if c.verdict == "retire"),
                    tuple((name, c.first_break) for name, c in cells if c.apply in breaking),
                    sum(c.apply in carried for _, c in cells),
                    sum(c.apply == "not-tried" for _, c in cells),
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


# -- targets ---------------------------------------------------------------------------


def fetch_targets(config: Config, git: Git, *, branch: bool) -> Fetched:
    """Upstream's tags, and its development branch when asked (the one rule for
    reaching upstream)."""
    return fetch_upstream(
        config, git, all_tags=True, branch=config.upstream_branch if branch else None
    )


def branch_target(config: Config, git: Git, ref: str) -> Target:
    """``--branch REF``: upstream's remote-tracking branch of that name, else any commit."""
    remote = f"refs/remotes/{config.upstream_remote}/{ref}"
    if ref == config.upstream_branch:
        remote = branch_ref(config)
    commit = git.find_commit(remote) or git.require_commit(ref, what="--branch")
    return Target(ref, commit)


def choose_targets(
    config: Config, git: Git, tags: Sequence[str] | None, branch: str | None
) -> list[Target]:
    """``tags`` as given, else every release newer than the pin; then the branch head."""
    if tags:
        targets = [Target(tag, git.require_tag_commit(tag)) for tag in dict.fromkeys(tags)]
    else:
        targets = [Target(r.tag, r.commit) for r in newer_releases(config, git)]
    if branch is not None:
        targets.append(branch_target(config, git, branch))
    return targets


# -- applying cumulatively -------------------------------------------------------------


@dataclass(frozen=True)
class Applied:
    state: ApplyState
    message: str = ""
    without: tuple[str, ...] = ()  # tried on the tree without these (keep going)


def _load(index: TempIndex, commit: str, overlay: Sequence[Entry]) -> None:
    index.read_tree(f"{commit}^{{tree}}")
    index.add_entries(overlay)


def _apply_prefix(
    index: TempIndex, commit: str, patches: Sequence[Patch], overlay: Sequence[Entry] = ()
) -> tuple[bool, str]:
    _load(index, commit, overlay)
    if not patches:
        return True, ""
    res = index.apply_cached([str(p.path) for p in patches], purpose="apply the series")
    return res.ok, res.err


def _split_output(patches: Sequence[Patch], err: str) -> list[str] | None:
    """``git apply -v`` output of several patches cut into one part per patch (by its
    ``Checking patch`` lines, one per file diff), or None when it does not match up."""
    parts: list[list[str]] = []
    for line in err.splitlines():
        if line.startswith("Checking patch "):
            parts.append([line])
        elif parts:
            parts[-1].append(line)
    expected = sum(len(p.parsed.files) for p in patches)
    if len(parts) != expected:
        return None
    out, at = [], 0
    for patch in patches:
        count = len(patch.parsed.files)
        out.append("\n".join(line for part in parts[at : at + count] for line in part))
        at += count
    return out


def _states_of_prefix(
    index: TempIndex,
    commit: str,
    patches: Sequence[Patch],
    err: str,
    ref: str,
    overlay: Sequence[Entry] = (),
    rule: ApplyRule = "exact",
) -> dict[str, Applied]:
    """exact/offset for every patch of a prefix that applied, from its one call's output."""
    parts = _split_output(patches, err)
    states: dict[str, Applied] = {}
    if parts is None:  # cannot tell whose offset it is: replay one by one
        _load(index, commit, overlay)
        attempts = [try_patch(index, p) for p in patches]
    else:
        attempts = [
            read_git_apply(p.parsed, part, True, False)
            for p, part in zip(patches, parts, strict=True)
        ]
    for patch, attempt in zip(patches, attempts, strict=True):
        verdict = classify(patch, attempt, None, False, ref, rule)
        if verdict.status == "exact":
            states[patch.name] = Applied("exact")
        else:
            states[patch.name] = Applied("offset", verdict.message)
    return states


def _first_failure(patches: Sequence[Patch], err: str) -> int | None:
    """The index of the patch whose file diff git reported first as failing, from one
    call's ``-v`` output (git checks every diff in order, each on the ones before)."""
    checked = 0
    for line in err.splitlines():
        if line.startswith("Checking patch "):
            checked += 1
        elif line.startswith("error: ") and checked:
            at = 0
            for index, patch in enumerate(patches):
                at += len(patch.parsed.files)
                if checked <= at:
                    return index
            return None
    return None


def _longest_prefix(
    index: TempIndex, commit: str, patches: Sequence[Patch], err: str, overlay: Sequence[Entry] = ()
) -> tuple[int, str]:
    """(length, its output) of the longest prefix of ``patches`` that applies, given the
    whole series' failing output ``err``: read from the output and confirmed with one
    call, or bisected when the output does not tell."""
    guess = _first_failure(patches, err)
    if guess is not None:
        ok, out = _apply_prefix(index, commit, patches[:guess], overlay)
        if ok:
            return guess, out
    good, good_err, bad = 0, "", guess if guess is not None else len(patches)
    while bad - good > 1:
        mid = (good + bad) // 2
        ok, out = _apply_prefix(index, commit, patches[:mid], overlay)
        if ok:
            good, good_err = mid, out
        else:
            bad = mid
    return good, good_err


def cumulative_apply(
    git: Git,
    target: Target,
    patches: Sequence[Patch],
    rule: ApplyRule = "exact",
    *,
    keep_going: bool = False,
) -> dict[str, Applied]:
    """How each of ``patches`` meets ``target`` applied in series order, as a refresh
    would: one call when the whole series applies; otherwise the culprit is read from
    git's output and confirmed (a bisection of the prefix when it cannot be read).
    ``rule``: the fork's apply rule (dpkg-source's accepts hand-edited hunk headers).
    With ``keep_going``, the patches after a conflict are applied again in one call
    on the tree without the conflicting ones, and so on after each conflict; their
    states name the patches left out (``without``)."""
    states: dict[str, Applied] = {}
    kept: list[Patch] = []  # the patches applied so far: the tree the rest go on
    failed: list[str] = []
    rest = list(patches)
    overlay = target.overlay
    with git.temp_index() as index:
        while rest:
            stop = next(
                (i for i, p in enumerate(rest) if precheck(p, "git", rule=rule) is not None), None
            )
            candidates = rest[:stop] if stop is not None else rest
            ok, err = _apply_prefix(index, target.commit, [*kept, *candidates], overlay)
            if ok:
                good, good_err = len(candidates), err
            else:
                good, good_err = _longest_prefix(
                    index, target.commit, [*kept, *candidates], err, overlay
                )
                good = max(0, good - len(kept))
            applied = [*kept, *candidates[:good]]
            found = _states_of_prefix(
                index, target.commit, applied, good_err, target.ref, overlay, rule
            )
            for patch in candidates[:good]:
                states[patch.name] = _without(found[patch.name], failed)
            kept = applied
            rest = rest[good:]
            if not rest:
                break
            message = _conflict_message(index, target, kept, rest[0], rule)
            states[rest[0].name] = _without(Applied("conflict", message), failed)
            if not keep_going:
                for patch in rest[1:]:
                    states[patch.name] = Applied(
                        "not-tried", f"after the conflict of {rest[0].name}"
                    )
                break
            failed.append(rest[0].name)
            rest = rest[1:]
    return states


def _without(state: Applied, failed: Sequence[str]) -> Applied:
    return replace(state, without=tuple(failed)) if failed else state


def _conflict_message(
    index: TempIndex, target: Target, before: Sequence[Patch], patch: Patch, rule: ApplyRule
) -> str:
    early = precheck(patch, "git", rule=rule)
    if early is not None:
        return early.message
    _apply_prefix(index, target.commit, before, target.overlay)
    attempt = try_patch(index, patch, check=True)
    return classify(patch, attempt, None, False, target.ref, rule).message


# -- the first break -------------------------------------------------------------------


class Prober:
    """Does a patch (after the earlier patches that touch its files) apply exactly on a
    commit? Each answer is one ``git apply --check --cached`` in a temporary index, and
    is remembered across targets."""

    def __init__(self, git: Git) -> None:
        self.git = git
        self.top = git.toplevel()
        self.known: dict[tuple[str, str], bool] = {}

    def exact(
        self,
        index: TempIndex,
        commit: str,
        before: Sequence[Patch],
        patch: Patch,
        overlay: Sequence[Entry] = (),
    ) -> tuple[bool, int]:
        """(applies exactly, checks run: 0 when remembered)."""
        key = (commit, patch.name)
        if key in self.known:
            return self.known[key], 0
        ok, _ = _apply_prefix(index, commit, before, overlay)
        attempt = try_patch(index, patch, check=True) if ok else Attempt(ok=False)
        exact = ok and is_exact(attempt)
        self.known[key] = exact
        return exact, 1


def _related(patches: Sequence[Patch], patch: Patch) -> list[Patch]:
    """The earlier patches of ``patches`` that touch a file ``patch`` touches."""
    mine = set(touched_paths(patch.parsed))
    before = patches[: patches.index(patch)]
    return [p for p in before if mine & set(touched_paths(p.parsed))]


def find_first_break(
    git: Git, prober: Prober, start: str, target: Target, remaining: Sequence[Patch], patch: Patch
) -> tuple[str, int, int] | None:
    """(commit, checks, commits touching) of the first commit after which ``patch`` stops
    applying exactly, or None when it did not apply exactly at ``start`` either.

    At most ceil(log2(n)) + 1 checks for n commits touching the files: one at the
    start, then a bisection (the target itself is known not to apply).
    """
    before = _related(remaining, patch)
    paths = sorted({path for p in (*before, patch) for path in touched_paths(p.parsed)})
    commits = git.first_parent_touching(target.commit, start, paths, top=prober.top)
    if not commits:
        return None
    with git.temp_index() as index:
        good_at_start, checks = prober.exact(index, start, before, patch, target.overlay)
        if not good_at_start:
            return None
        good, bad = -1, len(commits) - 1
        while bad - good > 1:
            mid = (good + bad) // 2
            exact, ran = prober.exact(index, commits[mid], before, patch, target.overlay)
            checks += ran
            if exact:
                good = mid
            else:
                bad = mid
    assert checks <= math.ceil(math.log2(len(commits))) + 2
    return commits[bad], checks, len(commits)


def start_point(git: Git, pin_commit: str, target: Target) -> str | None:
    """Where the first-break search starts: the pin, or its branch point with the target
    when the pin is on a release branch the target does not contain (the merge-base is
    the pin itself when the target contains it)."""
    return git.merge_base(pin_commit, target.commit)


def _describe(
    git: Git, config: Config, found: dict[str, tuple[str, int, int]]
) -> dict[str, FirstBreak]:
    """The first-break commits' subjects, authors, dates and PRs: one ``git log``."""
    commits = sorted({commit for commit, _, _ in found.values()})
    if not commits:
        return {}
    entries = {e.commit: e for e in git.log_entries(commits)}
    hits = pattern_prs(config, list(entries.values()))
    described = {}
    for name, (commit, checks, touching) in found.items():
        entry = entries[commit]
        prs = merged_prs(entry, hits)
        pr = next(iter(prs), None)
        described[name] = FirstBreak(
            commit,
            entry.subject,
            entry.author,
            entry.date,
            f"#{pr}" if pr else None,
            checks,
            touching,
        )
    return described


# -- the matrix --------------------------------------------------------------------------


def _column(
    fork: Fork,
    git: Git,
    target: Target,
    shared: Shared,
    prober: Prober,
    keep_going: bool = False,
) -> dict[str, Cell]:
    """One target's cells: absorbed's verdicts, the cumulative apply, the first breaks."""
    report = absorbed(fork, git, target.ref, tag_commit=target.commit, shared=shared)
    remaining = [p for p in fork.patches if report.patch(p.name).verdict != "retire"]
    rule = fork.config.apply_rule
    applied = cumulative_apply(git, target, remaining, rule, keep_going=keep_going)
    # Under dpkg-source's rule an offset is accepted: only a conflict breaks.
    breaking = ("conflict",) if allows_offset(rule) else ("conflict", "offset")
    broken = [p for p in remaining if applied[p.name].state in breaking]
    start = start_point(git, fork.config.pin_commit, target) if broken else None
    found: dict[str, tuple[str, int, int]] = {}
    for patch in broken:
        hit = find_first_break(git, prober, start, target, remaining, patch) if start else None
        if hit is not None:
            found[patch.name] = hit
    breaks = _describe(git, fork.config, found)
    column = {}
    for verdict in report.patches:
        state = applied.get(verdict.patch, Applied("absorbed"))
        column[verdict.patch] = Cell(
            target.ref,
            verdict.verdict,
            state.state,
            breaks.get(verdict.patch),
            verdict.reason,
            state.message,
            state.without,
        )
    return column


def with_tarball_files(config: Config, git: Git, targets: Sequence[Target]) -> list[Target]:
    """``targets``, each carrying the files the pinned release tarball adds to the tag
    that the target lacks (none without a tarball-import pin): a patch to ``ltmain.sh``
    is judged on the target as its next tarball will have it, not failed for a file
    no git tag ever has."""
    if config.pin_import is None:
        return list(targets)
    return [replace(t, overlay=carried_files(config, git, t.commit), tarball=True) for t in targets]


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
