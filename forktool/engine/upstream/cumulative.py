"""How a series meets a target when applied as a refresh would: the patches in series
order, cumulatively, in ONE ``git apply --cached`` call on a temporary index holding the
target's tree. When that call fails, the longest prefix that applies is read from git's
output (or found by bisection); the first patch after it is the ``conflict`` and the
rest are ``not-tried`` (with ``keep_going``: tried again without the conflicting ones).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from forktool.config import ApplyRule
from forktool.engine.apply.applier_output import read_git_apply
from forktool.engine.apply.attempt import classify, try_patch
from forktool.engine.apply.precheck import precheck
from forktool.engine.upstream.targets import Entry, Target
from forktool.fork import Patch
from forktool.git import Git, TempIndex

ApplyState = Literal["exact", "offset", "conflict", "absorbed", "not-tried"]


@dataclass(frozen=True)
class Applied:
    state: ApplyState
    message: str = ""
    without: tuple[str, ...] = ()  # tried on the tree without these (keep going)


def _load(index: TempIndex, commit: str, overlay: Sequence[Entry]) -> None:
    index.read_tree(f"{commit}^{{tree}}")
    index.add_entries(overlay)


def apply_prefix(
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
        ok, out = apply_prefix(index, commit, patches[:guess], overlay)
        if ok:
            return guess, out
    good, good_err, bad = 0, "", guess if guess is not None else len(patches)
    while bad - good > 1:
        mid = (good + bad) // 2
        ok, out = apply_prefix(index, commit, patches[:mid], overlay)
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
            ok, err = apply_prefix(index, target.commit, [*kept, *candidates], overlay)
            if ok:
                good, good_err = len(candidates), err
            else:
                good, good_err = _longest_prefix(
                    index, target.commit, [*kept, *candidates], err, overlay
                )
                good = max(0, good - len(kept))
            applied = [*kept, *candidates[:good]]
            found = _states_of_prefix(
                index, target.commit, applied, good_err, target.name, overlay, rule
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
    apply_prefix(index, target.commit, before, target.overlay)
    attempt = try_patch(index, patch, check=True)
    return classify(patch, attempt, None, False, target.name, rule).message
