"""Patch tools beside git: ``git apply`` in a plain directory, and GNU patch."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from forktool.errors import FatalError
from forktool.git.runner import GitResult, hardened_env, run, run_program


def apply_in_directory(
    directory: Path,
    patch: Path | Sequence[Path],
    *,
    reverse: bool,
    check_with_context: int | None,
    purpose: str,
    unanchored: bool = False,
) -> GitResult:
    """``git apply -v -p1`` of ``patch`` (or of several patch files, in order) in a plain
    ``directory`` (never a repository: no
    git directory is looked for above it); ``check_with_context`` only checks, with that
    much context; ``unanchored``: ``--unidiff-zero`` (no hunk held to the top or the end
    of its file). Not checked: the caller reads git's output."""
    args = ["apply", "-v", "--whitespace=nowarn", "--allow-empty", "-p1"]
    args += ["-R"] if reverse else []
    args += ["--unidiff-zero"] if unanchored else []
    if check_with_context is not None:
        args += [f"-C{check_with_context}", "--check"]
    files = [patch] if isinstance(patch, Path) else list(patch)
    return run(
        [*args, *(str(f) for f in files)],
        cwd=directory,
        purpose=purpose,
        env={
            "GIT_CEILING_DIRECTORIES": str(directory.parent),
            "GIT_DIR": str(directory / ".no-git"),
        },
        check=False,
    )


# Variables that change what GNU patch does (POSIX mode picks other file names and
# makes backups; the others name backup files): never inherited.
_GNU_PATCH_VARIABLES = (
    "POSIXLY_CORRECT",
    "PATCH_GET",
    "PATCH_VERSION_CONTROL",
    "VERSION_CONTROL",
    "SIMPLE_BACKUP_SUFFIX",
    "QUOTING_STYLE",
)


def run_gnu_patch(flags: Sequence[str], directory: Path, patch: Path) -> tuple[int, str]:
    """GNU patch with ``flags`` on ``directory`` (the patch read from ``patch``): its exit
    status and its output (stdout, then stderr). Exit 2 when GNU patch is not installed."""
    env = hardened_env()
    for name in _GNU_PATCH_VARIABLES:
        env.pop(name, None)
    argv = ["patch", *flags, "-d", str(directory), "-i", str(patch)]
    try:
        proc = run_program(argv, env)
    except FileNotFoundError as exc:
        raise FatalError(
            "GNU patch is not installed", "install it (apt-get install patch) or use --engine git"
        ) from exc
    out = proc.stdout.decode("utf-8", "surrogateescape") + proc.stderr.decode(
        "utf-8", "surrogateescape"
    )
    return proc.returncode, out
