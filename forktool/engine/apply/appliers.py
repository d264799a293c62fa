"""Appliers: one patch onto a plain directory, by ``git apply`` outside any
repository or by GNU patch with strict flags, and the file modes a patch declares
(checked before, kept after: appliers rewrite files with the umask's bits).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Protocol

from forktool.engine.apply.applier_output import (
    expected_line,
    mode_detail,
    read_git_apply,
    read_gnu_patch,
)
from forktool.engine.apply.precheck import whole_file_hunk
from forktool.engine.apply.revert import taken_back
from forktool.engine.apply.verdict import Attempt
from forktool.fork import Patch
from forktool.git import apply_in_directory, run_gnu_patch
from forktool.model.patchfile import FileDiff
from forktool.model.text import line_count


def touched(patches: Sequence[Patch]) -> list[str]:
    """Every path the patches read or write, each once, in the order they name them."""
    paths: list[str] = []
    for patch in patches:
        for diff in patch.parsed.files:
            for path in (diff.old_path, diff.new_path):
                if path is not None and path not in paths:
                    paths.append(path)
    return paths


# -- modes: what a patch declares, checked and kept by the directory appliers ------

EXECUTABLE, REGULAR = "100755", "100644"


def declared_modes(diff: FileDiff) -> tuple[str | None, str | None]:
    """(before, after) modes the diff states in ``old mode``/``new mode``/``new file
    mode``/``deleted file mode`` lines; the ``index`` line's mode is not a statement
    that the mode matters (a package installer picks its own)."""
    before = after = None
    for line in diff.header_lines:
        words = line.split()
        if line.startswith(("old mode ", "deleted file mode ")) and words:
            before = words[-1]
        elif line.startswith(("new mode ", "new file mode ")) and words:
            after = words[-1]
    return before, after


def _git_mode(path: Path) -> str:
    return EXECUTABLE if path.stat().st_mode & 0o100 else REGULAR


def mode_failure(directory: Path, patch: Patch, reverse: bool) -> Attempt | None:
    """A failed attempt if a file the patch changes the mode of does not start from the
    mode the patch starts from (GNU patch never checks; git only warns)."""
    for diff in patch.parsed.files:
        before, after = declared_modes(diff)
        wanted = after if reverse else before
        rel = diff.new_path if reverse else diff.old_path
        if wanted not in (EXECUTABLE, REGULAR) or rel is None:
            continue
        path = directory / rel
        if path.is_symlink() or not path.is_file():
            continue  # a missing file or a wrong kind: the applier reports it
        found = _git_mode(path)
        if found != wanted:
            attempt = Attempt(ok=False, detail=mode_detail(rel, wanted, found))
            attempt.fail("mode", rel)
            return attempt
    return None


def _permissions(directory: Path, patch: Patch) -> dict[str, int]:
    """Permission bits of the files ``patch`` reads, before it runs."""
    found: dict[str, int] = {}
    for rel in touched([patch]):
        path = directory / rel
        if path.is_file() and not path.is_symlink():
            found[rel] = path.stat().st_mode & 0o7777
    return found


def _with_exec(bits: int, executable: bool) -> int:
    """``bits`` made executable (for whoever may read) or not."""
    return bits | ((bits & 0o444) >> 2) if executable else bits & ~0o111


def settle_modes(directory: Path, patch: Patch, reverse: bool, before: dict[str, int]) -> None:
    """After an applier wrote ``patch``: each written file keeps the permissions it had
    (appliers rewrite files with the umask's), and takes the executable bit the patch
    sets when it changes the mode (GNU patch does not set it exactly)."""
    for diff in patch.parsed.files:
        source, written = (
            (diff.new_path, diff.old_path) if reverse else (diff.old_path, diff.new_path)
        )
        if written is None:
            continue
        path = directory / written
        if path.is_symlink() or not path.is_file():
            continue
        old_mode, new_mode = declared_modes(diff)
        wanted = old_mode if reverse else new_mode
        bits = before.get(source or "", path.stat().st_mode & 0o7777)
        if wanted in (EXECUTABLE, REGULAR):
            bits = _with_exec(bits, wanted == EXECUTABLE)
        os.chmod(path, bits)


class Applier(Protocol):
    name: str
    # Whether the applier holds hunks to the top or the end of a file as GNU patch
    # does (forktool.engine.apply.anchors); git's own anchors differ.
    gnu_anchors: bool

    def attempt(
        self,
        directory: Path,
        patch: Patch,
        *,
        reverse: bool,
        fuzz: bool = False,
        unanchored: bool = False,
    ) -> Attempt: ...


class GitDirApplier:
    """``git apply`` outside any repository (the target is never a checkout)."""

    name = "git"
    gnu_anchors = False

    def attempt(
        self,
        directory: Path,
        patch: Patch,
        *,
        reverse: bool,
        fuzz: bool = False,
        unanchored: bool = False,
    ) -> Attempt:
        failed = mode_failure(directory, patch, reverse)
        if failed is not None:
            return failed
        before = _permissions(directory, patch)
        with taken_back(patch, joined=False) if reverse else nullcontext([patch.path]) as files:
            res = apply_in_directory(
                directory,
                files,
                reverse=reverse,
                check_with_context=1 if fuzz else None,
                unanchored=unanchored,
                purpose=f"apply {patch.name}",
            )
        attempt = read_git_apply(patch.parsed, res.err, res.ok, reverse, modes=False)
        if attempt.ok and not fuzz:
            settle_modes(directory, patch, reverse, before)
        return attempt


class GnuPatchApplier:
    """GNU patch with the strict flags: no fuzz, no backups, no rejects, never
    auto-reverse, and no CR stripping (``--binary``: GNU patch otherwise strips the CRs
    of a patch file saved with CR LF throughout, which git never does, so the engines
    would disagree and the fuzz probe would call such a patch ``fuzz``)."""

    name = "patch"
    gnu_anchors = True
    STRICT = (
        "-p1",
        "--binary",
        "--fuzz=0",
        "--no-backup-if-mismatch",
        "--reject-file=-",
        "--batch",
        "--forward",
    )

    def attempt(
        self,
        directory: Path,
        patch: Patch,
        *,
        reverse: bool,
        fuzz: bool = False,
        unanchored: bool = False,  # GNU patch's own anchors are the ones to keep
    ) -> Attempt:
        anchored = _anchor_failure(directory, patch, reverse) or mode_failure(
            directory, patch, reverse
        )
        if anchored is not None:
            return anchored
        flags = list(self.STRICT)
        if reverse:
            flags.append("-R")
        if fuzz:
            flags = [f for f in flags if not f.startswith("--fuzz")] + ["--fuzz=2", "--dry-run"]
        before = _permissions(directory, patch)
        with taken_back(patch, joined=True) if reverse else nullcontext([patch.path]) as files:
            returncode, out = run_gnu_patch(flags, directory, files[0])
        attempt = read_gnu_patch(patch.parsed, out, returncode == 0, reverse)
        if attempt.ok and not fuzz:
            settle_modes(directory, patch, reverse, before)
        return attempt


def _anchor_failure(directory: Path, patch: Patch, reverse: bool) -> Attempt | None:
    """Git anchors a whole-file hunk (no context, from line 1) at both ends of the
    file; GNU patch would place it by content alone. Hold GNU patch to git's rule:
    the file must have exactly the hunk's lines."""
    for diff in patch.parsed.files:
        for number, hunk in enumerate(diff.hunks, start=1):
            if not whole_file_hunk(diff, hunk):
                continue
            try:
                data = (directory / diff.path).read_bytes()
            except OSError:
                continue  # a missing file: GNU patch reports it
            if line_count(data) != (hunk.new_count if reverse else hunk.old_count):
                attempt = Attempt(ok=False, failed_hunk=number)
                attempt.fail("context", diff.path, expected_line(hunk, reverse))
                return attempt
    return None


APPLIERS: dict[str, type[GitDirApplier] | type[GnuPatchApplier]] = {
    "git": GitDirApplier,
    "patch": GnuPatchApplier,
}
