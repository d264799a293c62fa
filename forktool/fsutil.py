"""Writing the user's files safely: all or nothing, never half-written.

:func:`write_files` is the only way forktool changes a fork's files. It writes
every new content to a temporary file beside its target first (a Ctrl-C or a
kill up to there changes nothing), then records the whole write in a journal
(the commit point), then moves the files into place. A Ctrl-C during the moves
is held until the last one is done; a failure puts every target back. A run
killed outright (SIGKILL) during the moves leaves its journal, and the next
mutating run finishes the write (:func:`recover_interrupted`) and says so.

:func:`fork_lock` keeps two mutating runs apart. It is an ``flock`` on a file in
the repository's common git directory, so the kernel releases it when its
holder dies however it dies: a lock left by a killed run is never mistaken for
a live one, and a reused pid cannot keep it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import signal
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from forktool.errors import FatalError
from forktool.faults import faultpoint
from forktool.model.text import whole_number

TMP_MARK = ".forktool-tmp"
BACKUP_MARK = ".forktool-bak"
LOCK_NAME = "forktool.lock"
JOURNAL_NAME = "forktool-journal.json"

# The directory of the lock this process holds (and its depth): a write made
# under the lock keeps its journal there, where the next run looks for it.
_held: dict[Path, int] = {}


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# Why a write can fail that is no bug and no bad input: the disk, the quota, the
# file size limit (ulimit -f), a read-only mount. Exit 2 with what to do.
_NO_ROOM_HINTS = {
    errno.ENOSPC: "free some disk space, then run the command again",
    errno.EDQUOT: "free some of your disk quota, then run the command again",
    errno.EFBIG: "the file size limit (ulimit -f) is too small: raise it, then run the "
    "command again",
    errno.EROFS: "the fork is on a read-only file system: run this command in a writable checkout",
}


def write_refusal(exc: OSError, what: str) -> FatalError | None:
    """The exit-2 error for a write the file system refused (disk full, file too large,
    read-only), or None for any other OSError."""
    hint = _NO_ROOM_HINTS.get(exc.errno or 0)
    if hint is None:
        return None
    name = os.fsdecode(exc.filename) if exc.filename else what
    for mark in (TMP_MARK, BACKUP_MARK):
        name = name.partition(mark)[0] or name
    return FatalError(f"could not write {name}: {os.strerror(exc.errno or 0)}", hint)


@contextmanager
def _removed_on_failure(path: Path) -> Iterator[None]:
    """A file being written is removed if writing it fails (it is not registered for
    clean-up until it is complete)."""
    try:
        yield
    except BaseException:
        with contextlib.suppress(OSError):
            path.unlink()
        raise


def _write_temp(target: Path, data: bytes) -> Path:
    faultpoint("fsutil.temp")
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = target.with_name(f"{target.name}{TMP_MARK}-{os.getpid()}")
    with _removed_on_failure(temp):
        with open(temp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if target.exists():
            os.chmod(temp, target.stat().st_mode & 0o7777)
    return temp


def atomic_write(target: Path, data: bytes) -> None:
    write_files({target: data})


class _Step:
    """One file of a transaction: its new content (or None to delete it), and how far
    its move went."""

    def __init__(self, target: Path, temp: Path | None) -> None:
        self.target = target
        self.temp = temp
        self.backup: Path | None = None
        self.done = False


@contextmanager
def _signals_deferred() -> Iterator[list[int]]:
    """Hold SIGINT/SIGTERM while files are being moved, so a move is never cut short.

    Yields the list of signals that arrived; the caller acts on them afterwards.
    """
    pending: list[int] = []

    def remember(signum: int, frame: object) -> None:
        del frame
        pending.append(signum)

    try:
        old = {sig: signal.signal(sig, remember) for sig in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:  # not the main thread: nothing to defer
        yield pending
        return
    try:
        yield pending
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def write_files(changes: Mapping[Path, bytes | None]) -> None:
    """Replace (bytes) or delete (None) every path, all or nothing.

    A write the file system refuses (disk full, file too large, read-only) raises
    its OSError with nothing changed and no temporary file left; the CLI says why
    (:func:`write_refusal`).
    """
    steps: list[_Step] = []
    pending: list[int] = []
    try:
        for target, data in changes.items():
            steps.append(_Step(target, None if data is None else _write_temp(target, data)))
        with _signals_deferred() as pending:
            _commit_all(steps)
    finally:
        for step in steps:
            for leftover in (step.temp, step.backup):
                if leftover is not None:
                    with contextlib.suppress(FileNotFoundError):
                        leftover.unlink()
    if pending:
        raise KeyboardInterrupt  # after the write: it is complete, and it stays


def _commit_all(steps: list[_Step]) -> None:
    journal = _journal_path()
    if journal is not None:
        faultpoint("fsutil.journal")
        _write_journal(journal, steps)
    try:
        _commit(steps)
    except BaseException:
        _rollback(steps)
        raise
    finally:
        for directory in {step.target.parent for step in steps}:
            _fsync_dir(directory)
    faultpoint("fsutil.cleanup")
    for step in steps:
        if step.backup is not None:
            with contextlib.suppress(FileNotFoundError):
                step.backup.unlink()
            step.backup = None
    if journal is not None:
        journal.unlink(missing_ok=True)


def _backup_name(target: Path, pid: int) -> Path:
    return target.with_name(f"{target.name}{BACKUP_MARK}-{pid}")


def _commit(steps: list[_Step]) -> None:
    for step in steps:
        faultpoint("fsutil.move")
        if step.target.exists() or step.target.is_symlink():
            step.backup = _backup_name(step.target, os.getpid())
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
    journal = _journal_path()
    if journal is not None:
        journal.unlink(missing_ok=True)


# -- the journal: what the next run needs to finish a killed write -----------------------


def _journal_path() -> Path | None:
    """Where a write keeps its journal: beside the lock this run holds (no lock, no journal)."""
    return next((directory / JOURNAL_NAME for directory in _held), None)


def _write_journal(journal: Path, steps: list[_Step]) -> None:
    record = {
        "pid": os.getpid(),
        "steps": [
            {
                "target": str(step.target),
                "temp": None if step.temp is None else str(step.temp),
                "backup": str(_backup_name(step.target, os.getpid())),
            }
            for step in steps
        ],
    }
    import json  # only where a write is journaled: not before verify starts git

    temp = journal.with_name(f"{journal.name}{TMP_MARK}-{os.getpid()}")
    with _removed_on_failure(temp):
        with open(temp, "w", encoding="utf-8") as handle:
            json.dump(record, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, journal)
    _fsync_dir(journal.parent)


def _finish_journal(journal: Path) -> str | None:
    """Roll a killed run's committed write forward; a notice for the user, or None."""
    import json

    try:
        record = json.loads(journal.read_text(encoding="utf-8"))
        pid = int(record["pid"])
        steps = [(Path(s["target"]), s["temp"], Path(s["backup"])) for s in record["steps"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise FatalError(
            f"{journal}: the journal of an interrupted write cannot be read ({exc})",
            "check the fork's files by hand (git status), then remove the journal",
        ) from exc
    for target, temp, _backup in steps:
        if temp is not None and Path(temp).exists():
            os.replace(temp, target)  # not moved yet: move it now
        elif temp is None:
            with contextlib.suppress(FileNotFoundError):
                target.unlink()
    for directory in {target.parent for target, _, _ in steps}:
        _fsync_dir(directory)
    for _target, _temp, backup in steps:
        backup.unlink(missing_ok=True)
    journal.unlink()
    names = ", ".join(target.name for target, _, _ in steps)
    return f"finished a write of {len(steps)} file(s) cut short by a killed forktool run (pid {pid}): {names}"


# -- leftovers of killed runs -----------------------------------------------------------------


def _marked_pid(path: Path) -> int | None:
    for mark in (TMP_MARK, BACKUP_MARK):
        _, sep, pid = path.name.rpartition(f"{mark}-")
        if sep and (number := whole_number(pid, 10)) is not None:
            return number
    return None


def _walk_marked(root: Path, *, skip_git: bool) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        if skip_git:
            dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            if TMP_MARK in name or BACKUP_MARK in name:
                yield Path(dirpath) / name


def leftover_temp_files(root: Path) -> list[Path]:
    """Temporary files an interrupted run (SIGKILL) may have left in the fork."""
    return sorted(p for p in _walk_marked(root, skip_git=True) if _marked_pid(p) is not None)


def recover_interrupted(lock_dir: Path, root: Path) -> list[str]:
    """Clean up after a killed run, under the lock: one notice per thing done.

    A committed write (its journal is there) is finished; temporary files of a run
    that is gone (in the fork, and in forktool's state under the git directory) are
    removed.
    """
    notices = []
    journal = lock_dir / JOURNAL_NAME
    if journal.is_file():
        notice = _finish_journal(journal)
        if notice:
            notices.append(notice)
    places = [(root, True), (lock_dir / "forktool", False), (lock_dir / "worktrees", False)]
    stale = sorted(
        {
            path
            for place, skip_git in places
            if place.is_dir()
            for path in _walk_marked(place, skip_git=skip_git)
            if (pid := _marked_pid(path)) is not None and pid != os.getpid() and not pid_alive(pid)
        }
        | {p for p in lock_dir.glob(f"{JOURNAL_NAME}{TMP_MARK}-*")}
    )
    for path in stale:
        path.unlink(missing_ok=True)
    if stale:
        shown = ", ".join(_shown(p, root, lock_dir) for p in stale[:3])
        more = f" and {len(stale) - 3} more" if len(stale) > 3 else ""
        notices.append(
            f"removed {len(stale)} temporary file(s) left by a killed forktool run: {shown}{more}"
        )
    return notices


def _shown(path: Path, root: Path, lock_dir: Path) -> str:
    for base in (root, lock_dir.parent):
        with contextlib.suppress(ValueError):
            return path.relative_to(base).as_posix()
    return str(path)


# -- the lock -------------------------------------------------------------------------


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (another user's counts as running): the one
    check behind every "left by a run that is gone" (locks, scratch, containers)."""
    try:
        os.kill(pid, 0)
    except OSError as exc:
        return exc.errno == errno.EPERM
    return True


def _holder(lock: Path) -> str:
    """The pid written in a lock someone holds (it may be a moment from being written)."""
    for _ in range(20):
        with contextlib.suppress(OSError):
            text = lock.read_text().strip()
            if whole_number(text, 10) is not None:
                return text
        time.sleep(0.05)
    return "unknown"


def _acquire(lock: Path) -> tuple[int, int | None]:
    """(fd of the held lock file, pid a killed run left in it or None)."""
    for _attempt in range(50):
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise _lock_refusal(exc, lock) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise FatalError(
                f"another forktool run holds the lock (pid {_holder(lock)})",
                "wait for it to finish, then run this command again",
            ) from None
        try:
            same = os.fstat(fd).st_ino == os.stat(lock).st_ino
        except FileNotFoundError:
            same = False
        if not same:  # its holder removed it as we opened it: take the new one
            os.close(fd)
            continue
        previous = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError as exc:
            lock.unlink(missing_ok=True)
            os.close(fd)
            raise _lock_refusal(exc, lock) from exc
        number = whole_number(previous, 10)
        stale = number if number is not None and number != os.getpid() else None
        return fd, stale
    raise FatalError(f"could not take the lock {lock}", "run the command again")


def _lock_refusal(exc: OSError, lock: Path) -> OSError | FatalError:
    refusal = write_refusal(exc, str(lock))
    if refusal is None:
        return exc
    return FatalError(f"could not take the lock {lock}: {exc.strerror}", refusal.hint)


@contextmanager
def fork_lock(git_dir: Path) -> Iterator[int | None]:
    """Hold the fork's lock for a mutating command (re-entrant within one run).

    Yields the pid of a killed run whose lock was taken over, or None.
    """
    key = git_dir.resolve()
    if key in _held:
        _held[key] += 1
        try:
            yield None
        finally:
            _held[key] -= 1
        return
    if _held:
        raise FatalError(f"already holding another fork's lock, not {key}")
    lock = key / LOCK_NAME
    fd, stale = _acquire(lock)
    _held[key] = 1
    try:
        yield stale
    finally:
        del _held[key]
        with contextlib.suppress(FileNotFoundError):
            lock.unlink()  # before the flock goes: a waiter then sees a new file
        os.close(fd)
