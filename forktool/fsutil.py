"""Writing the user's files safely: all or nothing, never half-written.

:func:`write_files` is the only way forktool changes a fork's files. It writes
every new content to a temporary file beside its target first, then moves them
into place; if anything fails (or Ctrl-C arrives) before the last move, every
target is put back as it was. :func:`fork_lock` keeps two mutating runs apart.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from forktool.errors import FatalError

TMP_MARK = ".forktool-tmp"
BACKUP_MARK = ".forktool-bak"


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _write_temp(target: Path, data: bytes) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = target.with_name(f"{target.name}{TMP_MARK}-{os.getpid()}")
    with open(temp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    if target.exists():
        os.chmod(temp, target.stat().st_mode & 0o7777)
    return temp


def atomic_write(target: Path, data: bytes) -> None:
    write_files({target: data})


@dataclass
class _Step:
    target: Path
    temp: Path | None  # new content, or None to delete
    backup: Path | None = None
    done: bool = False


@contextmanager
def _signals_deferred() -> Iterator[None]:
    """Hold SIGINT/SIGTERM while files are being moved, so a move is never cut short."""
    pending: list[int] = []

    def remember(signum: int, frame: object) -> None:
        del frame
        pending.append(signum)

    try:
        old = {sig: signal.signal(sig, remember) for sig in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:  # not the main thread: nothing to defer
        yield
        return
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        if pending:
            raise KeyboardInterrupt


def write_files(changes: Mapping[Path, bytes | None]) -> None:
    """Replace (bytes) or delete (None) every path, all or nothing."""
    steps: list[_Step] = []
    try:
        for target, data in changes.items():
            steps.append(_Step(target, None if data is None else _write_temp(target, data)))
        with _signals_deferred():
            _commit(steps)
    except BaseException:
        _rollback(steps)
        raise
    finally:
        for step in steps:
            for leftover in (step.temp, step.backup):
                if leftover is not None:
                    with contextlib.suppress(FileNotFoundError):
                        leftover.unlink()
    for directory in {step.target.parent for step in steps}:
        _fsync_dir(directory)


def _commit(steps: list[_Step]) -> None:
    for step in steps:
        if step.target.exists() or step.target.is_symlink():
            step.backup = step.target.with_name(f"{step.target.name}{BACKUP_MARK}-{os.getpid()}")
            os.link(step.target, step.backup) if not step.target.is_symlink() else os.rename(
                step.target, step.backup
            )
        if step.temp is not None:
            os.replace(step.temp, step.target)
            step.temp = None
        elif step.target.exists():
            step.target.unlink()
        step.done = True


def _rollback(steps: list[_Step]) -> None:
    for step in reversed(steps):
        if not step.done:
            # The target was never touched: the backup is just a second link to it.
            # (rename() between two links of one file is a no-op, so never "restore" it.)
            if step.backup is not None:
                if step.target.exists() or step.target.is_symlink():
                    step.backup.unlink()
                else:  # a symlink target was moved aside: move it back
                    os.replace(step.backup, step.target)
                step.backup = None
            continue
        if step.backup is not None and step.backup.exists():
            os.replace(step.backup, step.target)
            step.backup = None
        else:
            with contextlib.suppress(FileNotFoundError):
                step.target.unlink()


def leftover_temp_files(root: Path) -> list[Path]:
    """Temporary files an interrupted run (SIGKILL) may have left in the fork."""
    found: list[Path] = []
    for path in root.rglob(f"*{TMP_MARK}-*"):
        if ".git" not in path.relative_to(root).parts:
            found.append(path)
    for path in root.rglob(f"*{BACKUP_MARK}-*"):
        if ".git" not in path.relative_to(root).parts:
            found.append(path)
    return found


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError as exc:
        return exc.errno == errno.EPERM
    return True


@contextmanager
def fork_lock(git_dir: Path) -> Iterator[None]:
    """Hold the fork's lock for a mutating command; take over a stale one."""
    lock = git_dir / "forktool.lock"
    for _attempt in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                holder = int(lock.read_text().strip() or "0")
            except (OSError, ValueError):
                holder = 0
            if holder and _pid_alive(holder) and holder != os.getpid():
                raise FatalError(
                    f"another forktool run holds the lock (pid {holder})",
                    f"wait for it to finish; if no forktool is running, remove {lock}",
                ) from None
            with contextlib.suppress(FileNotFoundError):
                lock.unlink()  # stale: its process is gone
            continue
        with os.fdopen(fd, "w") as handle:
            handle.write(f"{os.getpid()}\n")
        break
    else:
        raise FatalError(
            f"could not take the lock {lock}", "remove it if no forktool run is active"
        )
    try:
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            lock.unlink()
