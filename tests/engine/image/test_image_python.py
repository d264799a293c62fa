"""The final gate on a real image with Python (marker: docker).

The base image is a Debian bookworm root file system with python3-minimal, git
and GNU patch, made by ``scripts/python-base-image.sh`` (mmdebstrap + docker
import; ``.ci/run`` builds it once per run and exports ``FORKTOOL_PYTHON_IMAGE``).
The upstream image is that base plus pulse at /opt/pulse; the fork's Dockerfile
applies the series with strict GNU patch, and the gate imports pulse with the
image's own Python. Like the rest of the tier, these tests skip only outside CI
or when the engine could not start; in CI a missing base image fails them.
"""

from __future__ import annotations

import io
import os
import secrets
import tarfile
import tempfile
from pathlib import Path

import pytest
from testing.docker_tier import REGISTRY, _unavailable, gate_json
from testing.helpers import run_cli

from forktool.builder import RepoBuilder
from forktool.config import load_config
from forktool.demo import DemoUpstream
from forktool.docker_client import PushOutcome, SdkEngine
from forktool.engine.image.promote import promote_candidate
from forktool.git import Git
from forktool.git import run as run_git

pytestmark = pytest.mark.docker

P2 = "0002-engine-retry-on-timeout.patch"
DEFAULT_PYTHON_IMAGE = "forktool/python:bookworm"  # what scripts/python-base-image.sh makes
UPSTREAM = "pulse-py"

DOCKERFILE = """\
ARG BASE_TAG=v1.1.0
FROM pulse-py:${BASE_TAG}
ARG BASE_TAG
COPY series /fork/series
COPY patches /fork/patches
RUN set -e; cd /opt/pulse; \\
    sed -e 's/#.*//' /fork/series | while read -r name strip; do \\
      [ -n "$name" ] || continue; \\
      patch -p1 --fuzz=0 --no-backup-if-mismatch --batch --forward -i "/fork/patches/$name"; \\
    done
LABEL org.forktool.base-tag=${BASE_TAG}
"""
# python3-minimal has no json module, so pulse cannot be imported: the gate
# compiles every module with the image's own Python and checks the /tmp mode.
GATE = (
    '[["python3", "-c", "import os; d = \'/opt/pulse/pulse\'; '
    "[compile(open(os.path.join(d, f)).read(), f, 'exec') "
    "for f in os.listdir(d) if f.endswith('.py')]\"], "
    '["python3", "-c", "import os; assert os.stat(\'/tmp\').st_mode & 0o7777 == 0o1777"]]'
)


@pytest.fixture(scope="module")
def python_base(engine: SdkEngine) -> str:
    """The base image .ci/run built for this run; outside CI, one built earlier will do."""
    name = os.environ.get("FORKTOOL_PYTHON_IMAGE")
    if name is None and not os.environ.get("CI"):
        name = DEFAULT_PYTHON_IMAGE
    if name is None or engine.image(name) is None:
        _unavailable(
            f"no Python base image ({name or 'FORKTOOL_PYTHON_IMAGE is not set'}): "
            'eval "$(scripts/python-base-image.sh)" builds one'
        )
    assert name is not None
    return name


def upstream_image(engine: SdkEngine, base: str, upstream: Path, tag: str) -> str:
    """``pulse-py:<tag>``: the Python base plus the upstream's pulse at /opt/pulse."""
    ref = f"{UPSTREAM}:{tag}"
    if engine.image(ref) is not None:
        return ref
    archive = run_git(
        ["archive", "--format=tar", tag, "pulse"], cwd=upstream, purpose=f"export pulse {tag}"
    ).stdout
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        (Path(tmp) / "Dockerfile").write_text(f"FROM {base}\nCOPY pulse /opt/pulse/pulse\n")
        outcome = engine.build(Path(tmp), "Dockerfile", {}, {}, ref)
    assert outcome.image_id is not None, outcome.error
    return ref


@pytest.fixture
def fork(
    example_fork: RepoBuilder, engine: SdkEngine, python_base: str, demo_upstream: DemoUpstream
) -> RepoBuilder:
    """The example fork building on the Python image, pushing to a repository of its own."""
    upstream_image(engine, python_base, demo_upstream.path, "v1.1.0")
    config = example_fork.path / "forktool.yaml"
    repository = f"{REGISTRY}/pulse-py-fork-{secrets.token_hex(4)}"
    text = config.read_text().replace(f"{REGISTRY}/pulse-fork\n", f"{repository}\n")
    lines = [
        f"  gate: {GATE}" if line.startswith("  gate: ") else line for line in text.split("\n")
    ]
    example_fork.commit(
        "fork: build on the Python image\n",
        {"forktool.yaml": "\n".join(lines), "docker/Dockerfile": DOCKERFILE},
    )
    return example_fork


def build(fork: RepoBuilder, *args: str) -> dict[str, object]:
    result = run_cli("-C", fork.path, "image", "build", *args, "--format", "json")
    assert result.code == 0, result.out + result.err
    return result.json()


def child(engine: SdkEngine, parent: str, tag: str, steps: str, labels: dict[str, str]) -> str:
    """An image made from ``parent`` by ``steps``, keeping (or overriding) its labels."""
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "Dockerfile").write_text(f"FROM {parent}\n{steps}\n")
        outcome = engine.build(Path(tmp), "Dockerfile", {}, labels, tag)
    assert outcome.image_id is not None, outcome.error
    return tag


def series_of(record: dict[str, object]) -> dict[str, object]:
    check = record["commands"][-1]  # type: ignore[index]
    assert check["kind"] == "series" and check["where"] == "host"
    return dict(check)


def repository(fork: RepoBuilder) -> str:
    settings = load_config(fork.path / "forktool.yaml").image
    assert settings is not None
    return settings.repository


def test_a_candidate_carrying_the_series_passes_and_ships_its_own_id(
    fork: RepoBuilder, engine: SdkEngine
) -> None:
    built = build(fork)
    code, record = gate_json(fork, str(built["candidate"]))
    assert code == 0, [(c["command"], c["output"]) for c in record["commands"]]  # type: ignore[union-attr]
    assert [c["exit_code"] for c in record["commands"]] == [0, 0, 0, 0]  # type: ignore[union-attr]
    promote = run_cli(
        "-C", fork.path, "image", "promote", str(built["candidate"]), "--tag", "v1.1.0"
    )
    assert promote.code == 0, promote.out
    held = engine.manifest(repository(fork), "v1.1.0")
    assert held is not None and held.config_digest == built["image"]


def test_a_minus_arm_passes_only_as_the_minus_state(fork: RepoBuilder, engine: SdkEngine) -> None:
    arm = build(fork, "--minus", P2)
    code, record = gate_json(fork, str(arm["candidate"]))
    assert code == 0, [(c["command"], c["output"]) for c in record["commands"]]  # type: ignore[union-attr]
    series = series_of(record)
    assert series["command"][-2:] == ["--except", P2]  # type: ignore[index]
    # An image labelled as that arm but carrying the whole series: the labels agree,
    # the content does not.
    full = build(fork)
    labels = dict(arm["labels"])  # type: ignore[call-overload]
    impostor = child(engine, str(full["image"]), f"{repository(fork)}:impostor", "", labels)
    code, record = gate_json(fork, impostor)
    assert code == 1
    series = series_of(record)
    assert series["exit_code"] == 1
    assert f"{P2}: fails (present, though --except says it is left out)" in str(series["output"])


def test_a_drifted_site_fails_and_a_shim_forktool_in_the_image_changes_nothing(
    fork: RepoBuilder, engine: SdkEngine
) -> None:
    full = build(fork)
    repo = repository(fork)
    drift = "RUN sed -i 's/if not text.strip():/if not text:/' /opt/pulse/pulse/config.py"
    drifted = child(engine, str(full["image"]), f"{repo}:drifted", drift, {})
    code, record = gate_json(fork, drifted)
    assert code == 1
    assert series_of(record)["exit_code"] == 1
    shim = (
        "RUN printf '#!/bin/sh\\nexit 0\\n' > /usr/local/bin/forktool"
        " && chmod +x /usr/local/bin/forktool"
        " && cp /usr/local/bin/forktool /usr/local/bin/patch"
    )
    shimmed = child(engine, drifted, f"{repo}:shimmed", shim, {})
    code, again = gate_json(fork, shimmed)
    assert code == 1
    assert series_of(again)["output"] == series_of(record)["output"]


class RetagDuringPush(SdkEngine):
    """The engine, with another process retagging the pushed name just before the push."""

    def __init__(self, sdk: SdkEngine, other: str) -> None:
        super().__init__(sdk.client)
        self.other = other

    def push(self, repository: str, tag: str) -> PushOutcome:
        self.client.api.tag(self.other, repository, tag, force=True)
        return super().push(repository, tag)


def test_a_concurrent_retag_during_promote_is_caught(fork: RepoBuilder, engine: SdkEngine) -> None:
    repo = repository(fork)
    built = build(fork)
    assert gate_json(fork, str(built["candidate"]))[0] == 0
    other = child(engine, str(built["image"]), f"{repo}:other", "RUN touch /other", {})
    other_info = engine.image(other)
    assert other_info is not None
    result = promote_candidate(
        load_config(fork.path / "forktool.yaml"),
        Git(fork.path),
        RetagDuringPush(engine, other_info.id),
        str(built["candidate"]),
        "v1.1.0",
        latest=True,
    )
    assert result.ok is False
    assert f"not the gated {built['image']}" in result.message
    assert f"describes image {other_info.id}" in result.message
    assert engine.manifest(repo, "v1.1.0") is None
    assert engine.manifest(repo, "latest") is None
    assert engine.image(f"{repo}:v1.1.0") is None
    assert engine.image(f"{repo}:{result.pushed_as}") is None
