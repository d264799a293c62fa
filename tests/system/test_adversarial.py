"""Every hostile input in the corpus: exit 1 or 2, one clear line, nothing changed.

The real CLI runs in a subprocess (``python -m forktool``) so that a traceback,
a stray print or a hang cannot hide behind an in-process runner.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from testing.adversarial_corpus import CASES, Case
from testing.helpers import snapshot_tree

from forktool.demo import DemoUpstream

TIMEOUT = 30  # seconds; a case that takes longer is a hang (a FIFO read, a runaway regex)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory, demo_upstream: DemoUpstream) -> Path:
    """The example fork, built once; each case works on a copy."""
    from forktool.demo.walkthrough import setup_fork

    return setup_fork(tmp_path_factory.mktemp("adversarial-template"), demo_upstream).path


def run_forktool(fork: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200", "PYTHONUTF8": "1"}
    return subprocess.run(
        [sys.executable, "-m", "forktool", "-C", str(fork), *argv],
        cwd=fork,
        env=env,
        capture_output=True,
        text=True,
        errors="backslashreplace",
        timeout=TIMEOUT,
        check=False,
    )


def test_corpus_is_large_and_distinct() -> None:
    ids = [case.id for case in CASES]
    assert len(ids) == len(set(ids))
    assert len(ids) >= 40
    assert {case.code for case in CASES} == {1, 2}


@pytest.mark.slow  # one forktool process per hostile input: a sweep, like fault injection
@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_hostile_input_exits_cleanly_and_changes_nothing(
    case: Case, template: Path, tmp_path: Path
) -> None:
    fork, scratch = tmp_path / "fork", tmp_path / "scratch"
    shutil.copytree(template, fork, symlinks=True)
    scratch.mkdir()
    case.setup(fork, scratch)
    before = snapshot_tree(fork), snapshot_tree(scratch)
    argv = [arg.format(fork=fork, scratch=scratch) for arg in case.argv]
    message = case.message.format(fork=fork, scratch=scratch)

    result = run_forktool(fork, argv)

    detail = f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert "Traceback" not in result.stderr, detail
    assert result.returncode == case.code, detail
    if case.code == 2:
        lines = result.stderr.splitlines()
        assert result.stdout == "", detail
        assert len(lines) in (1, 2), detail
        assert lines[0].startswith("error: " + message), detail
        assert len(lines) == 1 or lines[1].startswith("hint: "), detail
    else:
        assert message in result.stdout, detail
        assert "error:" not in result.stderr, detail
    assert (snapshot_tree(fork), snapshot_tree(scratch)) == before, "the run changed files"
