"""Verify side by side: a series' file diffs in file-disjoint bins, each through git in
its own temporary index at the same time, proven equal to the serial answer."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from forktool.config import ApplyRule
from forktool.engine import Progress
from forktool.engine.apply.applier_output import read_git_apply
from forktool.engine.apply.attempt import classify
from forktool.engine.apply.series_run import SeriesRun
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
from forktool.model.patch_text import diff_outline


def default_jobs() -> int:
    """git processes verify runs side by side: two where the machine has two cores or
    more and one of them is free (a 1-minute load average below the cores); one when
    every core is busy already, where a second process only adds its own start-up."""
    cores = os.cpu_count() or 1
    if cores < 2 or os.getloadavg()[0] >= cores:
        return 1
    return 2


#
# File diffs that touch no common path commute: applying the series in order gives every
# file the same content as applying, in order, only the file diffs that touch it. So
# the series' file diffs split into groups closed under "touches a path another one
# touches" (a path and the directories above it count as one: a diff deleting file
# ``a`` and one creating ``a/b`` do not commute; a rename touches both its paths), and
# the groups go, in two bins of about equal size, through git side by side: each bin
# in its own index copied from the base, as one part-patch per patch holding that
# patch's file diffs of the bin, byte for byte. git's own -v output then proves the
# bins disjoint (the paths it names, each bin's against the other's), each bin's
# revert restores the base tree, and every patch's verdict is read from the output of
# its parts, exactly as from one call. Anything else (a failure, a mode warning,
# output that does not match, a revert that does not restore) falls back to the
# series in one call, so verdicts and messages are the serial path's own.
PARALLEL_MIN_PATCHES = 16  # below this the second process costs more than it saves


PARALLEL_MIN_SHARE = 0.5  # the lightest bin's lines against an even split, else serial


def _parents(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def file_groups(paths: Sequence[Sequence[str]]) -> list[list[int]]:
    """Positions of file diffs (each given by the paths it touches) in groups that
    touch no common path, a path's directories included; each group in order, the
    groups by their first member."""
    parent = list(range(len(paths)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    for position, touched in enumerate(paths):
        for path in touched:
            if path in owner:
                parent[find(position)] = find(owner[path])
            else:
                owner[path] = position
    for path, position in owner.items():
        for directory in _parents(path):
            if directory in owner:
                parent[find(position)] = find(owner[directory])
    groups: dict[int, list[int]] = {}
    for position in range(len(paths)):
        groups.setdefault(find(position), []).append(position)
    return sorted(groups.values(), key=lambda g: g[0])


@dataclass(frozen=True)
class _Unit:
    """One file diff of the series: its patch's position, its own within the patch,
    and its length in lines (how bins are weighed)."""

    patch: int
    diff: int
    weight: int


# Each file diff of a patch: its first line and the paths it touches (Survey.diffs, or
# a patch's diff_outline before its parse).
Diffs = tuple[tuple[int, tuple[str, ...]], ...]


def units_of(
    patches: Sequence[Patch], diffs: Sequence[Diffs]
) -> tuple[list[_Unit], list[tuple[str, ...]]]:
    units: list[_Unit] = []
    paths: list[tuple[str, ...]] = []
    for position, outline in enumerate(diffs):
        starts = [line for line, _ in outline]
        ends = [*starts[1:], starts[-1] + max(1, patches[position].size // 40)] if starts else []
        for number, ((line, touched), end) in enumerate(zip(outline, ends, strict=True)):
            units.append(_Unit(position, number, max(1, end - line)))
            paths.append(touched)
    return units, paths


def bins_of(
    units: Sequence[_Unit], paths: Sequence[Sequence[str]], workers: int
) -> list[list[int]] | None:
    """The file diffs' groups packed into ``workers`` bins by lines (largest group
    first, into the lightest bin), each bin in series order; None when the lightest
    bin holds less than :data:`PARALLEL_MIN_SHARE` of an even split (one long chain
    of changes to the same files gains nothing side by side)."""
    groups = file_groups(paths)
    if len(groups) < workers:
        return None
    bins: list[list[int]] = [[] for _ in range(workers)]
    loads = [0] * workers
    for group in sorted(groups, key=lambda g: -sum(units[i].weight for i in g)):
        lightest = loads.index(min(loads))
        bins[lightest] += group
        loads[lightest] += sum(units[i].weight for i in group)
    if min(loads) < PARALLEL_MIN_SHARE * sum(loads) / workers:
        return None
    return [sorted(b) for b in bins]


@dataclass(frozen=True)
class _Part:
    """The file diffs of one patch that fall in one bin, written as a patch file."""

    patch: int
    path: Path
    files: int
    size: int


def _write_parts(
    folder: Path,
    patches: Sequence[Patch],
    diffs: Sequence[Diffs],
    units: Sequence[_Unit],
    bins: Sequence[Sequence[int]],
) -> list[list[_Part]]:
    """Each bin's part-patches in series order: a patch's file diffs of the bin, their
    lines byte for byte (a diff runs from its first line to the next diff's)."""
    wanted: list[dict[int, list[int]]] = [{} for _ in bins]
    for number, members in enumerate(bins):
        for unit in (units[i] for i in members):
            wanted[number].setdefault(unit.patch, []).append(unit.diff)
    parts: list[list[_Part]] = [[] for _ in bins]
    for position, patch in enumerate(patches):
        owners = [number for number in range(len(bins)) if position in wanted[number]]
        if not owners:
            continue
        lines = patch.read().split(b"\n")
        starts = [line - 1 for line, _ in diffs[position]]
        ends = [*starts[1:], len(lines)]
        for number in owners:
            chunks = []
            for diff in wanted[number][position]:
                piece = b"\n".join(lines[starts[diff] : ends[diff]])
                chunks.append(piece if piece.endswith(b"\n") else piece + b"\n")
            path = folder / f"b{number}-{position}.patch"
            data = b"".join(chunks)
            path.write_bytes(data)
            parts[number].append(_Part(position, path, len(wanted[number][position]), len(data)))
    return parts


def _named_paths(err: str) -> set[str]:
    """Every path git's -v output says it checked (both sides of a rename)."""
    named: set[str] = set()
    for line in err.splitlines():
        if line.startswith("Checking patch ") and line.endswith("..."):
            named.update(line[len("Checking patch ") : -3].split(" => "))
    return named


def _disjoint(named: Sequence[set[str]]) -> bool:
    """No bin names a path that another bin names, or that is a directory of one."""
    closures = [{key for path in paths for key in (path, *_parents(path))} for paths in named]
    return not any(
        not paths.isdisjoint(closure)
        for number, paths in enumerate(named)
        for other, closure in enumerate(closures)
        if number != other
    )


def _part_outputs(parts: Sequence[_Part], err: str) -> list[str] | None:
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
) -> tuple[list[PatchVerdict], bool] | None:
    """(verdicts, round trip) from the series' file diffs in disjoint bins side by
    side, or None when that does not prove the serial answer (the caller then runs
    the series in one call; ``index``, still the base tree, is not touched here).

    The bins are planned from each patch's :func:`diff_outline` when every patch has
    one, so git starts at once and the patches are surveyed (into ``surveys``) while
    it works; the answer stands only if every survey confirms its outline. Otherwise
    the patches are surveyed first and the bins planned from the surveys."""
    outlines = _outlines(patches)
    if outlines is None:
        survey_rest(patches, surveys, rule, progress)
        if any(s.early is not None for s in surveys):
            return None
        outlines = [s.diffs for s in surveys]
    units, paths = units_of(patches, outlines)
    bins = bins_of(units, paths, workers)
    if bins is None:
        return None
    parts = _write_parts(index.path.parent, patches, outlines, units, bins)
    runs = [_BinRun(index.twin(f"bin{n}"), part) for n, part in enumerate(parts)]
    with _bins_running(runs) as results:
        survey_rest(patches, surveys, rule, progress)
        if any(s.early is not None for s in surveys) or not _outlines_hold(outlines, surveys):
            for run in runs:
                run.stop()
            return None
        forward = results()
    if any(run.tree != base_tree for run in runs):
        return None  # a bin did not apply, or its revert did not restore the base
    return _bin_verdicts(patches, surveys, parts, [out or "" for out in forward], base, rule)


def _outlines(patches: Sequence[Patch]) -> list[Diffs] | None:
    """Every patch's :func:`diff_outline`, or None unless each has one with a diff."""
    outlines = []
    for patch in patches:
        outline = diff_outline(patch.read(), strip=patch.entry.strip)
        if not outline:
            return None
        outlines.append(outline)
    return outlines


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
    parts: Sequence[Sequence[_Part]],
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


class _BinRun:
    """One bin's parts through git on its own index: forward, then (once that applied)
    back, then the tree the index holds. Called in a thread of its own, so the bins go
    side by side and each goes back as soon as it went forward."""

    def __init__(self, index: TempIndex, parts: Sequence[_Part]) -> None:
        self.index = index
        self.parts = parts
        self.current: SeriesRun | None = None
        self.stopped = False
        self.tree: str | None = None

    def __call__(self) -> str | None:
        """The forward call's output; None unless every part applied."""
        forward = self._through(reverse=False)
        if forward is not None and self._through(reverse=True) is not None:
            self.tree = self.index.write_tree()
        return forward

    def _through(self, reverse: bool) -> str | None:
        if self.stopped:
            return None
        with SeriesRun(self.index, self.parts, reverse) as run:
            self.current = run
            ok, err = run.wait()
        return err if ok else None

    def stop(self) -> None:
        """Kill the git call under way and start no other."""
        self.stopped = True
        if self.current is not None:
            self.current.__exit__(None, None, None)


@contextmanager
def _bins_running(runs: Sequence[_BinRun]) -> Iterator[Callable[[], list[str | None]]]:
    """Start every bin's run in a thread of its own; yields a function that waits for
    them all and gives each forward output (None unless the bin applied). Leaving
    early (an error, Ctrl-C) stops every git now, not when it is done."""
    from concurrent.futures import ThreadPoolExecutor  # only a long series needs it

    pool = ThreadPoolExecutor(max_workers=len(runs))
    try:
        futures = [pool.submit(run) for run in runs]
        yield lambda: [future.result() for future in futures]
    except BaseException:
        for run in runs:
            run.stop()
        raise
    finally:
        pool.shutdown(wait=True)
