"""Shared fixtures: repositories built with :class:`forktool.builder.RepoBuilder`."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from forktool.builder import RepoBuilder
from forktool.demo import DemoUpstream, build_demo_upstream

# Fixtures several test modules share, found by name (never imported).
pytest_plugins = ["testing.docker_tier", "testing.safety_fork"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every property test (hypothesis) is slow: ``-m "not slow"`` leaves it out."""
    for item in items:
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def private_tmpdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Each test's temporary files (sync worktrees, scratch copies, temporary indexes)
    live under its own ``tmp_path``: a test that leaves a sync stopped leaves nothing in
    the machine's temp directory, and tests under xdist never share one. The tree
    cache too (``FORKTOOL_CACHE_DIR``): a test's runs share one, no test reads
    another's, and nothing goes to the home directory."""
    scratch = tmp_path.parent / f"{tmp_path.name}-TMPDIR"  # beside it: tests list tmp_path
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setenv("FORKTOOL_CACHE_DIR", str(tmp_path.parent / f"{tmp_path.name}-cache"))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    yield scratch
    tempfile.tempdir = None


@pytest.fixture
def builder(tmp_path: Path) -> RepoBuilder:
    """A fresh, empty repository on ``main``."""
    return RepoBuilder.init(tmp_path / "repo")


@pytest.fixture(scope="session")
def demo_upstream(tmp_path_factory: pytest.TempPathFactory) -> DemoUpstream:
    """The demo upstream, built once per session: read it, never change it.

    A test that needs to change it should clone it (``RepoBuilder.clone``).
    """
    return build_demo_upstream(tmp_path_factory.mktemp("demo-upstream") / "pulse")


@pytest.fixture
def sync_fork(builder: RepoBuilder, monkeypatch: pytest.MonkeyPatch) -> RepoBuilder:
    """tests/engine/release/test_sync.py's fixture history (every kind of patch for a sync to v2)."""
    from testing.sync_fork import IDENTITY, build_sync_fork

    for key, value in IDENTITY.items():
        monkeypatch.setenv(key, value)
    return build_sync_fork(builder)


@pytest.fixture(scope="session")
def example_fork_template(
    tmp_path_factory: pytest.TempPathFactory, demo_upstream: DemoUpstream
) -> Path:
    """The example fork, built once per session: copied for each test, never changed."""
    from forktool.demo.walkthrough import setup_fork

    return setup_fork(tmp_path_factory.mktemp("example-fork"), demo_upstream).path


@pytest.fixture
def example_fork(tmp_path: Path, example_fork_template: Path) -> RepoBuilder:
    """The example fork (repository root files) on the demo upstream's v1.1.0, committed:
    a private copy in ``tmp_path/fork`` (a copy costs a third of building it)."""
    shutil.copytree(example_fork_template, tmp_path / "fork", symlinks=True)
    return RepoBuilder(tmp_path / "fork")
