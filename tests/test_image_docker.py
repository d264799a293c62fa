"""The image commands against a real Docker engine and registry (marker: docker).

Start both with ``eval "$(scripts/docker-up.sh)"``; ``.ci/run`` does. The tier
skips only when the engine could not start (``FORKTOOL_DOCKER_SKIP`` carries the
reason) or, outside CI, when no engine answers; in CI an unreachable engine fails.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import pytest
from helpers import run_cli

from forktool.builder import RepoBuilder
from forktool.config import load_config
from forktool.demo import DemoUpstream
from forktool.docker_client import SdkEngine, connect
from forktool.engine.arms import patchset_hash
from forktool.errors import FatalError
from forktool.fork import load_fork

pytestmark = pytest.mark.docker

P1 = "0001-config-do-not-crash-on-an-empty-config-file.patch"
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
def fork(example_fork: RepoBuilder, engine: SdkEngine, demo_upstream: DemoUpstream) -> RepoBuilder:
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


def build(fork: RepoBuilder, *args: str) -> dict[str, object]:
    result = run_cli("-C", fork.path, "image", "build", *args, "--format", "json")
    assert result.code == 0, result.out + result.err
    return result.json()


def test_build_gate_promote_and_pull_by_digest(fork: RepoBuilder, engine: SdkEngine) -> None:
    repo = repository(fork)
    head = fork.rev("HEAD")
    built = build(fork)
    candidate = f"{repo}:v1.1.0-cand-{head[:7]}"
    assert built["candidate"] == candidate
    info = engine.image(candidate)
    assert info is not None and info.id == built["image"]
    loaded = load_fork(load_config(fork.path / "forktool.yaml"))
    assert info.labels["org.forktool.patch-set"] == patchset_hash(loaded.patches)
    assert info.labels["org.forktool.revision"] == head
    assert engine.image(f"{repo}:v1.1.0") is None  # only the candidate is tagged

    gate = run_cli("-C", fork.path, "image", "gate", candidate, "--format", "json")
    assert gate.code == 0, gate.out
    assert [c["exit_code"] for c in gate.json()["commands"]] == [0, 0, 0, 0]  # type: ignore[union-attr]

    promote = run_cli(
        "-C",
        fork.path,
        "image",
        "promote",
        candidate,
        "--tag",
        "v1.1.0",
        "--latest",
        "--format",
        "json",
    )
    assert promote.code == 0, promote.out
    digest = str(promote.json()["digest"])
    assert engine.registry_digest(repo, "v1.1.0") == digest
    assert engine.registry_digest(repo, "latest") == digest

    engine.client.images.remove(f"{repo}:v1.1.0")
    pulled = engine.client.images.pull(f"{repo}@{digest}")
    assert pulled.id == info.id
    assert pulled.labels["org.forktool.base-tag"] == "v1.1.0"
    assert pulled.labels["org.forktool.arm"] == "full"
    assert pulled.labels["org.forktool.pin-commit"] == loaded.config.pin_commit


def test_a_failing_gate_is_recorded_and_blocks_promotion(
    fork: RepoBuilder, engine: SdkEngine
) -> None:
    candidate = str(build(fork, "--minus", P1)["candidate"])
    assert candidate.endswith("-minus-0001")
    gate = run_cli("-C", fork.path, "image", "gate", candidate, "--format", "json")
    assert gate.code == 1
    checks = {tuple(c["command"]): c["exit_code"] for c in gate.json()["commands"]}  # type: ignore[union-attr]
    assert checks[("grep", "-q", "if not text.strip():", "/opt/pulse/pulse/config.py")] == 1
    assert checks[("forktool", "apply", "--target", "/opt/pulse", "--verify")] == 0
    promote = run_cli("-C", fork.path, "image", "promote", candidate, "--tag", "v1.1.0")
    assert promote.code == 1
    assert "the gate failed" in promote.out


def test_promote_refuses_an_ungated_digest(fork: RepoBuilder, engine: SdkEngine) -> None:
    repo = repository(fork)
    candidate = str(build(fork)["candidate"])
    promote = run_cli("-C", fork.path, "image", "promote", candidate, "--tag", "v1.1.0")
    assert promote.code == 1
    assert "has no gate record" in promote.out
    assert engine.registry_digest(repo, "v1.1.0") is None


def test_a_patch_that_lands_at_an_offset_fails_the_gate(
    fork: RepoBuilder, engine: SdkEngine
) -> None:
    path = fork.path / "patches" / P1
    shifted = path.read_text().replace("@@ -30,6 +30,8 @@", "@@ -27,6 +27,8 @@")
    assert shifted != path.read_text()
    fork.commit("fork: a patch regenerated against another tree\n", {f"patches/{P1}": shifted})
    candidate = str(build(fork)["candidate"])  # busybox patch places hunks by context
    gate = run_cli("-C", fork.path, "image", "gate", candidate, "--format", "json")
    assert gate.code == 1
    series = gate.json()["commands"][-1]  # type: ignore[index]
    assert series["kind"] == "series" and series["exit_code"] == 1
    assert f"{P1}: offset" in series["output"] or f"{P1}: fails" in series["output"]


def test_a_failed_build_shows_the_failing_step(fork: RepoBuilder, engine: SdkEngine) -> None:
    dockerfile = (fork.path / "docker" / "Dockerfile").read_text()
    broken = dockerfile.replace(
        "LABEL org.forktool", "RUN echo 'boom: smoke failed' >&2 && exit 3\nLABEL org.forktool"
    )
    fork.commit("fork: a broken build step\n", {"docker/Dockerfile": broken})
    result = run_cli("-C", fork.path, "image", "build")
    assert result.code == 1
    assert "boom: smoke failed" in result.out
    assert "exit 3" in result.out
    assert engine.image(f"{repository(fork)}:v1.1.0-cand-{fork.rev('HEAD')[:7]}") is None


def test_patchless_arm_passes_the_series_check_on_the_upstream_files(
    fork: RepoBuilder, engine: SdkEngine, tmp_path: Path
) -> None:
    candidate = str(build(fork, "--patchless")["candidate"])
    gate = run_cli("-C", fork.path, "image", "gate", candidate, "--format", "json")
    series = gate.json()["commands"][-1]  # type: ignore[index]
    assert series["command"][-1] == "--dry-run" and series["exit_code"] == 0
    assert gate.code == 1  # its grep smoke check fails: the empty-config fix is absent
