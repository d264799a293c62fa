"""A write the file system refuses changes nothing and says why.

Disk full (``ENOSPC``), file too large (``EFBIG``, ``ulimit -f``) and a read-only
file system (``EROFS``): every mutating command exits 2 with one ``error:`` line and a
``hint:``, the fork is byte-identical afterwards (no ``*.forktool-tmp-PID`` file), and
the lock is released (the same command then succeeds). The real CLI runs in a
subprocess; ``EFBIG`` comes from ``RLIMIT_FSIZE`` set in the child, ``ENOSPC`` and
``EROFS`` from a tiny tmpfs and a read-only bind mount (root only, else skipped).
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from testing.helpers import snapshot_tree

from forktool.demo import DemoUpstream

P1 = "0001-config-do-not-crash-on-an-empty-config-file.patch"
# The example pins v1.1.0, which lacks 0001's fix: retiring it takes --force --reason.
RETIRE = ("retire", P1, "--tag", "v1.2.0", "--force", "--reason", "the pin moves next")
COMMANDS = [("pin", "bump", "v1.2.0"), RETIRE]
# A limit below the first file each command rewrites (forktool.yaml; FORK.md, about
# 5 KB) and above what git writes first (a temporary index of the small tree).
SIZE_LIMITS = {"pin": 64, "retire": 4096}


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory, demo_upstream: DemoUpstream) -> Path:
    from forktool.demo.walkthrough import setup_fork

    return setup_fork(tmp_path_factory.mktemp("write-failures"), demo_upstream).path


def forktool(
    fork: Path, *argv: str, preexec: Callable[[], None] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "forktool", "-C", str(fork), *argv],
        cwd=fork,
        env={**os.environ, "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        preexec_fn=preexec,
    )


def assert_refused_cleanly(
    result: subprocess.CompletedProcess[str], message: str, hint: str
) -> None:
    lines = result.stderr.splitlines()
    detail = f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    assert result.returncode == 2, detail
    assert result.stdout == ""
    assert len(lines) == 2, detail
    assert lines[0].startswith(f"error: {message}"), detail
    assert lines[1].startswith(f"hint: {hint}"), detail


def temp_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if ".forktool-tmp" in p.name or ".forktool-bak" in p.name]


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: a[0])
def test_file_too_large_is_exit_2_and_changes_nothing(
    template: Path, tmp_path: Path, argv: tuple[str, ...]
) -> None:
    fork = tmp_path / "fork"
    shutil.copytree(template, fork, symlinks=True)
    before = snapshot_tree(fork)

    def small_files() -> None:
        limit = SIZE_LIMITS[argv[0]]
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    result = forktool(fork, *argv, preexec=small_files)
    assert_refused_cleanly(result, "could not write ", "the file size limit (ulimit -f)")
    assert "File too large" in result.stderr
    assert temp_files(fork) == []
    assert snapshot_tree(fork) == before
    again = forktool(fork, *argv)  # the lock was released
    assert again.returncode == 0, again.stderr


@contextlib.contextmanager
def mounted(*args: str) -> Iterator[None]:
    if os.geteuid() != 0:
        pytest.skip("mounting a file system needs root")
    mount = subprocess.run(["mount", *args], capture_output=True, check=False)
    if mount.returncode != 0:
        pytest.skip(f"mount failed here: {mount.stderr.decode().strip()}")
    try:
        yield
    finally:
        subprocess.run(["umount", args[-1]], check=True)


def fill(path: Path) -> None:
    """Fill the file system holding ``path``, but for one page (the lock file's)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        for size in (1 << 16, 1 << 10, 1):
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * size)
        os.ftruncate(fd, os.fstat(fd).st_size - 4096)
    finally:
        os.close(fd)


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: a[0])
def test_disk_full_is_exit_2_and_changes_nothing(
    template: Path, tmp_path: Path, argv: tuple[str, ...]
) -> None:
    disk = tmp_path / "disk"
    disk.mkdir()
    with mounted("-t", "tmpfs", "-o", "size=16m", "tmpfs", str(disk)):
        fork = disk / "fork"
        shutil.copytree(template, fork, symlinks=True)
        filler = disk / "filler"
        fill(filler)
        before = snapshot_tree(fork)
        result = forktool(fork, *argv)
        assert_refused_cleanly(result, "could not ", "free some disk space")
        assert "No space left on device" in result.stderr
        assert temp_files(fork) == []
        assert snapshot_tree(fork) == before
        filler.unlink()
        again = forktool(fork, *argv)
        assert again.returncode == 0, again.stderr


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: a[0])
def test_read_only_file_system_is_exit_2_and_changes_nothing(
    template: Path, tmp_path: Path, argv: tuple[str, ...]
) -> None:
    fork, view = tmp_path / "fork", tmp_path / "read-only"
    shutil.copytree(template, fork, symlinks=True)
    view.mkdir()
    before = snapshot_tree(fork)
    with mounted("--bind", "-o", "ro", str(fork), str(view)):
        if os.access(view, os.W_OK) and (view / "probe").exists() is False:
            with contextlib.suppress(OSError):
                (view / "probe").touch()
                (view / "probe").unlink()
                pytest.skip("the bind mount is not read-only here")
        result = forktool(view, *argv)
    assert_refused_cleanly(result, "could not take the lock ", "the fork is on a read-only")
    assert "Read-only file system" in result.stderr
    assert snapshot_tree(fork) == before


def test_git_killed_by_the_file_size_limit_says_so(template: Path, tmp_path: Path) -> None:
    fork = tmp_path / "fork"
    shutil.copytree(template, fork, symlinks=True)
    before = snapshot_tree(fork)

    def tiny_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64))

    result = forktool(fork, "retire", "--tag", "v1.2.0", preexec=tiny_files)
    assert_refused_cleanly(result, "git could not ", "the file size limit (ulimit -f)")
    assert result.stderr.splitlines()[0].endswith(": killed by SIGXFSZ")
    assert snapshot_tree(fork) == before
