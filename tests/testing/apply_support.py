"""Helpers for the apply-engine tests: side commits, pristine targets, all three appliers.

Import with ``from apply_support import ...`` (like ``helpers``).
"""

from __future__ import annotations

import io
import os
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from forktool.builder import RepoBuilder
from forktool.demo.example import FORMAT_PATCH_ARGS
from testing.helpers import MiniFork, mini_fork, snapshot_tree

ENGINES = ("verify", "git", "patch")


def numbered(count: int, prefix: str = "line") -> str:
    """``count`` distinct lines: ``line 1`` .. ``line N``."""
    return "".join(f"{prefix} {n}\n" for n in range(1, count + 1))


def edit_line(text: str, old: str, new: str) -> str:
    """``text`` with the one line equal to ``old`` replaced by ``new``."""
    lines = text.split("\n")
    assert lines.count(old) == 1, f"{old!r} is not exactly once in the text"
    lines[lines.index(old)] = new
    return "\n".join(lines)


def side_commit(repo: RepoBuilder, base: str, change: Callable[[Path], None]) -> str:
    """A commit on top of ``base`` made by ``change(worktree)``, off every branch."""
    head = repo.git.out(["symbolic-ref", "-q", "--short", "HEAD"], purpose="remember the branch")
    repo.git.run(["checkout", "-q", "--detach", base], purpose="detach at the base")
    try:
        change(repo.path)
        return repo.commit("side\n")
    finally:
        repo.git.run(["checkout", "-q", "-f", head], purpose="return to the branch")


def export(repo: RepoBuilder, commit: str, *extra: str) -> bytes:
    """``commit`` as a canonical format-patch (``extra`` args e.g. ``-M`` for renames)."""
    return repo.git.run(
        [*FORMAT_PATCH_ARGS, *extra, "-1", "--stdout", commit], purpose="export a test patch"
    ).stdout


def patch_of(repo: RepoBuilder, base: str, change: Callable[[Path], None], *extra: str) -> bytes:
    return export(repo, side_commit(repo, base, change), *extra)


def writes(files: dict[str, str | bytes | None]) -> Callable[[Path], None]:
    """A ``change`` that writes (or, for None, deletes) ``files``."""

    def change(root: Path) -> None:
        for name, content in files.items():
            path = root / name
            if content is None:
                path.unlink()
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(content.encode() if isinstance(content, str) else content)

    return change


def pristine(fork: MiniFork, dest: Path) -> Path:
    """The pinned tree as a plain directory (no git), as an image would install it."""
    data = fork.repo.git.run(["archive", "--format=tar", fork.pin], purpose="export the pin").stdout
    dest.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="tar")
    return dest


@dataclass
class Run:
    """One applier's verdicts on the series, and the exit code."""

    engine: str
    code: int
    data: dict[str, object]

    @property
    def patches(self) -> list[dict[str, object]]:
        return self.data["patches"]  # type: ignore[return-value]

    @property
    def statuses(self) -> list[str]:
        return [str(p["status"]) for p in self.patches]

    def verdict(self, name: str) -> dict[str, object]:
        return next(p for p in self.patches if p["patch"] == name)


def run_engine(fork: MiniFork, engine: str, work: Path) -> Run:
    """``verify`` in the repository, or ``apply --target`` on a fresh pristine copy.

    A refused apply must leave the target byte-identical and free of stray files;
    a successful one must leave a target that ``apply --verify`` accepts.
    """
    if engine == "verify":
        before = snapshot_tree(fork.root)
        result = fork.cli("verify", "--format", "json")
        assert snapshot_tree(fork.root) == before, "verify changed the repository"
        assert result.code in (0, 1), result.err
        return Run(engine, result.code, result.json())
    target = pristine(fork, work / f"target-{engine}")
    before = snapshot_tree(target)
    result = fork.cli("apply", "--target", target, "--engine", engine, "--format", "json")
    assert result.code in (0, 1), result.err
    assert not stray_names(target), stray_names(target)
    if result.code != 0:
        assert snapshot_tree(target) == before, f"a refused {engine} run changed the target"
    else:
        check = fork.cli("apply", "--target", target, "--engine", engine, "--verify")
        assert check.code == 0, check.out
    return Run(engine, result.code, result.json())


def run_all(fork: MiniFork, work: Path) -> dict[str, Run]:
    return {engine: run_engine(fork, engine, work) for engine in ENGINES}


def stray_names(root: Path) -> list[str]:
    """Files an applier might leave behind: backups, rejects, editor-style copies."""
    found = []
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            if name.endswith((".orig", ".rej", "~")) or name.startswith(".#"):
                found.append(os.path.join(dirpath, name))
    return found


def placement(verdict: dict[str, object]) -> tuple[object, ...]:
    """What must agree between engines: status, culprit file, hunk, patch line, hunks."""
    return (
        verdict["status"],
        verdict.get("file"),
        verdict.get("hunk"),
        verdict.get("line"),
        verdict["hunks"],
    )


SPLIT_FILES = {f"pkg/m{n}.py": numbered(30, f"m{n}") for n in range(6)}


def series_fork(builder: RepoBuilder, count: int = 6) -> MiniFork:
    """A fork of ``count`` patches on :data:`SPLIT_FILES`, each editing one file (six
    files in turn: a series of 16 or more splits into bins side by side)."""
    fork = mini_fork(builder, SPLIT_FILES)
    patches = {}
    base = fork.pin
    for n in range(count):
        name = f"pkg/m{n % 6}.py"
        text = edit_line(SPLIT_FILES[name], f"m{n % 6} {n + 3}", f"m{n % 6} {n + 3} changed")
        base = side_commit(fork.repo, base, writes({name: text}))
        patches[f"{n + 1:04d}.patch"] = export(fork.repo, base)
    fork.write(patches)
    return fork
