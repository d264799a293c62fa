"""Plain helpers for tests (no fixtures): import them with ``from helpers import ...``."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from forktool.builder import RepoBuilder
from forktool.demo.example import FORMAT_PATCH_ARGS


def snapshot_tree(path: Path) -> dict[str, bytes]:
    """Every entry under ``path``, ``.git`` included, for byte-identical comparisons.

    Keys are POSIX paths relative to ``path``, marked the way ``ls -F`` marks them:
    a plain file maps to its bytes, an executable file is keyed ``name*`` (so a
    mode change shows), a symlink ``name@`` maps to its target, and a directory
    (empty ones too) is keyed ``name/`` and a FIFO ``name|``, both mapping to ``b""``.
    """
    root = Path(path)
    snapshot: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        for name in [*dirnames, *filenames]:
            key, value = _entry(here / name)
            snapshot[(here / name).relative_to(root).as_posix() + key] = value
    return snapshot


def _entry(entry: Path) -> tuple[str, bytes]:
    """The ``ls -F`` mark and the value for one directory entry."""
    if entry.is_symlink():
        return "@", os.fsencode(os.readlink(entry))
    if entry.is_dir():
        return "/", b""
    if stat.S_ISFIFO(entry.stat().st_mode):
        return "|", b""  # never read: it would block
    if os.access(entry, os.X_OK):
        return "*", entry.read_bytes()
    return "", entry.read_bytes()


# -- running the CLI and building small forks ------------------------------------


# A step of a long command, named as it starts (piped: one line each on stderr).
STEP = re.compile(r"^[a-z]+: .* \(\d+/\d+\)$")


@dataclass
class CliResult:
    code: int
    out: str
    err: str

    def json(self) -> dict[str, object]:
        data: dict[str, object] = json.loads(self.out)
        return data

    @property
    def error_lines(self) -> list[str]:
        """Stderr's lines, without the steps a long command names as it starts them."""
        return [line for line in self.err.splitlines() if line and not STEP.match(line)]


def run_cli(*args: str | Path) -> CliResult:
    """Run forktool in-process as the ``forktool`` command runs (a plain ``verify`` or
    ``status`` line gets its head start first and runs without click: forktool.entry),
    capturing stdout and stderr (plain, no colour). What was started and not taken is
    stopped after."""
    from forktool.entry import run
    from forktool.head_start import release

    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = run(argv)
        finally:
            release()
    return CliResult(code, out.getvalue(), err.getvalue())


def make_patch(
    repo: RepoBuilder, base: str, files: dict[str, str | bytes | None], subject: str
) -> bytes:
    """A canonical format-patch of ``files`` edited on top of ``base`` (history untouched)."""
    head = repo.git.out(["symbolic-ref", "-q", "--short", "HEAD"], purpose="remember the branch")
    repo.git.run(["checkout", "-q", "--detach", base], purpose="detach at the base")
    try:
        repo.commit(subject + "\n", files)
        return repo.git.run([*FORMAT_PATCH_ARGS, "-1", "--stdout"], purpose="export").stdout
    finally:
        repo.git.run(["checkout", "-q", "-f", head], purpose="return to the branch")


@dataclass
class MiniFork:
    """A repository with an upstream tag ``v1`` and fork files written (uncommitted)."""

    repo: RepoBuilder
    pin: str = "v1"
    patches: dict[str, bytes] = field(default_factory=dict)

    @property
    def root(self) -> Path:
        return self.repo.path

    def write(
        self,
        patches: dict[str, bytes],
        *,
        commits: dict[str, str] | None = None,
        series: str | None = None,
        extra_config: str = "",
    ) -> None:
        pin_commit = self.repo.rev(self.pin)
        (self.root / "forktool.yaml").write_text(
            f"pin:\n  tag: {self.pin}\n  commit: {pin_commit}\n{extra_config}"
        )
        (self.root / "patches").mkdir(exist_ok=True)
        for name, data in patches.items():
            (self.root / "patches" / name).parent.mkdir(parents=True, exist_ok=True)
            (self.root / "patches" / name).write_bytes(data)
        names = list(patches)
        (self.root / "series").write_text(
            series if series is not None else "".join(n + "\n" for n in names)
        )
        mapping = commits or {}
        (self.root / "upstream.map").write_text(
            "".join(f"{n} {mapping.get(n, 'none')}\n" for n in names)
        )
        self.patches = patches

    def cli(self, *args: str | Path) -> CliResult:
        return run_cli("-C", self.root, *args)


def mini_fork(repo: RepoBuilder, files: dict[str, str | bytes | None], tag: str = "v1") -> MiniFork:
    """``repo`` with one upstream commit holding ``files``, tagged ``tag``."""
    repo.commit("upstream: import\n", files)
    repo.tag(tag)
    return MiniFork(repo, tag)
