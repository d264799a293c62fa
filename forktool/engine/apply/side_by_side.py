"""Verify side by side: a series' file diffs in file-disjoint bins, each through git in
its own temporary index at the same time (:mod:`forktool.engine.apply.bins`), proven
equal to the serial answer.

File diffs that touch no common path commute: applying the series in order gives every
file the same content as applying, in order, only the file diffs that touch it. So the
bins' git runs give the serial result when git's own -v output proves the bins
disjoint (the paths it names, each bin's against the other's), each bin's revert
restores the base tree, and every patch's verdict is read from the output of its
parts, exactly as from one call. Anything else (a failure, a mode warning, output
that does not match, a revert that does not restore, an outline the parse does not
confirm) falls back to the series in one call, so verdicts and messages are the
serial path's own.
"""

from __future__ import annotations

from collections.abc import Sequence

from forktool.config import ApplyRule
from forktool.engine import Progress
from forktool.engine.apply.applier_output import read_git_apply
from forktool.engine.apply.attempt import classify
from forktool.engine.apply.bins import Diffs, Part, StartedBins, outlines_of, parents, running_bins
from forktool.engine.apply.survey import (
    GIT_MODE_WARNING,
    Survey,
    applied_outputs,
    exact_verdict,
    survey_rest,
)
from forktool.engine.apply.verdict import PatchVerdict
from forktool.fork import Patch
from forktool.git import TempIndex


def _named_paths(err: str) -> set[str]:
    """Every path git's -v output says it checked (both sides of a rename)."""
    named: set[str] = set()
    for line in err.splitlines():
        if line.startswith("Checking patch ") and line.endswith("..."):
            named.update(line[len("Checking patch ") : -3].split(" => "))
    return named


def _disjoint(named: Sequence[set[str]]) -> bool:
    """No bin names a path that another bin names, or that is a directory of one."""
    closures = [{key for path in paths for key in (path, *parents(path))} for paths in named]
    return not any(
        not paths.isdisjoint(closure)
        for number, paths in enumerate(named)
        for other, closure in enumerate(closures)
        if number != other
    )


def _part_outputs(parts: Sequence[Part], err: str) -> list[str] | None:
    """The -v output of each part (all applied), or None when it does not match."""
    out = applied_outputs([part.files for part in parts], err)
    return out if out is not None and len(out) == len(parts) else None


def verify_side_by_side(
    index: TempIndex,
    base_tree: str,
    patches: Sequence[Patch],
    surveys: list[Survey],
    base: str,
    workers: int,
    rule: ApplyRule = "exact",
    progress: Progress | None = None,
    started: StartedBins | None = None,
) -> tuple[list[PatchVerdict], bool] | None:
    """(verdicts, round trip) from the series' file diffs in disjoint bins side by
    side, or None when that does not prove the serial answer (the caller then runs
    the series in one call; ``index``, still the base tree, is not touched here).

    The bins are planned from each patch's outline when every patch has one, so git
    starts at once and the patches are surveyed (into ``surveys``) while it works; the
    answer stands only if every survey confirms its outline. Otherwise the patches are
    surveyed first and the bins planned from the surveys. ``started``: bins already
    under way on these patches (planned before the fork was loaded)."""
    if started is not None:
        return _bins_answer(started, base_tree, patches, surveys, base, rule, progress)
    outlines = outlines_of(patches)
    if outlines is None:
        survey_rest(patches, surveys, rule, progress)
        if any(s.early is not None for s in surveys):
            return None
        outlines = [s.diffs for s in surveys]
    with running_bins(index, patches, workers, base_tree, outlines) as bins:
        if bins is None:
            return None
        return _bins_answer(bins, base_tree, patches, surveys, base, rule, progress)


def _bins_answer(
    bins: StartedBins,
    base_tree: str,
    patches: Sequence[Patch],
    surveys: list[Survey],
    base: str,
    rule: ApplyRule,
    progress: Progress | None,
) -> tuple[list[PatchVerdict], bool] | None:
    """The answer of bins under way, once every patch is surveyed (None: see
    :func:`verify_side_by_side`). The verdicts are read from the forward output while
    the bins revert; they stand once every revert wrote the base tree again."""
    survey_rest(patches, surveys, rule, progress)
    if any(s.early is not None for s in surveys) or not _outlines_hold(bins.outlines, surveys):
        bins.stop()
        return None
    forward = bins.forwards()
    done = None
    if all(out is not None for out in forward):
        done = _bin_verdicts(
            patches, surveys, bins.parts, [out or "" for out in forward], base, rule
        )
    if done is None:
        bins.stop()
    bins.results()
    if done is None or any(run.tree != base_tree for run in bins.runs):
        return None  # a bin did not apply, or its revert did not restore the base
    return done


def _outlines_hold(outlines: Sequence[Diffs], surveys: Sequence[Survey]) -> bool:
    """Each parse has the outline's file diffs, at the same lines, and names no path
    its outline lacks (so the bins planned from the outlines split the parse too)."""
    for outline, survey in zip(outlines, surveys, strict=True):
        if [line for line, _ in outline] != [line for line, _ in survey.diffs]:
            return False
        for (_, guessed), (_, parsed) in zip(outline, survey.diffs, strict=True):
            if not set(parsed) <= set(guessed):
                return False
    return True


def _bin_verdicts(
    patches: Sequence[Patch],
    surveys: Sequence[Survey],
    parts: Sequence[Sequence[Part]],
    forward: Sequence[str],
    base: str,
    rule: ApplyRule,
) -> tuple[list[PatchVerdict], bool] | None:
    """Every patch's verdict from its parts' output, as from one call; None when git's
    output does not prove the bins disjoint or does not match the parts."""
    if any(GIT_MODE_WARNING.search(err) for err in forward):
        return None
    if not _disjoint([_named_paths(err) for err in forward]):
        return None
    said: dict[int, list[str]] = {}
    for part, err in zip(parts, forward, strict=True):
        outputs = _part_outputs(part, err)
        if outputs is None:
            return None
        for piece, output in zip(part, outputs, strict=True):
            said.setdefault(piece.patch, []).append(output)
    verdicts = []
    for position, (patch, survey) in enumerate(zip(patches, surveys, strict=True)):
        output = "\n".join(said.get(position, []))
        if "offset" in output:
            attempt = read_git_apply(patch.parsed, output, True, False)
            verdicts.append(classify(patch, attempt, None, False, base, rule))
        else:
            verdicts.append(exact_verdict(patch, survey))
    return verdicts, True
