"""Shared by several test modules (moved out of test_apply_safety.py)."""

from __future__ import annotations

import pytest

from forktool.builder import RepoBuilder
from testing.apply_support import edit_line, numbered, patch_of, writes
from testing.helpers import MiniFork, mini_fork

APP = "src/app.py"


BASE = numbered(40)


A, B, C = "0001-a.patch", "0002-b.patch", "0003-c.patch"


ENGINES = ["git", "patch"]


@pytest.fixture
def safety_fork(builder: RepoBuilder) -> MiniFork:
    fork = mini_fork(builder, {APP: BASE, "src/util.py": numbered(10, "util"), "README": "r\n"})
    fork.write(
        {
            A: patch_of(builder, "v1", writes({APP: edit_line(BASE, "line 5", "line 5 a")})),
            B: patch_of(builder, "v1", writes({APP: edit_line(BASE, "line 30", "line 30 b")})),
            C: patch_of(builder, "v1", writes({"src/util.py": numbered(10, "util") + "more\n"})),
        }
    )
    return fork
