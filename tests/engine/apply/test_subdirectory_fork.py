"""A fork whose forktool.yaml, series and patches live in a subdirectory of the
checkout (a monorepo keeps them in ``fork/``). git runs from there for the fork's
files, but every temporary index works from the top of the work tree: ``git apply``
skips each path outside the directory it runs in, so run from ``fork/`` every patch
would "apply" doing nothing, and verify would pass a series that does not apply."""

from __future__ import annotations

import shutil

import pytest
from testing.apply_support import edit_line, numbered, patch_of, side_commit, writes
from testing.helpers import MiniFork, mini_fork, run_cli

from forktool.builder import RepoBuilder

APP = "src/app.txt"


@pytest.fixture
def fork(builder: RepoBuilder) -> MiniFork:
    fork = mini_fork(builder, {APP: numbered(30)})
    good = patch_of(builder, "v1", writes({APP: edit_line(numbered(30), "line 5", "five")}))
    theirs = numbered(30).replace("line 21", "theirs")
    neighbour = side_commit(builder, "v1", writes({APP: theirs}))
    stale = patch_of(builder, neighbour, writes({APP: edit_line(theirs, "line 22", "x")}))
    fork.write({"0001-good.patch": good, "0002-stale.patch": stale})
    return fork


def moved_to(fork: MiniFork, sub: str) -> None:
    (fork.root / sub).mkdir()
    for name in ("forktool.yaml", "series", "upstream.map", "patches"):
        shutil.move(fork.root / name, fork.root / sub / name)


def statuses(*args: str) -> tuple[int, list[str]]:
    result = run_cli(*args, "--format", "json")
    return result.code, [p["status"] for p in result.json()["patches"]]  # type: ignore[index]


def test_verify_from_a_subdirectory_sees_what_it_sees_from_the_top(fork: MiniFork) -> None:
    at_top = statuses("-C", str(fork.root), "verify")
    assert at_top == (1, ["exact", "fails"])
    moved_to(fork, "fork")
    assert statuses("-C", str(fork.root / "fork"), "verify") == at_top
    assert statuses("-C", str(fork.root / "fork"), "verify", "--jobs", "2") == at_top
    keep = run_cli("-C", fork.root / "fork", "verify", "--keep-going", "--format", "json")
    assert [p["status"] for p in keep.json()["patches"]] == ["exact", "fails"]  # type: ignore[index]


def test_absorbed_from_a_subdirectory_judges_the_tree(fork: MiniFork, builder: RepoBuilder) -> None:
    builder.tag("v2")
    at_top = run_cli("-C", fork.root, "absorbed", "--tag", "v2", "--format", "json").json()
    moved_to(fork, "fork")
    below = run_cli("-C", fork.root / "fork", "absorbed", "--tag", "v2", "--format", "json")
    assert below.json()["patches"] == at_top["patches"]  # type: ignore[index]
