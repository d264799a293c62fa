"""The fork lock: one mutating run at a time, stale locks taken over, readers never blocked.

A helper process really holds the lock (``fsutil.fork_lock`` on the common git
directory), the way a second forktool run would meet it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from testing.helpers import snapshot_tree

from forktool.demo import DemoUpstream
from forktool.git import Git

pytestmark = pytest.mark.slow  # real processes holding the lock, and fault injection

HOLD = """
import sys, time
from pathlib import Path
from forktool.fsutil import fork_lock
with fork_lock(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(120)
"""

MUTATING = [
    ("retire", "--tag", "v1.2.0"),
    ("retire", "--undo", "0001-config-do-not-crash-on-an-empty-config-file.patch"),
    ("pin", "bump", "v1.2.0"),
    ("pin", "bump", "v1.2.0", "--fetch", "--dry-run"),
    ("fmt",),
    ("refresh", "--onto", "v1.2.0"),
    ("refresh", "--abort"),
    ("export", "--from", "HEAD"),
    ("import", "--branch", "patches/x"),
    ("sync", "v1.2.0", "--no-fetch"),
    ("sync", "--abort"),
    ("absorbed", "--tag", "v1.2.0", "--commit-graph"),
    ("image", "freeze"),
]

READ_ONLY = [
    ("status",),
    ("verify",),
    ("check",),
    ("align",),
    ("pin", "show"),
    ("pin", "check"),
    ("pin", "bump", "v1.2.0", "--dry-run"),
    ("absorbed", "--tag", "v1.2.0"),
    ("retire", "--tag", "v1.2.0", "--dry-run"),
    ("fmt", "--check"),
    ("sync", "v1.2.0", "--no-fetch", "--dry-run"),
    ("upstream", "poll", "--no-fetch"),
    ("arms",),
    ("check-history", "HEAD"),
]


def forktool(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "forktool", "-C", str(root), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1", "FORKTOOL_DATE": "2024-01-01"},
        timeout=120,
    )


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory, demo_upstream: DemoUpstream) -> Path:
    from forktool.demo.walkthrough import setup_fork

    return setup_fork(tmp_path_factory.mktemp("example"), demo_upstream).path


@pytest.fixture
def fork(base: Path, tmp_path: Path) -> Path:
    root = tmp_path / "fork"
    shutil.copytree(base, root, symlinks=True)
    return root


def hold(common: Path) -> subprocess.Popen[str]:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(common)], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder


@pytest.fixture
def holder(fork: Path) -> Iterator[subprocess.Popen[str]]:
    process = hold(Git(fork).common_dir())
    yield process
    process.kill()
    process.wait()


def test_every_mutating_command_is_refused_while_another_run_holds_the_lock(
    fork: Path, holder: subprocess.Popen[str]
) -> None:
    before = snapshot_tree(fork)
    for args in MUTATING:
        result = forktool(fork, *args)
        assert (result.returncode, result.stderr.splitlines()[0]) == (
            2,
            f"error: another forktool run holds the lock (pid {holder.pid})",
        ), args
    assert snapshot_tree(fork) == before


def test_read_only_commands_run_while_the_lock_is_held(
    fork: Path, holder: subprocess.Popen[str]
) -> None:
    before = snapshot_tree(fork)
    for args in READ_ONLY:
        result = forktool(fork, *args)
        assert result.returncode in (0, 1, 3), (args, result.stderr)  # poll: 3 = news
        assert "lock" not in result.stderr, args
    assert snapshot_tree(fork) == before


def test_a_sync_worktree_and_the_main_checkout_share_one_lock(fork: Path, tmp_path: Path) -> None:
    worktree = tmp_path / "wt"
    Git(fork).run(["worktree", "add", "--quiet", "--detach", str(worktree)], purpose="worktree")
    holder = hold(Git(worktree).common_dir())  # what a sync in its worktree holds
    try:
        result = forktool(fork, "pin", "bump", "v1.2.0")
        assert result.returncode == 2
        assert result.stderr.startswith(
            f"error: another forktool run holds the lock (pid {holder.pid})"
        )
    finally:
        holder.kill()
        holder.wait()


def test_a_stale_lock_from_a_killed_run_is_taken_over(fork: Path) -> None:
    common = Git(fork).common_dir()
    holder = hold(common)
    holder.kill()  # SIGKILL: it cannot clean up
    holder.wait()
    assert (common / "forktool.lock").read_text() == f"{holder.pid}\n"
    result = forktool(fork, "pin", "bump", "v1.2.0")
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[0] == (
        f"notice: took over the lock of a forktool run that is gone (pid {holder.pid})"
    )
    assert "tag: v1.2.0" in (fork / "forktool.yaml").read_text()
    assert not (common / "forktool.lock").exists()


def test_a_second_real_run_is_refused_while_the_first_is_paused(fork: Path) -> None:
    first = subprocess.Popen(
        [sys.executable, "-m", "forktool", "-C", str(fork), "pin", "bump", "v1.2.0"],
        env={**os.environ, "FORKTOOL_FAULT": "fsutil.temp:2:STOP"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lock = Git(fork).common_dir() / "forktool.lock"
        for _ in range(200):  # until it has stopped itself, lock in hand
            if lock.exists() and lock.read_text() == f"{first.pid}\n":
                status = Path(f"/proc/{first.pid}/stat").read_text().split()[2]
                if status == "T":
                    break
            subprocess.run(["sleep", "0.05"], check=True)
        second = forktool(fork, "retire", "--tag", "v1.2.0")
        assert second.returncode == 2
        assert second.stderr.splitlines()[0] == (
            f"error: another forktool run holds the lock (pid {first.pid})"
        )
    finally:
        first.kill()
        first.wait()
    after = forktool(fork, "pin", "bump", "v1.2.0")
    assert after.returncode == 0, after.stderr
    assert "notice: removed 1 temporary file(s) left by a killed forktool run" in after.stderr
