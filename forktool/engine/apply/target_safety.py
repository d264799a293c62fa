"""What may be patched in a plain directory, decided before anything runs: no write
through a symlink, only regular files (or links changed as links), no submodules, and
no ``.orig``/``.rej`` left over from an earlier run."""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from forktool.engine.apply.appliers import touched
from forktool.engine.apply.verdict import PatchVerdict
from forktool.fork import Patch
from forktool.model.patchfile import FileDiff

STRAY_SUFFIXES = (".orig", ".rej")
GITLINK_MODE = "160000"


def symlink_problem(target: Path, rel: str, link_diff: bool) -> str | None:
    """Why writing ``rel`` under ``target`` could land outside it, or None.

    A symlinked directory on the way is refused wherever it points (writes would
    follow it), and so is a symlink at the file itself unless the patch changes
    the link as a link (``link_diff``: git's mode 120000), which replaces it
    without following it.
    """
    current = target
    parts = Path(rel).parts
    for depth, part in enumerate(parts, start=1):
        current = current / part
        if not current.is_symlink():
            continue
        shown = "/".join(parts[:depth])
        pointee = os.readlink(current)
        if depth < len(parts):
            return f"{rel}: '{shown}' is a symlinked directory (to {pointee}); refusing to write through it"
        if not link_diff:
            return f"{rel}: is a symlink (to {pointee}); refusing to patch through it"
    return None


def is_gitlink(diff: FileDiff) -> bool:
    return GITLINK_MODE in (diff.old_mode, diff.new_mode)


def target_refusal(target: Path, patch: Patch, links: set[str]) -> PatchVerdict | None:
    """Why ``patch`` cannot go onto ``target`` as it is, found before anything runs."""
    if gitlink := next((d for d in patch.parsed.files if is_gitlink(d)), None):
        reason = (
            f"{gitlink.path}: a submodule (gitlink, mode {GITLINK_MODE}) has no content "
            "to apply to a plain directory; leave submodules out of the series"
        )
        return PatchVerdict(patch.name, "unsupported", reason, file=gitlink.path)
    for rel in touched([patch]):
        problem = symlink_problem(target, rel, rel in links) or kind_problem(target, rel)
        if problem:
            return PatchVerdict(patch.name, "unsafe", problem, file=rel)
    return None


def kind_problem(target: Path, rel: str) -> str | None:
    """Why the thing at ``rel`` cannot be patched as a file (a directory, a FIFO, a
    device: copying or reading it would fail or block), or None."""
    path = target / rel
    try:
        mode = path.lstat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISREG(mode) or stat.S_ISLNK(mode):
        return None
    kind = (
        "a directory"
        if stat.S_ISDIR(mode)
        else "a FIFO"
        if stat.S_ISFIFO(mode)
        else ("a device or socket")
    )
    return f"{rel}: is {kind} where the patch expects a file; refusing to patch it"


def stray_files(target: Path, series_paths: Sequence[str]) -> list[str]:
    """The ``.orig``/``.rej`` files under ``target`` an applier would leave beside a
    file the series patches (``series_paths``), where a failed or fuzzy run leaves them;
    one the series itself names (a patch may create ``setup.cfg.orig``) is not one.
    Files of those names elsewhere are the target's own: an upstream tarball may ship
    them (Debian's isc-dhcp has test samples named ``*.conf.orig``)."""
    own = set(series_paths)
    return sorted(
        rel
        for path in own
        for suffix in STRAY_SUFFIXES
        if (rel := path + suffix) not in own and (target / rel).is_file()
    )
