"""Shared fixtures: repositories built with :class:`forktool.builder.RepoBuilder`."""

from __future__ import annotations

from pathlib import Path

import pytest

from forktool.builder import RepoBuilder
from forktool.demo import DemoUpstream, build_demo_upstream


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
def example_fork(tmp_path: Path, demo_upstream: DemoUpstream) -> RepoBuilder:
    """The example fork (repository root files) on the demo upstream's v1.1.0, committed."""
    from forktool.demo.walkthrough import setup_fork

    return setup_fork(tmp_path, demo_upstream)
