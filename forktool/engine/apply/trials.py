"""One patch judged on a plain directory's scratch tree, by either engine: tried on a
throwaway copy of its files (:func:`trial`), classified, and applied there when it is
exact, or at an offset under dpkg-source's rule (:func:`judge`); the directory side of
:mod:`forktool.engine.apply.target`."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from forktool.config import ApplyRule
from forktool.engine.apply.anchors import gnu_anchors_hold, short_of_its_end
from forktool.engine.apply.appliers import Applier, GnuPatchApplier, touched
from forktool.engine.apply.attempt import classify, looks_alike, made_twice_verdict
from forktool.engine.apply.scratch import scratch_copy
from forktool.engine.apply.verdict import Attempt, PatchVerdict, acceptable, allows_offset, is_exact
from forktool.errors import FatalError
from forktool.fork import Patch
from forktool.model.text import line_count


def trial(
    applier: Applier,
    scratch: Path,
    patch: Patch,
    *,
    reverse: bool = False,
    fuzz: bool = False,
    unanchored: bool = False,
) -> Attempt:
    """Try one patch on a throwaway copy of its files: a failed GNU patch run can
    leave hunks half-applied, so nothing is ever tried on the scratch tree itself."""
    with scratch_copy(scratch, touched([patch])) as probe:
        return applier.attempt(probe, patch, reverse=reverse, fuzz=fuzz, unanchored=unanchored)


def _fuzz_trial(applier: Applier, scratch: Path, patch: Patch, reverse: bool) -> Attempt:
    """The patch tried with fuzz: by GNU patch at its default fuzz whatever the engine
    (as verify's :func:`~forktool.engine.apply.attempt.fuzz_probe`); by the git
    applier's reduced context only when GNU patch is not installed."""
    if applier.name == "git":
        try:
            return trial(GnuPatchApplier(), scratch, patch, reverse=reverse, fuzz=True)
        except FatalError:  # GNU patch is not installed
            pass
    return trial(applier, scratch, patch, reverse=reverse, fuzz=True)


def _short_of_its_end(scratch: Path, patch: Patch, attempt: Attempt) -> PatchVerdict | None:
    """The refusal of a patch git applied with a hunk short of its file's end, where
    GNU patch (dpkg-source) holds it (forktool.engine.apply.anchors); None when none."""

    def base_lines(paths: list[str]) -> dict[str, int]:
        counts = {path: _lines_in(scratch, path) for path in paths}
        return {path: count for path, count in counts.items() if count is not None}

    return short_of_its_end(patch, attempt, base_lines)


def _lines_in(scratch: Path, path: str) -> int | None:
    """How many lines ``path`` has on the scratch tree; None when it is not there."""
    try:
        return line_count((scratch / path).read_bytes())
    except OSError:
        return None


def _placed(applier: Applier, scratch: Path, patch: Patch, reverse: bool) -> Attempt | None:
    """The patch tried without git's anchors, when GNU patch's anchors allow where
    every hunk went (forktool.engine.apply.anchors); None otherwise."""
    if applier.gnu_anchors:
        return None  # its strict try already placed the hunks as GNU patch does
    probe = trial(applier, scratch, patch, reverse=reverse, unanchored=True)
    lines_of = partial(_lines_in, scratch)
    return probe if gnu_anchors_hold(patch.parsed, probe, lines_of, reverse) else None


def judge(
    applier: Applier,
    scratch: Path,
    patch: Patch,
    base: str,
    *,
    reverse: bool = False,
    rule: ApplyRule = "exact",
) -> PatchVerdict:
    """Classify one patch on the scratch tree, and apply it there when it is exact (or,
    under dpkg-source's ``rule``, applies at an offset without fuzz)."""
    attempt = trial(applier, scratch, patch, reverse=reverse)
    if attempt.ok and rule == "dpkg" and not reverse and not applier.gnu_anchors:
        if short := _short_of_its_end(scratch, patch, attempt):
            return short
    fuzzy: Attempt | None = None
    placed: Attempt | None = None
    reverse_ok = False
    if not attempt.ok:
        reverse_ok = is_exact(trial(applier, scratch, patch, reverse=not reverse))
        if not reverse_ok:
            placed = _placed(applier, scratch, patch, reverse)
            if placed is None and attempt.fuzz_may_place:
                fuzzy = _fuzz_trial(applier, scratch, patch, reverse)
    verdict = classify(patch, attempt, fuzzy, reverse_ok, base, rule, placed)
    if verdict.status == "offset" and not reverse:  # there already? (as verify asks)
        back = trial(applier, scratch, patch, reverse=True)
        if looks_alike(verdict.hunks, back):
            return made_twice_verdict(verdict)
    if acceptable(verdict.status, allows_offset(rule)):
        applier.attempt(scratch, patch, reverse=reverse, unanchored=placed is not None)
    return verdict
