"""Shared by several test modules (moved out of test_image_docker.py)."""

from __future__ import annotations

import os
import secrets

import pytest

from forktool.builder import RepoBuilder
from forktool.config import load_config
from forktool.demo import DemoUpstream
from forktool.docker_client import SdkEngine, connect
from forktool.errors import FatalError
from testing.helpers import run_cli

REGISTRY = os.environ.get("FORKTOOL_REGISTRY", "127.0.0.1:5000")


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") and not os.environ.get("FORKTOOL_DOCKER_SKIP"):
        pytest.fail(f"the Docker tier must run in CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def engine() -> SdkEngine:
    from forktool.demo.images import registry_answers

    if reason := os.environ.get("FORKTOOL_DOCKER_SKIP"):
        pytest.skip(f"Docker engine could not start: {reason}")
    try:
        sdk = connect()
    except FatalError as exc:
        _unavailable(exc.message)
    if not registry_answers(REGISTRY):
        _unavailable(f"no registry answers at {REGISTRY} (scripts/docker-up.sh starts one)")
    return sdk


@pytest.fixture
def docker_fork(
    example_fork: RepoBuilder, engine: SdkEngine, demo_upstream: DemoUpstream
) -> RepoBuilder:
    """The example fork pushing to a repository of its own, with pulse:v1.1.0 built."""
    from forktool.demo.images import ensure_upstream_image

    ensure_upstream_image(engine, demo_upstream.path, "v1.1.0")
    config = example_fork.path / "forktool.yaml"
    repository = f"{REGISTRY}/pulse-fork-test-{secrets.token_hex(4)}"
    text = config.read_text().replace(f"{REGISTRY}/pulse-fork\n", f"{repository}\n")
    example_fork.commit("fork: push to a test repository\n", {"forktool.yaml": text})
    return example_fork


def repository(fork: RepoBuilder) -> str:
    settings = load_config(fork.path / "forktool.yaml").image
    assert settings is not None
    return settings.repository


def gate_json(fork: RepoBuilder, candidate: str) -> tuple[int, dict[str, object]]:
    result = run_cli("-C", fork.path, "image", "gate", candidate, "--format", "json")
    assert result.code in (0, 1), result.err
    return result.code, result.json()
