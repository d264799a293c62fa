"""How a series meets a target when applied as a refresh would: the patches in series
order, cumulatively, in ONE ``git apply --cached`` call on a temporary index holding the
target's tree. When that call fails, the longest run that applies is read from git's
output (or found by bisection); the first patch after it is the ``conflict`` and the
rest are ``not-tried`` (with ``keep_going``: tried again without the conflicting ones),
unless git refused that patch only for its anchors and GNU patch places it at an
offset (forktool.engine.apply.anchors): then it is applied there and the rest go on,
in one call again, on top of it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from forktool.config import ApplyRule
from forktool.engine.apply.anchors import end_hunks, first_past_the_end, line_changes
from forktool.engine.apply.applier_output import read_git_apply
from forktool.engine.apply.attempt import (
    already_there,
    classify,
    fuzz_probe,
    made_twice,
    placed_without_anchors,
    reverse_state,
    try_patch,
)
from forktool.engine.apply.precheck import precheck
from forktool.engine.apply.verdict import (
    Attempt,
    HunkPlacement,
    PatchVerdict,
    says_already_applied,
)
from forktool.engine.patches.merge_patch import PreImages, absorbed_message, merge_onto
from forktool.engine.upstream.targets import Entry, Target
from forktool.fork import Patch
from forktool.git import Git, GitResult, TempIndex
from forktool.model.text import line_count

ApplyState = Literal["exact", "offset", "conflict", "absorbed", "not-tried"]


@dataclass(frozen=True)
class Applied:
    state: ApplyState
    message: str = ""
    without: tuple[str, ...] = ()  # tried on the tree without these (keep going)


def _load(index: TempIndex, commit: str, overlay: Sequence[Entry]) -> None:
    index.read_tree(commit, cache=True)
    index.add_entries(overlay)


def apply_prefix(
    index: TempIndex, commit: str, patches: Sequence[Patch], overlay: Sequence[Entry] = ()
) -> tuple[bool, str]:
    _load(index, commit, overlay)
    if not patches:
        return True, ""
    res = _apply_run(index, patches)
    return res.ok, res.err


def _apply_run(index: TempIndex, patches: Sequence[Patch]) -> GitResult:
    """``patches`` applied on ``index`` in one call (all or nothing)."""
    return index.apply_cached([str(p.path) for p in patches], purpose="apply the series")


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


def _states_of(
    index: TempIndex,
    back: Callable[[], None],
    patches: Sequence[Patch],
    err: str,
    ref: str,
    rule: ApplyRule = "exact",
) -> tuple[dict[str, Applied], dict[str, list[HunkPlacement]]]:
    """exact/offset for every patch of a run that applied on ``index`` (``back`` brings
    it to where the run started), from its one call's output; and where each hunk of
    each patch landed."""
    parts = _split_output(patches, err)
    states: dict[str, Applied] = {}
    if parts is None:  # cannot tell whose offset it is: replay one by one
        back()
        attempts = [try_patch(index, p) for p in patches]
    else:
        attempts = [
            read_git_apply(p.parsed, part, True, False)
            for p, part in zip(patches, parts, strict=True)
        ]
    for patch, attempt in zip(patches, attempts, strict=True):
        states[patch.name] = _applied(classify(patch, attempt, None, False, ref, rule))
    if rule == "dpkg":
        states.update(_short_of_their_ends(index, back, patches, attempts))
    return states, {p.name: a.placements for p, a in zip(patches, attempts, strict=True)}


def _short_of_their_ends(
    index: TempIndex, back: Callable[[], None], patches: Sequence[Patch], attempts: list[Attempt]
) -> dict[str, Applied]:
    """Under dpkg-source's rule: the patches of a run git placed at their own lines
    with a hunk GNU patch -F0 holds to its file's end, short of it (verify calls them
    ``fuzz``): dpkg-source refuses them as they are, and a refresh regenerates them
    (``rebased``), so they are ``offset`` here, as a patch a refresh moves is. The
    lengths are the run's start's (``back`` brings it back) followed along the run."""
    series = [
        (end_hunks(p.parsed), line_changes(p.parsed), a.placements)
        for p, a in zip(patches, attempts, strict=True)
    ]
    if not any(ends for ends, _, _ in series):
        return {}
    back()

    def lengths(paths: list[str]) -> dict[str, int]:
        blobs = index.blobs([f":{p}" for p in paths], purpose="count the lines of files")
        return {name[1:]: line_count(data) for name, data in blobs.items()}

    found = {}
    while (hit := first_past_the_end(series, lengths)) is not None:
        position, path, number, total = hit
        found[patches[position].name] = Applied(
            "offset",
            f"{path}: hunk {number} ended its file when the patch was made; GNU patch -F0, "
            f"as dpkg-source runs it, holds it to the file's end, line {total}, and refuses "
            "it where it is: a refresh regenerates it",
        )
        series[position] = ((), *series[position][1:])
    return found


def _applied(verdict: PatchVerdict) -> Applied:
    if verdict.status == "exact":
        return Applied("exact")
    return Applied("offset", verdict.message)


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


def _longest_run(
    index: TempIndex, back: Callable[[], None], patches: Sequence[Patch], err: str
) -> tuple[int, str]:
    """(length, its output) of the longest run from the start of ``patches`` that applies
    on ``index`` as ``back`` brings it, given the whole run's failing output ``err``:
    read from the output and confirmed with one call, or bisected when the output does
    not tell. The index is left with that run applied."""

    def run(count: int) -> tuple[bool, str]:
        back()
        if not count:
            return True, ""
        res = _apply_run(index, patches[:count])
        return res.ok, res.err

    guess = _first_failure(patches, err)
    if guess is not None:
        ok, out = run(guess)
        if ok:
            return guess, out
    good, good_err, bad = 0, "", guess if guess is not None else len(patches)
    while bad - good > 1:
        mid = (good + bad) // 2
        ok, out = run(mid)
        if ok:
            good, good_err = mid, out
        else:
            bad = mid
    run(good)
    return good, good_err


def cumulative_apply(
    git: Git,
    target: Target,
    patches: Sequence[Patch],
    rule: ApplyRule = "exact",
    *,
    keep_going: bool = False,
    present: Presence | None = None,
) -> dict[str, Applied]:
    """How each of ``patches`` meets ``target`` applied in series order, as a refresh
    would: one call when the whole series applies; otherwise the culprit is read from
    git's output and confirmed (a bisection of the run when it cannot be read).
    ``rule``: the fork's apply rule (dpkg-source's accepts hand-edited hunk headers).
    A patch git refuses only for its anchors, which GNU patch places at an offset, is
    applied there and the series goes on (forktool.engine.apply.anchors), as verify
    does. With ``keep_going``, the patches after a conflict are applied in one call on
    the tree without the conflicting ones, and so on after each conflict; their states
    name the patches left out (``without``). ``present``: see :class:`Presence`."""
    states: dict[str, Applied] = {}
    failed: list[str] = []
    rest = list(patches)
    with git.temp_index() as index:
        _load(index, target.commit, target.overlay)
        while rest:
            stop = next(
                (i for i, p in enumerate(rest) if precheck(p, "git", rule=rule) is not None), None
            )
            candidates = rest[:stop] if stop is not None else rest
            back = index.snapshot()  # the tree the patches so far give
            res = _apply_run(index, candidates)
            good, good_err = len(candidates), res.err
            if not res.ok:
                good, good_err = _longest_run(index, back, candidates, res.err)
            done = index.snapshot()
            found, landed = _states_of(index, back, candidates[:good], good_err, target.name, rule)
            done()
            twice = _made_twice(index, back, candidates[:good], found, landed)
            if twice is not None:  # the run stands up to it; it is a conflict, as in a refresh
                good = twice[0]
            for patch in candidates[:good]:
                states[patch.name] = _without(found[patch.name], failed)
            rest = rest[good:]
            if not rest:
                break
            state = twice[1] if twice is not None else _stopped_at(index, target, rest[0], rule)
            if present is not None and rest[0].name in present.patches:
                state = present.there(index, rest[0], target.name, state)
            states[rest[0].name] = _without(state, failed)
            if state.state != "conflict":  # placed where GNU patch places it: go on
                rest = rest[1:]
                continue
            if not keep_going:
                for patch in rest[1:]:
                    states[patch.name] = Applied(
                        "not-tried", f"after the conflict of {rest[0].name}"
                    )
                break
            failed.append(rest[0].name)
            rest = rest[1:]
    return states


@dataclass
class Presence:
    """The patches whose change the witnesses say may be in the target (a cherry-pick or
    a patch-id: verdict ``revisit``), and how to build every patch's pre-image (the
    series on the pin, built the first time one is needed)."""

    patches: frozenset[str]
    pin: tuple[str, str]  # (name, commit) of the tree the series applies on
    series: Sequence[Patch]
    rule: ApplyRule = "exact"
    _pre: PreImages | None = None

    def there(self, index: TempIndex, patch: Patch, target: str, state: Applied) -> Applied:
        """``state`` (``patch`` stopped on ``index``), or "already applied" when it is a
        conflict and its 3-way merge onto the tree there changes nothing."""
        if state.state != "conflict" or says_already_applied(state.message):
            return state
        if self._pre is None:
            name, commit = self.pin
            self._pre = PreImages(index, commit, self.series, name, self.rule)
        merge = merge_onto(index, index.write_tree(), patch, self._pre)
        return (
            Applied("conflict", absorbed_message(target, self.pin[0])) if merge.absorbed else state
        )


def _made_twice(
    index: TempIndex,
    back: Callable[[], None],
    run: Sequence[Patch],
    found: dict[str, Applied],
    landed: dict[str, list[HunkPlacement]],
) -> tuple[int, Applied] | None:
    """The first patch of ``run`` (applied on ``index``; ``back`` brings the tree before
    it) that applied only at an offset (``landed``: where its hunks went) but is there
    already: a conflict, as a refresh says (forktool.engine.apply.attempt.already_there),
    with ``index`` left holding the run before it; None, the index untouched, if none."""
    after = index.snapshot()
    for position, patch in enumerate(run):
        moved = landed[patch.name]
        if not any(p.offset for p in moved):
            continue
        back()
        if position:
            _apply_run(index, run[:position])
        if already_there(index, patch, moved):
            return position, Applied("conflict", made_twice(found[patch.name].message))
    after()
    return None


def _without(state: Applied, failed: Sequence[str]) -> Applied:
    return replace(state, without=tuple(failed)) if failed else state


def _stopped_at(index: TempIndex, target: Target, patch: Patch, rule: ApplyRule) -> Applied:
    """The state of the patch git stopped at, on ``index`` (the patches before it
    applied): exact or offset when git refused it only for its anchors (then applied
    there, forktool.engine.apply.anchors), else a conflict and what it says: "already
    applied" when the target has the whole change (it reverse-applies exactly), as
    verify and a refresh say, rather than that its lines are not there."""
    early = precheck(patch, "git", rule=rule)
    if early is not None:
        return Applied("conflict", early.message)
    there, moved = reverse_state(index, patch)
    placed = None if there else placed_without_anchors(index, patch)
    if placed is not None:
        return _applied(classify(patch, placed, None, False, target.name, rule))
    attempt = try_patch(index, patch, check=True)
    # with fuzz, its message says so, as verify's does (the cell is a conflict all the same)
    fuzzy = fuzz_probe(index, patch) if not there and attempt.fuzz_may_place else None
    verdict = classify(patch, attempt, fuzzy, there, target.name, rule, reverse_moved=moved)
    return Applied("conflict", verdict.message)
