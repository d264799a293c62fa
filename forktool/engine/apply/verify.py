"""Verify: a series onto a commit, in a temporary index (``git apply --cached``),
never touching the user's checkout.

The whole series goes through in ONE git call forward (a few on a very long series)
and one back; only when that fails or reports an offset are patches re-run one by
one to name the culprit. Each patch's status comes from
:func:`forktool.engine.apply.attempt.classify`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from forktool.config import ApplyRule
from forktool.engine import Progress
from forktool.engine.apply.attempt import (
    Attempt,
    HunkPlacement,
    PatchVerdict,
    acceptable,
    allows_offset,
    classify,
    exact_note,
    hunk_placements,
    is_exact,
    precheck,
    read_git_apply,
    try_patch,
)
from forktool.fork import Fork, Patch
from forktool.git import Git, Started, TempIndex, git_apply_args
from forktool.model.patchfile import diff_outline

# git only warns when a file's mode is not the one the patch was made against, then
# applies anyway: the patch is then tried on its own, where the warning fails it.
_GIT_MODE_WARNING = re.compile(r"^warning: .+ has type \d+, expected \d+$", re.MULTILINE)


@dataclass(frozen=True)
class VerifyResult:
    base: str
    base_commit: str
    ok: bool
    round_trip: bool
    patches: tuple[PatchVerdict, ...]
    allow_offset: bool = False
    message: str = ""
    rule: ApplyRule = "exact"

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "base": self.base,
            "base_commit": self.base_commit,
            "ok": self.ok,
            "round_trip": self.round_trip,
            "rule": self.rule,
            "patches": [p.to_json() for p in self.patches],
        }
        if self.message:
            data["message"] = self.message
        return data


# git apply keeps every file it patched in memory until it exits (30-60 KiB a patch,
# measured): a series longer than ONE_CALL_* goes through in several calls of at most
# CHUNK_* each, one after the other, so memory stays flat in the series. Several calls
# cost git more CPU time than one (it re-reads what the calls before it wrote), so a
# series that fits stays in one call.
ONE_CALL_PATCHES = 1000
ONE_CALL_BYTES = 8 << 20
CHUNK_PATCHES = 500
CHUNK_BYTES = 4 << 20
# The rest of its memory is the cache of delta bases it reads from packs (96 MiB by
# default) and the pack windows it maps (a growing part of the pack as a long series
# reaches further into history). A series of several calls caps both; the cap on
# the cache costs git some CPU time on a long series (bench/verify, docs/performance.md).
LONG_SERIES_CONFIG = (
    "-c",
    "core.deltaBaseCacheLimit=48m",
    "-c",
    "core.packedGitWindowSize=4m",
    "-c",
    "core.packedGitLimit=32m",
)


class _PatchFile(Protocol):
    """A patch file git applies: a series' patch, or a part of one (side by side)."""

    @property
    def path(self) -> Path: ...

    @property
    def size(self) -> int: ...


def _chunks(patches: Sequence[_PatchFile]) -> list[Sequence[_PatchFile]]:
    if len(patches) <= ONE_CALL_PATCHES and sum(p.size for p in patches) <= ONE_CALL_BYTES:
        return [patches]
    chunks: list[Sequence[_PatchFile]] = []
    start = size = 0
    for position, patch in enumerate(patches):
        full = position - start >= CHUNK_PATCHES or size + patch.size > CHUNK_BYTES
        if position > start and full:
            chunks.append(patches[start:position])
            start, size = position, 0
        size += patch.size
    chunks.append(patches[start:])
    return chunks


class _SeriesRun:
    """The series through ``git apply --cached -v`` on ``index`` in the background, in
    order (reversed, with ``reverse``), one call per chunk: :meth:`poll` starts the next
    call once one is done, :meth:`wait` runs the rest. Use as a context manager: leaving
    early kills the call under way."""

    def __init__(self, index: TempIndex, patches: Sequence[_PatchFile], reverse: bool) -> None:
        self.index = index
        self.reverse = reverse
        self.pending = _chunks(list(reversed(patches)) if reverse else patches)
        self.config = LONG_SERIES_CONFIG if len(self.pending) > 1 else ()
        self.errs: list[str] = []
        self.ok = True
        self.running: Started | None = None
        self._start_next()

    def _start_next(self) -> None:
        self.running = None
        if self.ok and self.pending:
            chunk = self.pending.pop(0)
            args = [*self.config, *git_apply_args([p.path for p in chunk], reverse=self.reverse)]
            self.running = self.index.start(args, purpose="apply the series")

    def _collect(self) -> None:
        assert self.running is not None
        with self.running:
            res = self.running.wait(check=False)
        self.errs.append(res.err.rstrip("\n"))
        self.ok = res.ok
        self._start_next()

    def poll(self) -> None:
        if self.running is not None and self.running.done():
            self._collect()

    def wait(self) -> tuple[bool, str]:
        while self.running is not None:
            self._collect()
        return self.ok, "\n".join(self.errs)

    def __enter__(self) -> _SeriesRun:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.running is not None:
            self.running.__exit__(*exc)


def _apply_series(index: TempIndex, patches: Sequence[Patch], reverse: bool) -> tuple[bool, str]:
    """Apply ``patches`` on ``index`` (whether all applied, and git's output)."""
    with _SeriesRun(index, patches, reverse) as run:
        return run.wait()


def verify_series(
    fork: Fork,
    git: Git,
    *,
    base: str,
    base_commit: str,
    allow_offset: bool = False,
    progress: Progress | None = None,
    keep_going: bool = False,
    jobs: int | None = None,
) -> VerifyResult:
    """Apply the series onto ``base_commit`` and back, proving the round trip.

    git applies the whole series in one call while each patch is parsed (once, and
    not kept) for the checks made on its text alone; on a long series and a machine
    with two cores, file-disjoint parts of the series go through side by side
    (:func:`_side_by_side`, ``jobs``: at most that many git processes, default
    :func:`default_jobs`). Every patch after the first one that does not apply is
    ``not-tried`` (unless its text alone condemns it); with ``keep_going`` each later
    patch is tried on the tree without the failed ones, and says so (``without``).
    """
    patches = fork.patches
    rule = fork.config.apply_rule
    allow_offset = allow_offset or allows_offset(rule)
    if not patches:
        return VerifyResult(
            base,
            base_commit,
            False,
            False,
            (),
            allow_offset,
            "the series lists no patches: there is nothing to verify",
            rule,
        )
    workers = default_jobs() if jobs is None else max(1, jobs)
    base_tree = git.tree_id(base_commit)
    with git.temp_index(base_tree) as index:
        surveys: list[_Survey] = []
        if workers > 1 and len(patches) >= PARALLEL_MIN_PATCHES:
            done = _side_by_side(index, base_tree, patches, surveys, base, workers, rule, progress)
            _survey_rest(patches, surveys, rule, progress)
            if done is not None:
                return _result(base, base_commit, *done, allow_offset, rule)
            forward = _apply_series(index, patches, reverse=False)
        else:
            with _SeriesRun(index, patches, reverse=False) as run:
                for patch in patches:
                    surveys.append(_survey(patch, rule))
                    run.poll()
                    if progress:
                        progress(1)
                forward = run.wait()
        verdicts, round_trip = _series_verdicts(
            index, base_tree, patches, surveys, forward, base, keep_going, rule
        )
    return _result(base, base_commit, verdicts, round_trip, allow_offset, rule)


def _result(
    base: str,
    base_commit: str,
    verdicts: Sequence[PatchVerdict],
    round_trip: bool,
    allow_offset: bool,
    rule: ApplyRule,
) -> VerifyResult:
    ok = round_trip and all(acceptable(v.status, allow_offset) for v in verdicts)
    return VerifyResult(base, base_commit, ok, round_trip, tuple(verdicts), allow_offset, rule=rule)


def _series_verdicts(
    index: TempIndex,
    base_tree: str,
    patches: Sequence[Patch],
    surveys: Sequence[_Survey],
    forward: tuple[bool, str],
    base: str,
    keep_going: bool,
    rule: ApplyRule,
) -> tuple[list[PatchVerdict], bool]:
    """(verdicts, round trip) after the series' one call forward (``forward``: whether
    it applied, and git's output) left ``index`` as it is: read from that call when
    it applied and no patch must be tried on its own, the round trip then proven;
    otherwise found patch by patch up to the failure (no round trip)."""
    applied, err = forward
    early = _early(surveys, err)
    if applied and early == len(patches):

        def restore() -> None:
            index.read_tree(base_tree)

        verdicts = _verdicts_applied(index, restore, patches, surveys, err, base, rule)
        return verdicts, _round_trip(index, patches, base_tree)
    index.read_tree(base_tree)
    return _with_failures(index, patches, surveys, forward, early, base, keep_going, rule), False


def default_jobs() -> int:
    """git processes verify runs side by side: two where the machine has two cores or
    more and one of them is free (a 1-minute load average below the cores); one when
    every core is busy already, where a second process only adds its own start-up."""
    cores = os.cpu_count() or 1
    if cores < 2 or os.getloadavg()[0] >= cores:
        return 1
    return 2


@dataclass(frozen=True)
class _Survey:
    """What verify keeps of one patch's parse: its early verdict, or the hunks'
    places when exact, how many file diffs git will report, and every path the
    patch reads or writes."""

    early: PatchVerdict | None
    placements: tuple[HunkPlacement, ...]
    files: int
    diffs: tuple[tuple[int, tuple[str, ...]], ...] = ()  # each file diff: first line, paths
    note: str = ""  # what an exact verdict says (an empty patch, hand-edited hunk headers)


def _survey(patch: Patch, rule: ApplyRule) -> _Survey:
    parsed = patch.parse()
    early = precheck(patch, "git", parsed, rule)
    placements = tuple(hunk_placements(parsed, {}, False))
    diffs = tuple(
        (diff.line, tuple(p for p in (diff.old_path, diff.new_path) if p is not None))
        for diff in parsed.files
    )
    return _Survey(early, placements, len(parsed.files), diffs, exact_note(parsed, rule))


def _survey_rest(
    patches: Sequence[Patch], surveys: list[_Survey], rule: ApplyRule, progress: Progress | None
) -> None:
    """Survey the patches ``surveys`` does not hold yet, in order."""
    for patch in patches[len(surveys) :]:
        surveys.append(_survey(patch, rule))
        if progress:
            progress(1)


def _early(surveys: Sequence[_Survey], err: str) -> int:
    """The first patch to try on its own before git's word is taken: the first whose
    text alone condemns it, or the first git warned about a file's mode for."""
    early = next((i for i, s in enumerate(surveys) if s.early is not None), len(surveys))
    if _GIT_MODE_WARNING.search(err):
        # git applies onto a file of another mode with a warning only: that patch
        # is tried on its own, where the warning fails it (try_patch).
        early = min(early, _first_mode_warning(surveys, err))
    return early


def _groups(err: str) -> list[list[str]]:
    """``git apply -v`` output of a whole series, one group of lines per patch file:
    git checks all of a patch's files ("Checking patch"), then applies them
    ("Applied patch"), before it reads the next patch. The last group of a failed
    run has no "Applied" lines."""
    groups: list[list[str]] = []
    applied = True
    for line in err.splitlines():
        if line.startswith("Checking patch ") and applied:
            groups.append([])
            applied = False
        elif line.startswith("Applied patch ") and groups:
            applied = True
        if groups:
            groups[-1].append(line)
    return groups


def _first_mode_warning(surveys: Sequence[_Survey], err: str) -> int:
    """The position of the first patch whose output holds a mode warning; 0 (try every
    patch on its own) when the output cannot be matched to the patches."""
    for position, (group, survey) in enumerate(zip(_groups(err), surveys, strict=False)):
        if sum(line.startswith("Checking patch ") for line in group) != survey.files:
            return 0
        if _GIT_MODE_WARNING.search("\n".join(group)):
            return position
    return 0


def _applied_groups(
    patches: Sequence[Patch], surveys: Sequence[_Survey], err: str
) -> list[str] | None:
    """The output of each patch git applied, in order; None when the output does not
    match the patches' file counts."""
    return _applied_outputs([s.files for s in surveys], err)


def _applied_outputs(files: Sequence[int], err: str) -> list[str] | None:
    """The output of each patch file git applied (``files``: how many file diffs each
    holds), in order, up to the first it did not; None when the output does not match
    the counts."""
    out = []
    for group, count in zip(_groups(err), files, strict=False):
        checked = sum(line.startswith("Checking patch ") for line in group)
        done = sum(line.startswith("Applied patch ") for line in group)
        if done == 0:
            break
        if checked != count or done != count:
            return None
        out.append("\n".join(group))
    return out


def _verdicts_applied(
    index: TempIndex,
    restore: Callable[[], None],
    patches: Sequence[Patch],
    surveys: Sequence[_Survey],
    err: str,
    base: str,
    rule: ApplyRule,
) -> list[PatchVerdict]:
    """Verdicts of ``patches``, which git applied onto ``index`` in one call (``err``
    its output): exact from the parse, unless git reported an offset (then read from
    its output, or, if that cannot be matched up, from a patch-by-patch run from the
    state ``restore`` brings the index back to)."""
    if "offset" not in err:
        return [_exact_verdict(p, s) for p, s in zip(patches, surveys, strict=True)]
    groups = _applied_groups(patches, surveys, err)
    if groups is None or len(groups) != len(patches):
        restore()
        return [_culprit(index, patch, base, rule) for patch in patches]
    verdicts = []
    for patch, survey, group in zip(patches, surveys, groups, strict=True):
        if "offset" in group:
            verdicts.append(
                classify(
                    patch, read_git_apply(patch.parsed, group, True, False), None, False, base, rule
                )
            )
        else:
            verdicts.append(_exact_verdict(patch, survey))
    return verdicts


def _exact_verdict(patch: Patch, survey: _Survey) -> PatchVerdict:
    return PatchVerdict(patch.name, "exact", survey.note, survey.placements)


def _with_failures(
    index: TempIndex,
    patches: Sequence[Patch],
    surveys: Sequence[_Survey],
    forward: tuple[bool, str],
    early: int,
    base: str,
    keep_going: bool,
    rule: ApplyRule,
) -> list[PatchVerdict]:
    """Verdicts when the series does not go through (``index`` holds the base tree,
    ``forward`` is the whole series' one call, ``early`` the first patch to try on its
    own): the patches before the first failure, the failure (named as a
    patch-by-patch run names it), the rest not tried. With ``keep_going`` the rest go
    on from the tree without the failed patch, again in one call, and so on after
    each failure; every verdict after a failure names the patches left out."""
    verdicts: list[PatchVerdict] = []
    failed: list[str] = []
    start = 0
    restore = index.snapshot()
    while True:
        found = _until_failure(
            index, restore, patches[start:], surveys[start:], forward, early, base, rule
        )
        verdicts += [replace(v, without=tuple(failed)) if failed else v for v in found]
        start += len(found)
        if start == len(patches) or not keep_going:
            break
        failed.append(found[-1].patch)
        segment, rest = patches[start:], surveys[start:]
        restore = index.snapshot()
        forward = _apply_series(index, segment, reverse=False)
        early = _early(rest, forward[1])
        if forward[0] and early == len(segment):
            found = _verdicts_applied(index, restore, segment, rest, forward[1], base, rule)
            verdicts += [replace(v, without=tuple(failed)) for v in found]
            break
    if len(verdicts) < len(patches):
        first = verdicts[-1].patch
        for patch, survey in zip(patches[len(verdicts) :], surveys[len(verdicts) :], strict=True):
            verdicts.append(
                survey.early
                or PatchVerdict(
                    patch.name, "not-tried", f"not tried: {first} does not apply before it"
                )
            )
    return verdicts


def _until_failure(
    index: TempIndex,
    restore: Callable[[], None],
    patches: Sequence[Patch],
    surveys: Sequence[_Survey],
    forward: tuple[bool, str],
    early: int,
    base: str,
    rule: ApplyRule,
) -> list[PatchVerdict]:
    """Verdicts from the start of ``patches``, tried on ``index`` as ``restore`` brings
    it back (``forward``: their one call from there), up to and including the first
    that fails, or of all of them; the ones that apply are left applied.

    Where git stopped is read from the one call's output (the patches it applied);
    when that cannot be matched to the patches, it is found by bisecting on prefixes
    of the series: O(log n) applies, never one per patch."""
    restore()  # the call may have applied them all, or (in chunks) some
    if forward[0]:
        good = early
    else:
        groups = _applied_groups(patches, surveys, forward[1])
        applied = len(groups) if groups is not None else None
        if applied is None:
            applied = _bisect_applying_prefix(index, restore, patches, early)
        good = min(applied, early)
    verdicts: list[PatchVerdict] = []
    if good:
        ok, err = _apply_series(index, patches[:good], reverse=False)
        if not ok:  # the output misled us (a hunk's text can mimic it): ask git again
            good = _bisect_applying_prefix(index, restore, patches, good)
            restore()
            ok, err = _apply_series(index, patches[:good], reverse=False)
        verdicts = _verdicts_applied(
            index, restore, patches[:good], surveys[:good], err, base, rule
        )
    position = good
    while position < len(patches):
        patch, survey = patches[position], surveys[position]
        verdict = survey.early or _culprit(index, patch, base, rule)
        verdicts.append(verdict)
        position += 1
        if verdict.status not in ("exact", "offset"):
            break
    return verdicts


def _bisect_applying_prefix(
    index: TempIndex, restore: Callable[[], None], patches: Sequence[Patch], limit: int
) -> int:
    """The length of the longest prefix of ``patches[:limit]`` that applies in one call
    on the index as ``restore`` brings it back."""
    low, high = 0, limit  # patches[:low] applies; patches[:high + 1] does not, or high == limit
    while low < high:
        middle = (low + high + 1) // 2
        restore()
        ok, _ = _apply_series(index, patches[:middle], reverse=False)
        if ok:
            low = middle
        else:
            high = middle - 1
    restore()
    return low


# -- side by side ------------------------------------------------------------------------
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


# Each file diff of a patch: its first line and the paths it touches (_Survey.diffs, or
# a patch's diff_outline before its parse).
_Diffs = tuple[tuple[int, tuple[str, ...]], ...]


def _units(
    patches: Sequence[Patch], diffs: Sequence[_Diffs]
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


def _bins(
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
    diffs: Sequence[_Diffs],
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
    out = _applied_outputs([part.files for part in parts], err)
    return out if out is not None and len(out) == len(parts) else None


def _side_by_side(
    index: TempIndex,
    base_tree: str,
    patches: Sequence[Patch],
    surveys: list[_Survey],
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
        _survey_rest(patches, surveys, rule, progress)
        if any(s.early is not None for s in surveys):
            return None
        outlines = [s.diffs for s in surveys]
    units, paths = _units(patches, outlines)
    bins = _bins(units, paths, workers)
    if bins is None:
        return None
    parts = _write_parts(index.path.parent, patches, outlines, units, bins)
    runs = [_BinRun(index.twin(f"bin{n}"), part) for n, part in enumerate(parts)]
    with _side_by_side_runs(runs) as results:
        _survey_rest(patches, surveys, rule, progress)
        if any(s.early is not None for s in surveys) or not _outlines_hold(outlines, surveys):
            for run in runs:
                run.stop()
            return None
        forward = results()
    if any(run.tree != base_tree for run in runs):
        return None  # a bin did not apply, or its revert did not restore the base
    return _bin_verdicts(patches, surveys, parts, [out or "" for out in forward], base, rule)


def _outlines(patches: Sequence[Patch]) -> list[_Diffs] | None:
    """Every patch's :func:`diff_outline`, or None unless each has one with a diff."""
    outlines = []
    for patch in patches:
        outline = diff_outline(patch.read(), strip=patch.entry.strip)
        if not outline:
            return None
        outlines.append(outline)
    return outlines


def _outlines_hold(outlines: Sequence[_Diffs], surveys: Sequence[_Survey]) -> bool:
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
    surveys: Sequence[_Survey],
    parts: Sequence[Sequence[_Part]],
    forward: Sequence[str],
    base: str,
    rule: ApplyRule,
) -> tuple[list[PatchVerdict], bool] | None:
    """Every patch's verdict from its parts' output, as from one call; None when git's
    output does not prove the bins disjoint or does not match the parts."""
    if any(_GIT_MODE_WARNING.search(err) for err in forward):
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
            verdicts.append(_exact_verdict(patch, survey))
    return verdicts, True


class _BinRun:
    """One bin's parts through git on its own index: forward, then (once that applied)
    back, then the tree the index holds. Called in a thread of its own, so the bins go
    side by side and each goes back as soon as it went forward."""

    def __init__(self, index: TempIndex, parts: Sequence[_Part]) -> None:
        self.index = index
        self.parts = parts
        self.current: _SeriesRun | None = None
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
        with _SeriesRun(self.index, self.parts, reverse) as run:
            self.current = run
            ok, err = run.wait()
        return err if ok else None

    def stop(self) -> None:
        """Kill the git call under way and start no other."""
        self.stopped = True
        if self.current is not None:
            self.current.__exit__(None, None, None)


@contextmanager
def _side_by_side_runs(runs: Sequence[_BinRun]) -> Iterator[Callable[[], list[str | None]]]:
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


def _culprit(index: TempIndex, patch: Patch, base: str, rule: ApplyRule = "exact") -> PatchVerdict:
    """One patch tried on ``index`` (the patches before it applied): its verdict, and
    the patch applied there when it applies."""
    attempt = try_patch(index, patch)
    fuzzy: Attempt | None = None
    reverse_ok = False
    if not attempt.ok:
        reverse_ok = is_exact(try_patch(index, patch, reverse=True, check=True))
        if not reverse_ok:
            fuzzy = try_patch(index, patch, context=1, check=True)
    return classify(patch, attempt, fuzzy, reverse_ok, base, rule)


def _round_trip(index: TempIndex, patches: Sequence[Patch], base_tree: str) -> bool:
    ok, _ = _apply_series(index, patches, reverse=True)
    return ok and index.write_tree() == base_tree


def resolve_base(fork: Fork, git: Git, base: str | None) -> tuple[str, str]:
    """(name, commit) of what to verify against: ``base``, or the pin's tree (the
    imported release tarball when the fork has one)."""
    from forktool.engine.release.pin_state import require_tree

    if base is None:
        return require_tree(fork.config, git)
    return base, git.require_commit(base, what="base revision")
