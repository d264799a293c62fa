"""Does a patch apply on a tree, forward and in reverse, whole and hunk by hunk: the
content witness that absorbed (and resolve's in-pin check) weigh beside ancestry."""

from __future__ import annotations

import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from forktool.config import ApplyRule
from forktool.engine.apply.applier_output import hunks_of, read_git_apply
from forktool.engine.apply.attempt import classify, looks_alike, try_patch
from forktool.engine.apply.precheck import precheck
from forktool.engine.apply.verdict import Attempt, applies_shifted, is_exact
from forktool.fork import Patch
from forktool.git import Git, TempIndex

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
    common case, one check per patch only if the bulk output cannot be matched up."""
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
            message = (
                "" if is_exact(fwd) else classify(patch, fwd, None, is_exact(back), base).message
            )
            shifted = applies_shifted(back)
            per_hunk = _forward_only(patch, fwd, back) if forward and backward else None
            # git never fuzzes without -C: an apply that succeeds is exact or shifted; a
            # shifted one that reverse-applies nearer its own lines is no witness
            ahead = applies_shifted(fwd) and not looks_alike(fwd.placements, back)
            states[patch.name] = ApplyState(
                is_exact(fwd), is_exact(back), message, shifted, ahead, per_hunk
            )
    return states


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
