"""Taking a patch back: its file diffs undone in reverse order.

``git apply -R`` reverses each file diff of a patch but keeps their order, and chains
the diffs of one path inside one patch. That is the same thing unless two of them
touch one path: a patch of several commits that creates a file and then changes it
(Debian's samba ships one) is taken back by deleting the file first, and git leaves
the file behind without a word. Such a patch is taken back as its file diffs, each
byte for byte in a file of its own, so git undoes them one after the other, the last
first, as it undoes the patches of a series.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from forktool.engine.apply.bins import diff_pieces
from forktool.engine.apply.series_run import PatchFileArg
from forktool.fork import Patch
from forktool.model.patchfile import PatchFile


def repeats_a_path(parsed: PatchFile) -> bool:
    """Whether two file diffs of the patch touch one path."""
    seen: set[str] = set()
    for diff in parsed.files:
        paths = {p for p in (diff.old_path, diff.new_path) if p}
        if paths & seen:
            return True
        seen |= paths
    return False


def _diffs_of(patch: Patch) -> list[bytes]:
    """Each file diff of ``patch``, byte for byte, in order."""
    return diff_pieces(patch.read(), [diff.line for diff in patch.parsed.files])


class _Copy(NamedTuple):
    path: Path
    size: int


def to_take_back(patches: Sequence[Patch], folder: Path) -> list[PatchFileArg]:
    """``patches`` in order as a series to take back (the caller reverses it): each
    one whose file diffs repeat a path as those diffs, one file each in ``folder``,
    the others as they are."""
    given: list[PatchFileArg] = []
    for number, patch in enumerate(patches):
        if not repeats_a_path(patch.parsed):
            given.append(patch)
            continue
        pieces = _diffs_of(patch)
        paths = _written(pieces, folder, f"taken-back-{number}-")
        given += [_Copy(path, len(piece)) for path, piece in zip(paths, pieces, strict=True)]
    return given


def _written(pieces: Sequence[bytes], folder: Path, prefix: str) -> list[Path]:
    """Each of ``pieces`` in a file of its own in ``folder``, in order."""
    paths = [folder / f"{prefix}{number:04d}.patch" for number in range(len(pieces))]
    for path, piece in zip(paths, pieces, strict=True):
        path.write_bytes(piece)
    return paths


@contextmanager
def taken_back(patch: Patch, *, joined: bool) -> Iterator[list[Path]]:
    """The files an applier is given to take ``patch`` back: the patch itself, or when its
    file diffs repeat a path, those diffs in reverse order, one file each (git: one
    patch per file, so nothing is chained) or ``joined`` in one (GNU patch undoes each
    diff in turn), in a temporary directory removed on leaving."""
    if not repeats_a_path(patch.parsed):
        yield [patch.path]
        return
    pieces = _diffs_of(patch)[::-1]
    with tempfile.TemporaryDirectory(prefix="forktool-take-back-") as folder:
        yield _written([b"".join(pieces)] if joined else pieces, Path(folder), "")
