"""write_files rolls back completely when a move fails half-way."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from forktool import fsutil


@pytest.mark.parametrize("failing_call", [1, 2, 3])
def test_failed_move_leaves_files_and_no_backups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing_call: int
) -> None:
    for name in ("a", "b", "c"):
        (tmp_path / name).write_text(name)
    real_replace = os.replace
    calls: list[Any] = []

    def flaky(src: Any, dst: Any) -> None:
        calls.append(dst)
        if len(calls) == failing_call:
            raise OSError(28, "No space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(fsutil.os, "replace", flaky)
    with pytest.raises(OSError, match="No space left"):
        fsutil.write_files(
            {tmp_path / "a": None, tmp_path / "b": b"B", tmp_path / "c": b"C", tmp_path / "d": b"D"}
        )
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == {"a": "a", "b": "b", "c": "c"}
