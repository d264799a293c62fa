"""Scratch copies of a plain directory's files: every patch is tried on a copy, and
the target is changed only by syncing a proven copy back (and restored from another
copy if that fails)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def scratch_copy(target: Path, paths: Sequence[str]) -> Iterator[Path]:
    """A private copy of ``paths`` from ``target``; the target is never written here."""
    scratch = Path(tempfile.mkdtemp(prefix="forktool-scratch-")) / "tree"
    scratch.mkdir()
    try:
        _copy_paths(target, scratch, paths)
        yield scratch
    finally:
        shutil.rmtree(scratch.parent, ignore_errors=True)


def _copy_paths(src_root: Path, dest_root: Path, paths: Sequence[str]) -> None:
    for rel in paths:
        src = src_root / rel
        if not (src.exists() or src.is_symlink()):
            continue
        dest = dest_root / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest, follow_symlinks=False)


def sync_back(scratch: Path, target: Path, paths: Sequence[str]) -> list[str]:
    """Make ``target`` match ``scratch`` on ``paths``; returns the paths changed."""
    changed = []
    for rel in paths:
        src, dest = scratch / rel, target / rel
        src_there = src.exists() or src.is_symlink()
        dest_there = dest.exists() or dest.is_symlink()
        if src_there and dest_there and not src.is_symlink() and not dest.is_symlink():
            if src.read_bytes() == dest.read_bytes() and src.stat().st_mode == dest.stat().st_mode:
                continue
        if not src_there and not dest_there:
            continue
        if dest_there:
            dest.unlink()
        if src_there:
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest, follow_symlinks=False)
        else:
            _prune_empty_dirs(dest.parent, target)
        changed.append(rel)
    return changed


def _prune_empty_dirs(directory: Path, stop: Path) -> None:
    while directory != stop and directory.is_dir() and not any(directory.iterdir()):
        directory.rmdir()
        directory = directory.parent
