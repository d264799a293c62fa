"""A series through ``git apply --cached -v`` on a temporary index: in one call, or in
chunks of bounded size one after the other on a long series (memory stays flat)."""

from __future__ import annotations

import threading
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
        self.stopped = False
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
        self.stopped = True
        self.pending = []
        if self.running is not None:
            self.running.__exit__(None, None, None)

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
    """The series forward on ``index``, then (once every forward call applied) back,
    then the tree the index holds: all in a thread of its own, so neither the revert
    nor its tree waits for the caller, who reads the patches (or is still importing
    the code that judges them) meanwhile. The forward call starts here, in the
    caller's thread. Use as a context manager: leaving the block stops git at once
    (an error, Ctrl-C), or waits for the thread to end."""

    def __init__(self, index: TempIndex, patches: Sequence[PatchFileArg]) -> None:
        self.index = index
        self.patches = patches
        self.forward = SeriesRun(index, patches, reverse=False)
        self.back: SeriesRun | None = None
        self.tree: str | None = None  # what the index holds once the revert went through
        self.went_forward = threading.Event()  # set when the forward calls are over
        self._forward: tuple[bool, str] = (False, "")
        self._back: tuple[bool, str] = (False, "")
        self._error: BaseException | None = None
        self._lock = threading.Lock()  # taken to start or stop a call
        self._stopped = False  # every call stopped, none to start
        self._no_back = False  # no revert to start
        self._thread = threading.Thread(
            target=self._drive, name=f"forktool-{index.path.name}", daemon=True
        )
        self._thread.start()

    def _drive(self) -> None:
        try:
            self._forward = self._through(self.forward)
            self.went_forward.set()
            with self._lock:
                if not self._forward[0] or self._stopped or self._no_back:
                    return
                self.back = SeriesRun(self.index, self.patches, reverse=True)
            self._back = self._through(self.back)
            if self._back[0]:
                self.tree = self.index.write_tree()
        except BaseException as exc:  # handed to the caller, raised there
            self._error = exc
        finally:
            self.went_forward.set()

    def _through(self, run: SeriesRun) -> tuple[bool, str]:
        """``run``'s calls, each collected as it exits (git is waited for outside the
        lock, so a stop can kill it meanwhile)."""
        while True:
            with self._lock:
                running = run.running
                if running is None or run.stopped:
                    break
            running.exited()
            with self._lock:
                if not run.stopped:
                    run.poll()
        return run.ok and not run.stopped, "\n".join(run.errs)

    def _raise(self) -> None:
        if self._error is not None:
            raise self._error

    def wait_forward(self) -> tuple[bool, str]:
        """Whether the series applied, and git's output (the revert then under way)."""
        self.went_forward.wait()
        self._raise()
        return self._forward

    def finish(self) -> None:
        """Wait until the thread is done (the tree written when the revert went
        through), raising what it raised."""
        self._thread.join()
        self._raise()

    def wait_back(self) -> tuple[bool, str]:
        """Whether the revert went through, and git's output (after the series applied)."""
        self.finish()
        if self.back is None:
            raise RuntimeError("the series did not apply: there is nothing to revert")
        return self._back

    def stop(self) -> None:
        """Kill the call under way, if any, and start none; the thread ends. The caller
        takes the index over (in whatever state a killed call left it)."""
        with self._lock:
            self._stopped = True
            runs = self._runs()
        self._stopped_now(runs)

    def stop_back(self) -> None:
        """Kill the revert under way, if any, and start none (the forward call goes
        on); the thread ends, and the caller takes the index over."""
        with self._lock:
            self._no_back = True
            runs = [self.back] if self.back is not None else []
        self._stopped_now(runs)

    def _stopped_now(self, runs: list[SeriesRun]) -> None:
        for run in runs:
            with self._lock:
                run.stop()
        self._thread.join()
        if runs:  # a git killed at once may not have removed its lock yet
            self.index.unlock()

    def _runs(self) -> list[SeriesRun]:
        return [self.forward, *([self.back] if self.back is not None else [])]

    def __enter__(self) -> RoundTrip:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self._thread.join()
        self.stop()


def apply_series(
    index: TempIndex, patches: Sequence[PatchFileArg], reverse: bool, unanchored: bool = False
) -> tuple[bool, str]:
    """Apply ``patches`` on ``index`` (whether all applied, and git's output;
    ``unanchored``: without git's anchors, see :mod:`forktool.engine.apply.anchors`)."""
    with SeriesRun(index, patches, reverse, unanchored) as run:
        return run.wait()
