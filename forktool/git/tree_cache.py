"""Base trees kept between runs: a big tree's index is read once, not on every run.

Every ``verify`` starts with ``git read-tree`` of the base, which costs about 3.5 us
a file (20 ms for 5,000 files, about 0.3 s for a kernel's 85,000), and on the side
by side path with ``git ls-tree -r -l`` of it (the planner's weights). Both depend
only on the object, the repository and the git that wrote them, so the first run
keeps a copy and later runs start from it.

Where: the cache directory (:mod:`forktool.cache_files`). Entries
live in one directory per repository (its object directory) and git binary, so a
new git never reads an index an older one wrote, and one repository's replacement
refs never reach another's. A repository with ``git replace`` refs keeps nothing:
there an object id does not pin down what git reads. The :data:`KEPT` most recently
used entries stay.

Trust: an entry is used only when it is a regular file of ours, in directories of
ours that nobody else can write. An index is kept only when its trailing checksum
holds, and is written whole or not at all (a temporary file renamed into place); it
is not hashed again when read (git does not either: that costs a hashlib import and
a pass over the file on every run). An entry holding another tree cannot make a run
pass: verify's round trip compares the reverted index with the base tree git names,
which such an index never gives back. Nothing here raises: a cache that cannot be
read or written is no cache.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from forktool.cache_files import Store, cache_root, checksum_name, own_dir, prune

KEPT = 16  # entries (indexes and listings together) across every repository
INDEX = ".index"
SIZES = ".sizes"  # `git ls-tree -r -l -z` output

_git_key: str | None = None  # the git binary's identity, found once
_OBJECT_ID = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?\Z")
_MOVED_BY = ("GIT_REPLACE_REF_BASE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES")
_FOLDER = re.compile(r"[0-9a-f]{16}")  # a repository's and git's folder: its key
_ENTRY = re.compile(
    r"[0-9a-f]{40}(?:[0-9a-f]{24})?(?:" + re.escape(INDEX) + "|" + re.escape(SIZES) + ")"
)


def is_object_id(name: str) -> bool:
    """A full object id (SHA-1 or SHA-256): what it names never changes."""
    return _OBJECT_ID.match(name) is not None


def _binary_key() -> str | None:
    """The git that runs, as (path, inode, size, mtime): an upgrade changes it."""
    global _git_key
    if _git_key is None:
        found = shutil.which("git")
        if found is None:
            return None
        try:
            info = os.stat(found)
        except OSError:
            return None
        _git_key = f"{os.path.realpath(found)}\0{info.st_ino}\0{info.st_size}\0{info.st_mtime_ns}"
    return _git_key


def _replacing(common: Path) -> bool:
    """Whether git may read another object than the id names in this repository (its
    common directory ``common``): ``git replace`` refs, which give a commit or tree id
    other contents, or a store whose refs cannot be read cheaply (reftable), or an
    environment that moves the objects or the replace refs. A kept index is keyed by
    the id alone, so then there is none."""
    if any(os.environ.get(name) for name in _MOVED_BY):
        return True
    try:
        if any(os.scandir(common / "refs" / "replace")):
            return True
    except FileNotFoundError:
        pass
    except OSError:
        return True
    if (common / "reftable").exists():
        return True
    try:
        with open(common / "packed-refs", "rb") as packed:
            return b" refs/replace/" in packed.read()
    except FileNotFoundError:
        return False
    except OSError:
        return True


class TreeCache:
    """The entries of one repository (by its object directory) and git binary."""

    def __init__(self, root: Path, objects: Path, binary: str) -> None:
        self.root = root
        self.store = Store(root, checksum_name(os.fsencode(f"{objects}\0{binary}")))
        self.dir = self.store.dir

    @classmethod
    def of(cls, objects: Path) -> TreeCache | None:
        """The cache of the repository whose object directory is ``objects``; None when
        the cache is off or git cannot be found."""
        root = cache_root()
        binary = _binary_key()
        if root is None or binary is None or _replacing(objects.parent):
            return None
        return cls(root, objects, binary)

    def index(self, oid: str, dest: Path) -> bool:
        """Copy the index of ``oid`` (a tree, or a commit's tree) to ``dest``; False
        when there is no sound one."""
        data = self._read(oid + INDEX)
        if data is None or data[:4] != b"DIRC":
            return False
        try:
            dest.write_bytes(data)
        except OSError:
            return False
        return True

    def keep_index(self, oid: str, index: Path) -> None:
        """Keep the index file ``index`` (which holds ``oid``'s tree and nothing else)."""
        try:
            data = index.read_bytes()
        except OSError:
            return
        if _sound_index(data, len(oid)):
            self._write(oid + INDEX, data)

    def sizes(self, oid: str) -> str | None:
        """The kept ``ls-tree -r -l -z`` listing of ``oid``, or None."""
        data = self._read(oid + SIZES)
        return data.decode("utf-8", "surrogateescape") if data is not None else None

    def keep_sizes(self, oid: str, listing: str) -> None:
        self._write(oid + SIZES, listing.encode("utf-8", "surrogateescape"))

    def _read(self, name: str) -> bytes | None:
        return self.store.read(name)

    def _write(self, name: str, data: bytes) -> None:
        """``data`` as entry ``name``, then the oldest entries beyond :data:`KEPT`
        (across every repository's folder) removed."""
        if not self.store.write(name, data):
            return
        try:
            folders = [
                entry.path
                for entry in os.scandir(self.root)
                if _FOLDER.fullmatch(entry.name)
                and entry.is_dir(follow_symlinks=False)
                and own_dir(Path(entry.path))
            ]
        except OSError:
            return
        prune(folders, _ENTRY, KEPT)


def _sound_index(data: bytes, oid_length: int) -> bool:
    """An index file whose trailing checksum holds (SHA-1 for 40-digit ids, SHA-256
    for 64): what git checks before it reads one. An index written without one
    (``index.skipHash``) is not kept."""
    import hashlib

    width = oid_length // 2
    if oid_length not in (40, 64) or len(data) < 12 + width or data[:4] != b"DIRC":
        return False
    body, trailer = data[:-width], data[-width:]
    algorithm = hashlib.sha1 if width == 20 else hashlib.sha256
    return algorithm(body, usedforsecurity=False).digest() == trailer
