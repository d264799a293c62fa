"""Shared by several test modules (moved out of test_image_unit.py)."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from forktool.builder import RepoBuilder
from forktool.demo import DemoUpstream
from forktool.docker_client import (
    BuildOutcome,
    ImageInfo,
    Leftover,
    PathArchive,
    PushOutcome,
    RunOutcome,
)
from forktool.git import run as run_git
from forktool.registry import Manifest
from testing.helpers import run_cli

REPO = "127.0.0.1:5000/pulse-fork"


@dataclass
class Built:
    context: Path
    dockerfile: str
    buildargs: dict[str, str]
    labels: dict[str, str]
    tag: str
    series: str
    patches: list[str]
    upstream_map: str


@dataclass
class FakeEngine:
    """In-memory images and registry. ``site`` is what export_path returns for the site."""

    site: Path | None = None
    fail_build: tuple[str, ...] = ()
    exit_codes: dict[tuple[str, ...], int] = field(default_factory=dict)
    images: dict[str, ImageInfo] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)  # repo:tag -> image id
    manifests: dict[str, Manifest] = field(default_factory=dict)  # manifest digest -> manifest
    registry: dict[str, str] = field(default_factory=dict)  # repo:tag -> manifest digest
    builds: list[Built] = field(default_factory=list)
    runs: list[tuple[str, tuple[str, ...], int]] = field(default_factory=list)
    pushes: list[str] = field(default_factory=list)
    put: list[str] = field(default_factory=list)
    before_push: Callable[[FakeEngine, str], None] | None = None
    left: list[Leftover] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    def describe(self) -> str:
        return "fake"

    def build(
        self,
        context: Path,
        dockerfile: str,
        buildargs: Mapping[str, str],
        labels: Mapping[str, str],
        tag: str,
    ) -> BuildOutcome:
        patches_dir = context / "patches"
        self.builds.append(
            Built(
                context,
                dockerfile,
                dict(buildargs),
                dict(labels),
                tag,
                (context / "series").read_text(),
                sorted(p.name for p in patches_dir.glob("*.patch")),
                (context / "upstream.map").read_text(),
            )
        )
        if self.fail_build:
            log = ("Step 1/3 : FROM pulse:v1.1.0", "Step 2/3 : RUN apply", *self.fail_build)
            return BuildOutcome(None, log, "The command returned a non-zero code: 1")
        image_id = f"sha256:{len(self.builds):064x}"
        self.images[image_id] = ImageInfo(image_id, dict(labels), (tag,), ())
        self.tags[tag] = image_id
        return BuildOutcome(image_id, ("Step 1/3 : FROM pulse:v1.1.0", "Successfully built"))

    def image(self, ref: str) -> ImageInfo | None:
        return self.images.get(self.tags.get(ref, ref))

    def run(self, image: str, command: Sequence[str], timeout: int, scope: str) -> RunOutcome:
        assert scope == REPO
        self.runs.append((image, tuple(command), timeout))
        code = self.exit_codes.get(tuple(command), 0)
        return RunOutcome(code, f"ran {' '.join(command)}\n")

    def export_path(self, image: str, path: str, scope: str) -> PathArchive:
        if self.site is None:
            from forktool.errors import FatalError

            raise FatalError(f"{image}: the image has no {path}")
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            tar.add(self.site, Path(path).name)
        return PathArchive(path, buffer.getvalue())

    def tag(self, image_id: str, repository: str, tag: str) -> None:
        self.tags[f"{repository}:{tag}"] = image_id

    def untag(self, repository: str, tag: str) -> None:
        self.tags.pop(f"{repository}:{tag}", None)

    def push(self, repository: str, tag: str) -> PushOutcome:
        ref = f"{repository}:{tag}"
        if self.before_push is not None:
            self.before_push(self, ref)
        self.pushes.append(ref)
        config = self.tags[ref]
        body = json.dumps({"config": {"digest": config}}).encode()
        digest = "sha256:" + hashlib.sha256(body).hexdigest()
        self.manifests[digest] = Manifest(digest, "application/json", body, config)
        self.registry[ref] = digest
        return PushOutcome(digest)

    def manifest(self, repository: str, reference: str) -> Manifest | None:
        digest = self.registry.get(f"{repository}:{reference}", reference)
        return self.manifests.get(digest)

    def put_manifest(self, repository: str, tag: str, manifest: Manifest) -> str:
        self.put.append(f"{repository}:{tag}")
        self.registry[f"{repository}:{tag}"] = manifest.digest
        return manifest.digest

    def leftovers(self, scope: str) -> list[Leftover]:
        return list(self.left) if scope == REPO else []

    def remove_container(self, container_id: str) -> None:
        self.removed.append(container_id)
        self.left = [item for item in self.left if item.id != container_id]

    def release(self, tag: str) -> str | None:
        """The image id the registry's ``REPO:tag`` describes."""
        found = self.manifest(REPO, tag)
        return found.config_digest if found else None


def site_with(demo_upstream: DemoUpstream, tmp_path: Path, fork: RepoBuilder, *extra: str) -> Path:
    """pulse at v1.1.0 as an image installs it, with the series applied by forktool."""
    site = tmp_path / "site" / "pulse-site"
    site.mkdir(parents=True)
    archive = run_git(
        ["archive", "--format=tar", "v1.1.0", "pulse"], cwd=demo_upstream.path, purpose="export"
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(site, filter="data")
    assert run_cli("-C", fork.path, "apply", "--target", site, *extra).code == 0
    return site


def identity(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Rel Eng")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "releng@fork.example")
