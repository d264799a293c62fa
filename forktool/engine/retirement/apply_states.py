"""Does a patch apply on a tree, forward and in reverse, whole and hunk by hunk: the
content witness that absorbed (and resolve's in-pin check) weigh beside ancestry."""

from __future__ import annotations

import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from forktool.config import ApplyRule
from forktool.engine.apply.applier_output import hunks_of, read_git_apply
from forktool.engine.apply.attempt import classify, looks_alike, try_patch
from forktool.engine.apply.precheck import precheck
from forktool.engine.apply.series_run import apply_series
from forktool.engine.apply.verdict import Attempt, applies_shifted, is_exact
from forktool.fork import Patch
from forktool.git import Git, TempIndex
from forktool.model.patchfile import touched_paths

AFTER_EARLIER = "after the series' earlier patches"
_PATCH_FAILED = re.compile(r"^error: patch failed: (.+):[0-9]+$")


def substantial(hunks: tuple[int, int]) -> bool:
    """A substantial part of a patch: at least half of its hunks."""
    still, total = hunks
    return still > 0 and 2 * still >= total


@dataclass(frozen=True)
class ApplyState:
    """How one patch applies on the tag's tree, each direction checked on its own."""

    forward: bool  # applies exactly
    reverse: bool  # reverse-applies exactly: the change is present
    message: str  # why the forward apply is not exact ("" when it is)
    reverse_shifted: bool = False  # reverse-applies, but only at shifted lines
    # applies forward, but only at shifted lines, without fuzz (drift, not a conflict)
    forward_shifted: bool = False
    # hunks that apply forward (at any offset) and do not reverse-apply, and all hunks;
    # None when the appliers' output did not tell hunk by hunk
    hunks_forward_only: tuple[int, int] | None = None


def _attempts_in_bulk(
    index: TempIndex, patches: Sequence[Patch], reverse: bool
) -> dict[str, Attempt] | None:
    """Check every patch against the index in ONE ``git apply --check --reject -v`` call.

    ``--check`` checks each file against the original tree and ``--reject`` keeps
    going past a failure; the ``Checking patch`` lines are matched to the patches'
    file diffs in order. None when the output cannot be matched up exactly.
    """
    res = index.check_each(
        [str(p.path) for p in patches], reverse=reverse, purpose="check the patches"
    )
    segments: list[list[str]] = []
    for line in res.err.splitlines():
        if line.startswith("Checking patch "):
            segments.append([line])
        elif not segments:
            return None  # git refused the input before checking any file
        else:
            segments[-1].append(line)
            # Without --reject git follows a failed hunk with this line; say it too, so
            # the output reads exactly as a single-patch check would.
            if match := _PATCH_FAILED.match(line):
                segments[-1].append(f"error: {match.group(1)}: patch does not apply")
    # git apply -R checks each input's file diffs last to first.
    expected = [d for p in patches for d in (p.parsed.files[::-1] if reverse else p.parsed.files)]
    if len(segments) != len(expected):
        return None
    for segment, diff in zip(segments, expected, strict=True):
        name = segment[0].removeprefix("Checking patch ").removesuffix("...")
        if name not in (diff.new_path, diff.old_path) and " => " not in name:
            return None
    attempts: dict[str, Attempt] = {}
    position = 0
    for patch in patches:
        lines = [
            line for s in segments[position : position + len(patch.parsed.files)] for line in s
        ]
        position += len(patch.parsed.files)
        failed = any(line.startswith("error: ") for line in lines)
        attempts[patch.name] = read_git_apply(patch.parsed, "\n".join(lines), not failed, reverse)
    return attempts


def apply_states(
    git: Git, treeish: str, patches: Sequence[Patch], base: str, rule: ApplyRule = "exact"
) -> dict[str, ApplyState]:
    """Forward and reverse exactness of every patch on ``treeish``: two git calls in the
    common case, one check per patch only if the bulk output cannot be matched up.

    A patch that touches a file an earlier patch of the series touches too is judged
    as the series meets it: on the tree with the earlier patches that apply there
    applied first (:func:`_in_series_order`). Alone it would meet lines the series
    never shows it (two patches that append to one file), and its evidence would say
    it no longer applies where the series applies exactly."""
    states: dict[str, ApplyState] = {}
    testable: list[Patch] = []
    for patch in patches:
        early = precheck(patch, "git", rule=rule)  # dpkg's rule tries hand-edited headers
        if early is not None:
            states[patch.name] = ApplyState(False, False, early.message)
        else:
            testable.append(patch)
    if not testable:
        return states
    with git.temp_index(treeish) as index, ThreadPoolExecutor(max_workers=1) as pool:
        # Both checks only read the index: run the reverse one beside the forward one.
        backward_f = pool.submit(_attempts_in_bulk, index, testable, reverse=True)
        forward = _attempts_in_bulk(index, testable, reverse=False)
        backward = backward_f.result()
        for patch in testable:
            fwd = forward[patch.name] if forward else try_patch(index, patch, check=True)
            back = (
                backward[patch.name]
                if backward
                else try_patch(index, patch, reverse=True, check=True)
            )
            per_hunk = _forward_only(patch, fwd, back) if forward and backward else None
            states[patch.name] = _state(patch, fwd, back, base, per_hunk)
        _in_series_order(index, patches, testable, states, base)  # index: still treeish
    return states


def _state(
    patch: Patch, fwd: Attempt, back: Attempt, base: str, per_hunk: tuple[int, int] | None
) -> ApplyState:
    message = "" if is_exact(fwd) else classify(patch, fwd, None, is_exact(back), base).message
    # git never fuzzes without -C: an apply that succeeds is exact or shifted; a
    # shifted one that reverse-applies nearer its own lines is no witness
    ahead = applies_shifted(fwd) and not looks_alike(fwd.placements, back)
    return ApplyState(
        is_exact(fwd), is_exact(back), message, applies_shifted(back), ahead, per_hunk
    )


def _in_series_order(
    index: TempIndex,
    patches: Sequence[Patch],
    testable: Sequence[Patch],
    states: dict[str, ApplyState],
    base: str,
) -> None:
    """Judge again, in series order, each patch that touches a file an earlier patch
    touches: on ``index`` (the tag's tree) with every earlier patch that applies there, exactly or at
    an offset (as the series meets it: alone or after the ones before it), applied
    first. A patch whose change the tree has already (it reverse-applies) is not
    applied again."""
    dependent = _dependent(patches)
    if not dependent:
        return
    pending: list[Patch] = []  # applies there: goes onto the index before the next check
    stacked = False  # whether the index holds an earlier patch
    can_test = {p.name for p in testable}
    for patch in patches:
        if patch.name in dependent and patch.name in can_test:
            if pending and not _applied(index, pending):
                return  # the earlier patches do not go on together: keep what was found
            stacked = stacked or bool(pending)
            pending = []
            state = _checked(index, patch, base)
            if stacked and state.message:
                state = replace(state, message=f"{AFTER_EARLIER}: {state.message}")
            states[patch.name] = state
        if states[patch.name].forward or states[patch.name].forward_shifted:
            pending.append(patch)  # at an offset too: a refresh keeps it there


def _checked(index: TempIndex, patch: Patch, base: str) -> ApplyState:
    """One patch's state on ``index`` as it is now (both directions, hunk by hunk)."""
    forward = _attempts_in_bulk(index, [patch], reverse=False)
    backward = _attempts_in_bulk(index, [patch], reverse=True)
    fwd = forward[patch.name] if forward else try_patch(index, patch, check=True)
    back = backward[patch.name] if backward else try_patch(index, patch, reverse=True, check=True)
    per_hunk = _forward_only(patch, fwd, back) if forward and backward else None
    return _state(patch, fwd, back, base, per_hunk)


def _dependent(patches: Sequence[Patch]) -> set[str]:
    """The patches that touch a path an earlier patch of the series touches."""
    seen: set[str] = set()
    found: set[str] = set()
    for patch in patches:
        paths = set(touched_paths(patch.parsed))
        if paths & seen:
            found.add(patch.name)
        seen |= paths
    return found


def _applied(index: TempIndex, patches: Sequence[Patch]) -> bool:
    """Apply ``patches`` onto ``index`` in one call; whether they all went on."""
    return apply_series(index, patches, reverse=False)[0]


def _forward_only(patch: Patch, fwd: Attempt, back: Attempt) -> tuple[int, int] | None:
    """(hunks that apply forward and do not reverse-apply, all hunks), read from the
    ``--reject`` checks, which go on past a failed hunk; None when a failure was not a
    hunk's (git's output does not tell which hunks would have applied)."""
    if any(not a.ok and a.reason not in ("context", "missing", "exists") for a in (fwd, back)):
        return None
    hunks = hunks_of(patch.parsed)
    if len(set(hunks)) != len(hunks):  # one file in two diffs: git names hunks by file
        return None
    forward_failed, backward_failed = set(fwd.rejected), set(back.rejected)
    still = [h for h in hunks if h not in forward_failed and h in backward_failed]
    return len(still), len(hunks)
