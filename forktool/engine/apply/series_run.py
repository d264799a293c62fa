"""A series through ``git apply --cached -v`` on a temporary index: in one call, or in
chunks of bounded size one after the other on a long series (memory stays flat)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from forktool.git import Started, TempIndex, git_apply_args

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


class PatchFileArg(Protocol):
    """A patch file git applies: a series' patch, or a part of one (side by side)."""

    @property
    def path(self) -> Path: ...

    @property
    def size(self) -> int: ...


def _chunks(patches: Sequence[PatchFileArg]) -> list[Sequence[PatchFileArg]]:
    if len(patches) <= ONE_CALL_PATCHES and sum(p.size for p in patches) <= ONE_CALL_BYTES:
        return [patches]
    chunks: list[Sequence[PatchFileArg]] = []
    start = size = 0
    for position, patch in enumerate(patches):
        full = position - start >= CHUNK_PATCHES or size + patch.size > CHUNK_BYTES
        if position > start and full:
            chunks.append(patches[start:position])
            start, size = position, 0
        size += patch.size
    chunks.append(patches[start:])
    return chunks


class SeriesRun:
    """The series through ``git apply --cached -v`` on ``index`` in the background, in
    order (reversed, with ``reverse``), one call per chunk: :meth:`poll` starts the next
    call once one is done, :meth:`wait` runs the rest. Use as a context manager: leaving
    early kills the call under way."""

    def __init__(
        self,
        index: TempIndex,
        patches: Sequence[PatchFileArg],
        reverse: bool,
        unanchored: bool = False,
    ) -> None:
        self.index = index
        self.reverse = reverse
        self.unanchored = unanchored
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
            files = [p.path for p in chunk]
            args = [
                *self.config,
                *git_apply_args(files, reverse=self.reverse, unanchored=self.unanchored),
            ]
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

    def stop(self) -> None:
        """Kill the call under way and start no other."""
        self.pending = []
        if self.running is not None:
            self.running.__exit__(None, None, None)

    @property
    def finished(self) -> bool:
        """Whether every call is done (or one failed and no other will start)."""
        return self.running is None

    def wait(self) -> tuple[bool, str]:
        while self.running is not None:
            self._collect()
        return self.ok, "\n".join(self.errs)

    def __enter__(self) -> SeriesRun:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.running is not None:
            self.running.__exit__(*exc)


class RoundTrip:
    """The series forward on ``index`` and, as soon as every forward call applied, back
    again, both in the background: the revert does not wait for the caller (who reads
    the patches meanwhile). Use as a context manager, like :class:`SeriesRun`."""

    def __init__(
        self,
        index: TempIndex,
        patches: Sequence[PatchFileArg],
        forward: SeriesRun | None = None,
    ) -> None:
        self.index = index
        self.patches = patches
        self.forward = forward or SeriesRun(index, patches, reverse=False)
        self.back: SeriesRun | None = None
        self.stopped = False

    def poll(self) -> None:
        """Collect what finished, and start the revert once the series is through."""
        self.forward.poll()
        if self.back is not None:
            self.back.poll()
        elif self.forward.finished and self.forward.ok and not self.stopped:
            self.back = SeriesRun(self.index, self.patches, reverse=True)

    def wait_forward(self) -> tuple[bool, str]:
        """Whether the series applied, and git's output (the revert then under way)."""
        forward = self.forward.wait()
        self.poll()
        return forward

    def wait_back(self) -> tuple[bool, str]:
        """Whether the revert went through, and git's output (after the series applied)."""
        if self.back is None:
            raise RuntimeError("the series did not apply: there is nothing to revert")
        return self.back.wait()

    def stop_back(self) -> None:
        """Kill the revert under way, if any, and start none: the caller takes the
        index over (in whatever state the revert left it)."""
        self.stopped = True
        if self.back is not None:
            self.back.stop()
            self.index.unlock()

    def __enter__(self) -> RoundTrip:
        return self

    def __exit__(self, *exc: object) -> None:
        runs = [self.forward, *([self.back] if self.back is not None else [])]
        stopped = any(run.running is not None and not run.running.done() for run in runs)
        for run in runs:
            run.__exit__(*exc)
        if stopped:  # a git killed at once may not have removed its lock yet
            self.index.unlock()


def apply_series(
    index: TempIndex, patches: Sequence[PatchFileArg], reverse: bool, unanchored: bool = False
) -> tuple[bool, str]:
    """Apply ``patches`` on ``index`` (whether all applied, and git's output;
    ``unanchored``: without git's anchors, see :mod:`forktool.engine.apply.anchors`)."""
    with SeriesRun(index, patches, reverse, unanchored) as run:
        return run.wait()
