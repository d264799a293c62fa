"""Side by side, the git half: a series' file diffs planned into file-disjoint bins
and each bin through git in its own temporary index, in a thread of its own
(:class:`RoundTrip`).

Planning reads each patch's outline (:func:`diff_outline`: where its file diffs start
and the paths they name), not its parse, so git starts before any patch is parsed;
:mod:`forktool.engine.apply.side_by_side` checks every outline against its parse and
reads the verdicts. This module stays light: ``verify`` may start the bins before the
fork is loaded (:mod:`forktool.engine.apply.early`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import NamedTuple, Protocol

from forktool.engine.apply.series_run import RoundTrip
from forktool.git import TempIndex
from forktool.model.patch_text import diff_git_lines, diff_outline


class PatchSource(Protocol):
    """A patch file as the bins read it: a series' patch, loaded or not."""

    @property
    def path(self) -> Path: ...

    @property
    def size(self) -> int: ...

    @property
    def strip(self) -> int: ...

    def read(self) -> bytes: ...


#
# File diffs that touch no common path commute (side_by_side says how the answer is
# proven): the series' file diffs split into groups closed under "touches a path
# another one touches" (a path and the directories above it count as one: a diff
# deleting file ``a`` and one creating ``a/b`` do not commute; a rename touches both
# its paths), and the groups go, in two bins of about equal weight, through git side by
# side: each bin in its own index copied from the base, as one part-patch per patch
# holding that patch's file diffs of the bin, byte for byte.
PARALLEL_MIN_SHARE = 0.5  # the lightest bin's lines against an even split, else serial


def parents(path: str) -> list[str]:
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
        for directory in parents(path):
            if directory in owner:
                parent[find(position)] = find(owner[directory])
    groups: dict[int, list[int]] = {}
    for position in range(len(paths)):
        groups.setdefault(find(position), []).append(position)
    return sorted(groups.values(), key=lambda g: g[0])


class Unit(NamedTuple):
    """One file diff of the series: its patch's position, its own within the patch,
    and its length in lines (how bins are weighed)."""

    patch: int
    diff: int
    weight: int


# Each file diff of a patch: its first line and the paths it touches (Survey.diffs, or
# a patch's diff_outline before its parse).
Diffs = tuple[tuple[int, tuple[str, ...]], ...]


# git's work on a file diff follows the length of the file it rewrites (it reads the
# whole file, applies, hashes and compresses the whole result), not of the diff: a
# diff weighs its own lines plus the lines of the files it touches, as the base tree
# holds them (a size in bytes counts as that many lines of this length).
LINE_BYTES = 40


def units_of(
    patches: Sequence[PatchSource], diffs: Sequence[Diffs], sizes: Mapping[str, int] | None = None
) -> tuple[list[Unit], list[tuple[str, ...]]]:
    """Every file diff of the series as a unit (its weight: its lines, plus the lines
    of the files it touches when ``sizes`` gives them), with the paths it touches."""
    units: list[Unit] = []
    paths: list[tuple[str, ...]] = []
    sizes = sizes or {}
    for position, outline in enumerate(diffs):
        starts = [line for line, _ in outline]
        ends = (
            [*starts[1:], starts[-1] + max(1, patches[position].size // LINE_BYTES)]
            if starts
            else []
        )
        for number, ((line, touched), end) in enumerate(zip(outline, ends, strict=True)):
            files = sum(sizes.get(path, 0) for path in touched) // LINE_BYTES
            units.append(Unit(position, number, max(1, end - line) + files))
            paths.append(touched)
    return units, paths


def bins_of(
    units: Sequence[Unit], paths: Sequence[Sequence[str]], workers: int
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


class Part(NamedTuple):
    """The file diffs of one patch that fall in one bin, written as a patch file."""

    patch: int
    path: Path
    files: int
    size: int


def write_parts(
    folder: Path,
    patches: Sequence[PatchSource],
    diffs: Sequence[Diffs],
    units: Sequence[Unit],
    bins: Sequence[Sequence[int]],
) -> list[list[Part]]:
    """Each bin's part-patches in series order: a patch's file diffs of the bin, their
    lines byte for byte (a diff runs from its first line to the next diff's). A patch
    whose every file diff falls in one bin is that bin's part as it is (its own file:
    nothing written; git skips its message as it does in the serial run)."""
    wanted: list[dict[int, list[int]]] = [{} for _ in bins]
    for number, members in enumerate(bins):
        for unit in (units[i] for i in members):
            wanted[number].setdefault(unit.patch, []).append(unit.diff)
    parts: list[list[Part]] = [[] for _ in bins]
    for position, patch in enumerate(patches):
        owners = [number for number in range(len(bins)) if position in wanted[number]]
        if not owners:
            continue
        if len(owners) == 1 and len(wanted[owners[0]][position]) == len(diffs[position]):
            files = len(diffs[position])
            parts[owners[0]].append(Part(position, patch.path, files, patch.size))
            continue
        pieces = diff_pieces(patch.read(), [line for line, _ in diffs[position]])
        for number in owners:
            chunks = [pieces[diff] for diff in wanted[number][position]]
            path = folder / f"b{number}-{position}.patch"
            data = b"".join(chunks)
            path.write_bytes(data)
            parts[number].append(Part(position, path, len(wanted[number][position]), len(data)))
    return parts


def diff_pieces(data: bytes, starts: Sequence[int]) -> list[bytes]:
    """Each file diff of a patch, byte for byte (``starts``: each one's first line, in
    order; it runs to the next one's, the last to the end), ending with a newline. An
    outline's diffs start at ``diff --git`` lines, whose offsets are found in bulk; any
    other start is reached line by line from the last one known."""
    known = dict(diff_git_lines(data))
    begins = []
    line, at = 1, 0
    for wanted in starts:
        if wanted in known:
            line, at = wanted, known[wanted]
        while line < wanted:
            at = data.index(b"\n", at) + 1
            line += 1
        begins.append(at)
    bounds = [*begins, len(data)]
    pieces = [data[begin:end] for begin, end in itertools.pairwise(bounds)]
    return [piece if piece.endswith(b"\n") else piece + b"\n" for piece in pieces]


def outlines_of(patches: Sequence[PatchSource]) -> list[Diffs] | None:
    """Every patch's :func:`diff_outline`, or None unless each has one with a diff."""
    outlines = []
    for patch in patches:
        outline = diff_outline(patch.read(), strip=patch.strip)
        if not outline:
            return None
        outlines.append(outline)
    return outlines


class StartedBins(NamedTuple):
    """Bins under way: the outlines they were planned from, each bin's parts, and each
    bin's round trip (forward, back, the tree it leaves, in a thread of its own)."""

    outlines: list[Diffs]
    parts: list[list[Part]]
    runs: list[RoundTrip]

    def stop(self) -> None:
        for run in self.runs:
            run.stop()

    def forwards(self) -> list[str | None]:
        """Each bin's forward output (None unless it applied), as soon as every bin went
        forward: the bins are reverting meanwhile."""
        return [out if ok else None for ok, out in (run.wait_forward() for run in self.runs)]

    def results(self) -> None:
        """Wait until every bin is done (its tree written), raising what one raised."""
        for run in self.runs:
            run.finish()


@contextmanager
def running_bins(
    index: TempIndex,
    patches: Sequence[PatchSource],
    workers: int,
    tree: str,
    outlines: Sequence[Diffs] | None = None,
    loaded: Callable[[], object] | None = None,
) -> Iterator[StartedBins | None]:
    """``patches`` planned into ``workers`` bins (from ``outlines``, or each patch's
    outline; weighed by the sizes of the files in ``tree``, the base tree or its
    commit) and started, each on a twin of ``index`` (which holds it); None when the series
    does not split (no outline, or unbalanced bins). ``loaded``: waits until
    ``index`` holds the base tree (the bins are planned meanwhile). Leaving the block
    stops every git still running."""
    with index.listing_sizes(tree) as sizes:
        planned = list(outlines) if outlines is not None else outlines_of(patches)
        bins = None
        if planned is not None:
            units, paths = units_of(patches, planned, sizes())
            bins = bins_of(units, paths, workers)
    if planned is None or bins is None:
        yield None
        return
    parts = write_parts(index.path.parent, patches, planned, units, bins)
    if loaded is not None:
        loaded()
    with ExitStack() as stack:
        runs = [
            stack.enter_context(RoundTrip(index.twin(f"bin{n}"), part))
            for n, part in enumerate(parts)
        ]
        yield StartedBins(planned, parts, runs)
