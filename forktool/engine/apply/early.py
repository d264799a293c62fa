"""verify's git work started from the series file alone, before the fork is loaded.

Loading the fork (every patch's header, the map, the ledger) and importing the parts
of forktool that judge patches take longer than git needs to load the base tree and
start applying. So ``verify`` reads only the series file first, starts git on the
files it names (the temporary index, and on the serial path the series' round trip),
and loads the fork and the rest of the engine while git works. Nothing here reads a
patch: what git is given is exactly what the series names, as regular files inside
the fork; the fork load that follows checks the rest, and :func:`verify_series` uses
what was started only when the loaded series names the same files.

This module stays light (no parser, no verdicts): it is imported before git starts.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Final, NamedTuple

from forktool.config import Config
from forktool.engine.apply.series_run import RoundTrip
from forktool.git import Git, TempIndex
from forktool.inputs import UnreadableInput, linked_directory, read_input, read_regular
from forktool.model.series import parse_series

if TYPE_CHECKING:
    from forktool.engine.apply.bins import StartedBins

PARALLEL_MIN_PATCHES = 16  # below this a second git process costs more than it saves


def default_jobs() -> int:
    """git processes verify runs side by side: two where the machine has two cores or
    more and one of them is free now (:func:`others_running` below the cores); one when
    every core is busy already, where a second process only adds its own start-up."""
    cores = os.cpu_count() or 1
    if cores < 2 or others_running() >= cores:
        return 1
    return 2


def others_running() -> float:
    """How many other tasks run or wait for a core now: ``/proc/loadavg``'s count of
    runnable tasks, less this process. The 1-minute load average where there is none:
    it lags, so a machine that was busy a minute ago (verify run again and again, the
    steps a CI job ran before) reads as busy when it is free."""
    try:
        with open("/proc/loadavg", "rb") as handle:
            return int(handle.read().split()[3].split(b"/")[0]) - 1
    except (OSError, IndexError, ValueError):
        return os.getloadavg()[0]


def side_by_side(workers: int, patches: int) -> bool:
    """Whether a series of ``patches`` goes through in bins side by side."""
    return workers > 1 and patches >= PARALLEL_MIN_PATCHES


def resolve_base(config: Config, git: Git, base: str | None) -> tuple[str, str]:
    """(name, commit) of what to verify against: ``base``, or the pin's tree (the
    imported release tarball when the fork has one)."""
    from forktool.engine.release.pin_state import require_tree

    if base is None:
        return require_tree(config, git)
    return base, git.require_commit(base, what="base revision")


class SeriesFile(NamedTuple):
    """A patch file the series names, as git is given it before the fork is loaded."""

    path: Path
    size: int
    strip: int
    rel: str

    def read(self) -> bytes:
        """The file's bytes (its way was checked when it was listed; a symlink put in
        its place since is refused here, and by the fork load)."""
        return read_regular(self.path, self.rel)


class EarlyStart:
    """git's work started before the fork was loaded: the temporary index holding
    the base tree, and either the bins running side by side (``bins``) or the series'
    round trip running on the index (``trip``: forward, back, the tree it leaves)."""

    def __init__(
        self,
        index: TempIndex,
        base_tree: str,
        files: tuple[Path, ...],
        trip: RoundTrip | None,
        bins: StartedBins | None = None,
    ) -> None:
        self.index: Final = index
        self.base_tree: Final = base_tree
        self.files: Final = files
        self.trip: Final = trip
        self.bins: Final = bins

    def serves(self, paths: Sequence[Path]) -> bool:
        """Whether this was started on exactly the patch files ``paths``."""
        return tuple(paths) == self.files

    def stop(self) -> None:
        """Stop every git started here (what it did is not used)."""
        if self.trip is not None:
            self.trip.stop()
        if self.bins is not None:
            self.bins.stop()


def series_files(config: Config) -> list[SeriesFile] | None:
    """The patch files the series names, in order, each a regular file inside the fork;
    None when the series cannot be read, has a problem, names no patch, or names a
    file that is missing, not regular, or reached through a link (the fork load
    reports each of those in its own words)."""
    try:
        data = read_input(config.file(config.series), config.series, follow=False)
    except (UnreadableInput, OSError):
        return None
    series = parse_series(data, config.series)
    if series.findings or not series.entries:
        return None
    files = []
    inside: dict[str, bool] = {}  # a directory's way checked once, not once per patch
    for entry in series.entries:
        path = config.patches_dir / entry.name
        rel = f"{config.patches}/{entry.name}"
        folder = rel.rpartition("/")[0]
        if folder not in inside:
            inside[folder] = linked_directory(config.root, rel) is None
        try:
            info = os.lstat(path)
        except OSError:
            return None
        if not stat.S_ISREG(info.st_mode) or not inside[folder]:
            return None
        files.append(SeriesFile(path, info.st_size, entry.strip, rel))
    return files


class Verifying(NamedTuple):
    """What a verify (or status) run starts git on: the repository, the base's name
    and commit, how many git processes go side by side, and git's work under way
    (None when the series file gives nothing to start on)."""

    git: Git
    name: str
    commit: str
    workers: int
    early: EarlyStart | None


@contextmanager
def started_on(config: Config, git: Git, base: str | None, jobs: int | None) -> Iterator[Verifying]:
    """git started on the series onto ``base`` (default: the pin's tree), with ``jobs``
    git processes side by side (default :func:`default_jobs`): what ``verify`` and
    ``status`` do before the fork is loaded, and :mod:`forktool.head_start` before
    the command line is parsed. Refuses (exit 2) a base that cannot be resolved."""
    name, commit = resolve_base(config, git, base)
    workers = default_jobs() if jobs is None else jobs
    with early_start(git, config, commit, workers) as early:
        yield Verifying(git, name, commit, workers, early)


@contextmanager
def early_start(
    git: Git, config: Config, base_commit: str, workers: int
) -> Iterator[EarlyStart | None]:
    """The base tree in a temporary index and the series started on it: in bins side
    by side (``workers`` > 1, a series long enough that splits), else its forward call;
    None when the series file gives nothing to start on. Leaving the block stops git
    and removes the index (also on an error or Ctrl-C)."""
    files = series_files(config)
    if files is None:
        yield None
        return
    with ExitStack() as stack:
        index = stack.enter_context(git.temp_index())
        loaded = stack.enter_context(index.loading(base_commit, cache=True))
        names = tuple(f.path for f in files)
        bins = None
        if side_by_side(workers, len(files)):
            from forktool.engine.apply.bins import running_bins  # the outline reader too

            try:  # planned while git loads the index (weighed by the commit's tree)
                bins = stack.enter_context(
                    running_bins(index, files, workers, base_commit, loaded=loaded)
                )
            except UnreadableInput:  # a file went away since it was listed: the load says so
                stack.close()
                yield None
                return
        trip = None
        if bins is None:
            loaded()
            trip = stack.enter_context(RoundTrip(index, files))
        base_tree = git.tree_id(base_commit)  # asked while git applies
        yield EarlyStart(index, base_tree, names, trip, bins)
