"""The state files of refresh and sync: one format, each in its documented git directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from forktool.builder import RepoBuilder
from forktool.git import Git
from forktool.state import read_state, state_bytes, state_path


@pytest.fixture
def linked(builder: RepoBuilder, tmp_path: Path) -> Git:
    """A linked worktree of ``builder``'s repository."""
    builder.commit("start\n", {"a.txt": "a\n"})
    builder.git.run(["worktree", "add", "-q", str(tmp_path / "wt")], purpose="add a worktree")
    return Git(tmp_path / "wt")


def test_a_shared_state_file_is_in_the_common_git_dir(builder: RepoBuilder, linked: Git) -> None:
    main = builder.path / ".git" / "forktool" / "sync" / "state.json"
    assert state_path(linked, "sync", shared=True) == main
    assert state_path(builder.git, "sync", shared=True) == main


def test_a_worktree_state_file_is_in_that_worktrees_git_dir(
    builder: RepoBuilder, linked: Git
) -> None:
    assert state_path(builder.git, "refresh", shared=False) == (
        builder.path / ".git" / "forktool" / "refresh" / "state.json"
    )
    assert state_path(linked, "refresh", shared=False) == (
        builder.path / ".git" / "worktrees" / "wt" / "forktool" / "refresh" / "state.json"
    )


def test_state_is_utf8_json_with_one_trailing_newline() -> None:
    assert state_bytes({"tag": "v1.0", "note": "é"}) == (
        b'{\n  "tag": "v1.0",\n  "note": "\\u00e9"\n}\n'
    )


def test_state_round_trips_and_older_files_without_a_newline_still_read(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    assert read_state(path) is None
    path.write_bytes(state_bytes({"stage": "refresh"}))
    assert read_state(path) == {"stage": "refresh"}
    path.write_bytes(b'{"stage": "merge", "branch": "forktool/sync-v\xc3\xa9"}')  # no newline
    assert read_state(path) == {"stage": "merge", "branch": "forktool/sync-vé"}


@pytest.mark.parametrize("data", [b"[1, 2]", b"\xff{}", b"{"])
def test_state_that_is_not_a_utf8_json_object_is_a_value_error(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "state.json"
    path.write_bytes(data)
    with pytest.raises(ValueError):
        read_state(path)
