"""Files forktool keeps between runs: where they live, and how one is read and written.

Two kinds live here: base trees' indexes (:mod:`forktool.git.tree_cache`) and parsed
configs (:mod:`forktool.config.kept`). Each is derived from inputs its name or
contents pin down, so a kept file is only ever a shortcut to an answer the run would
compute anyway.

Where: ``$FORKTOOL_CACHE_DIR``, else ``$XDG_CACHE_HOME/forktool``, else
``~/.cache/forktool``; ``FORKTOOL_CACHE_DIR=`` (empty) turns every kind off.

Trust: a file is read only when it is a regular file of ours, in directories of ours
that nobody else can write, and written whole or not at all (a temporary file renamed
into place). Nothing here raises: a cache that cannot be read or written is no cache.
"""

from __future__ import annotations

import os
import re
import stat
import time
import zlib
from pathlib import Path

MAX_BYTES = 1 << 30
TEMP_PREFIX = ".tmp-"  # an entry being written
_TEMP_NAME = re.compile(re.escape(TEMP_PREFIX) + r"[a-z0-9_]{8}")  # as mkstemp names it
STALE_SECONDS = 3600  # a temporary file this old was left by a killed run


def checksum_name(data: bytes) -> str:
    """Sixteen hex digits naming ``data`` (CRC-32 and Adler-32: no hashlib to import at
    start-up): a cache folder's or entry's name, and a kept config's seal."""
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"


def cache_root() -> Path | None:
    """The cache's directory, None when it is off (``FORKTOOL_CACHE_DIR=``, or set to a
    relative path) or no home is known."""
    chosen = os.environ.get("FORKTOOL_CACHE_DIR")
    if chosen is not None:  # a relative one would land in the fork the command runs in
        return Path(chosen) if os.path.isabs(chosen) else None
    base = os.environ.get("XDG_CACHE_HOME") or ""
    if not os.path.isabs(base):
        home = os.environ.get("HOME")
        if not home:
            return None
        base = os.path.join(home, ".cache")
    return Path(base) / "forktool"


def own_dir(path: Path) -> bool:
    """A real directory of ours that no one else can write."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return (
        stat.S_ISDIR(info.st_mode)
        and info.st_uid == os.getuid()
        and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    )


class Store:
    """The files of one folder under the cache root."""

    def __init__(self, root: Path, folder: str) -> None:
        self.root = root
        self.dir = root / folder

    def read(self, name: str) -> bytes | None:
        """Entry ``name``'s bytes, or None when there is none we can trust. A read
        marks the entry most recently used (kept longest)."""
        if not (own_dir(self.root) and own_dir(self.dir)):
            return None
        path = self.dir / name
        try:
            # O_NONBLOCK: a FIFO planted as an entry must not hang the run (it is then
            # refused as not a regular file); a regular file reads as ever.
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return None
        try:
            info = os.fstat(fd)
            if (
                not stat.S_ISREG(info.st_mode)
                or info.st_uid != os.getuid()
                or info.st_size > MAX_BYTES
            ):
                return None
            with os.fdopen(fd, "rb", closefd=False) as handle:
                data = handle.read()
        except OSError:
            return None
        finally:
            os.close(fd)
        try:
            os.utime(path)
        except OSError:
            pass
        return data

    def write(self, name: str, data: bytes) -> bool:
        """``data`` as entry ``name``, all or nothing; whether it was written."""
        import tempfile  # only on a miss: it costs a start-up a few ms

        try:
            self.root.parent.mkdir(parents=True, exist_ok=True)
            self.root.mkdir(mode=0o700, exist_ok=True)
            self.dir.mkdir(mode=0o700, exist_ok=True)
            if not (own_dir(self.root) and own_dir(self.dir)):
                return False
            fd, temp = tempfile.mkstemp(prefix=TEMP_PREFIX, dir=self.dir)
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                os.replace(temp, self.dir / name)
            except BaseException:
                Path(temp).unlink(missing_ok=True)
                raise
        except OSError:
            return False
        return True


def prune(folders: list[str], entry_name: re.Pattern[str], kept: int) -> None:
    """In ``folders`` taken together, the entries (files whose whole name matches
    ``entry_name``) beyond the ``kept`` most recently used removed, and temporary files
    a killed run left (older than :data:`STALE_SECONDS`); a folder left empty goes too.
    Nothing else is touched: the cache root may be a directory other programs use too
    (``FORKTOOL_CACHE_DIR=~/.cache``), so only names forktool gives are ever removed."""
    entries: list[tuple[int, str]] = []
    left: list[str] = []
    stale = time.time_ns() - STALE_SECONDS * 10**9
    try:
        for folder in folders:
            for entry in os.scandir(folder):
                if not entry.is_file(follow_symlinks=False):
                    continue
                when = entry.stat(follow_symlinks=False).st_mtime_ns
                if entry_name.fullmatch(entry.name):
                    entries.append((when, entry.path))
                elif _TEMP_NAME.fullmatch(entry.name) and when < stale:
                    left.append(entry.path)
    except OSError:
        return
    entries.sort(reverse=True)
    for path in [*left, *(path for _, path in entries[kept:])]:
        try:
            os.unlink(path)
            os.rmdir(os.path.dirname(path))  # only when it is empty now
        except OSError:
            pass
