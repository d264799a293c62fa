"""All-or-nothing writes and the fork lock."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from forktool.errors import FatalError
from forktool.fsutil import fork_lock, leftover_temp_files, write_files


def test_write_files_replaces_creates_and_deletes_together(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"old a")
    (tmp_path / "gone").write_bytes(b"bye")
    write_files({tmp_path / "a": b"new a", tmp_path / "sub" / "b": b"b", tmp_path / "gone": None})
    assert (tmp_path / "a").read_bytes() == b"new a"
    assert (tmp_path / "sub" / "b").read_bytes() == b"b"
    assert not (tmp_path / "gone").exists()
    assert leftover_temp_files(tmp_path) == []


def test_write_files_keeps_the_mode_of_a_replaced_file(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_bytes(b"#!/bin/sh\n")
    script.chmod(0o755)
    write_files({script: b"#!/bin/sh\necho hi\n"})
    assert script.stat().st_mode & 0o777 == 0o755


def test_a_failure_midway_restores_every_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {tmp_path / name: f"old {name}".encode() for name in ("a", "b", "c")}
    for path, data in files.items():
        path.write_bytes(data)
    real_replace = os.replace
    calls = {"n": 0}

    def failing_replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError("disk full")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk full"):
        write_files({path: b"new" for path in files} | {tmp_path / "d": b"new file"})
    monkeypatch.setattr(os, "replace", real_replace)
    for path, data in files.items():
        assert path.read_bytes() == data
    assert not (tmp_path / "d").exists()
    assert leftover_temp_files(tmp_path) == []


HOLD_LOCK = """
import sys, time
from pathlib import Path
from forktool.fsutil import fork_lock
with fork_lock(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(60)
"""


def test_second_mutating_run_is_refused_with_the_holder_pid(tmp_path: Path) -> None:
    holder = subprocess.Popen(  # a live process that really holds the lock
        [sys.executable, "-c", HOLD_LOCK, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(FatalError) as caught, fork_lock(tmp_path):
            pass
        assert caught.value.message == f"another forktool run holds the lock (pid {holder.pid})"
    finally:
        holder.kill()
        holder.wait()


def test_stale_lock_from_a_killed_run_is_taken_over(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    holder.kill()  # SIGKILL: the lock file stays, naming a process that is gone
    holder.wait()
    assert (tmp_path / "forktool.lock").read_text() == f"{holder.pid}\n"
    with fork_lock(tmp_path) as stale:
        assert stale == holder.pid
        assert (tmp_path / "forktool.lock").read_text() == f"{os.getpid()}\n"
    assert not (tmp_path / "forktool.lock").exists()


def test_the_lock_is_reentrant_within_one_run(tmp_path: Path) -> None:
    with fork_lock(tmp_path), fork_lock(tmp_path):
        pass
    assert not (tmp_path / "forktool.lock").exists()
