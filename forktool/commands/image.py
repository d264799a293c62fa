from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

import click

from forktool.app import App, notice
from forktool.docker_client import DockerEngine, connect
from forktool.engine.image.build import build_candidate, clean_leftovers, require_image_settings
from forktool.engine.image.freeze import freeze_release, tagger_identity
from forktool.engine.image.gate import gate_candidate
from forktool.engine.image.promote import promote_candidate
from forktool.options import format_option, pass_app
from forktool.report.image import render_build, render_freeze, render_gate, render_promote


def docker_engine() -> DockerEngine:
    """The Docker engine to use (tests replace this with a fake)."""
    return connect()


@contextmanager
def terminated_like_interrupted() -> Iterator[None]:
    """SIGTERM (what CI sends on cancel) unwinds like Ctrl-C: containers and temporary
    directories are removed on the way out."""

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def cleaned_engine(scope: str) -> DockerEngine:
    """The engine, after removing what a killed forktool run left (one notice each)."""
    docker = docker_engine()
    for message in clean_leftovers(docker, scope):
        notice(message)
    return docker


@click.group("image")
def command() -> None:
    """Candidate images, the gate, promotion by digest, frozen releases.

    A build only ever makes a candidate; the gate runs the committed gate
    commands in that exact image, checks its series from outside, and records its
    verdict bound to the image id and the committed configuration; promotion
    publishes that same id, and only when the record derives again. Nothing
    rebuilds. Configured by the image: block of forktool.yaml; the engine is
    DOCKER_HOST (or the default socket). SIGTERM is handled like Ctrl-C.

    \b
    Example:
      forktool image build
      forktool image gate registry.example.org/app:v1.1.0-cand-1a2b3c4
      forktool image promote registry.example.org/app:v1.1.0-cand-1a2b3c4 --tag v1.1.0 --latest
      forktool image freeze
    """


@command.command("build")
@click.option(
    "--minus", metavar="PATCH", help="Build the arm without PATCH (a leave-one-out probe)."
)
@click.option("--patchless", is_flag=True, help="Build the arm with no patches at all.")
@format_option()
@pass_app
def build(app: App, minus: str | None, patchless: bool, fmt: str) -> int:
    """Build a candidate image from the fork's committed HEAD.

    Builds image.dockerfile with the pin tag as image.build_arg and tags only
    <repository>:<pin>-cand-<sha7> (-minus-NNNN / -patchless for arms). Labels
    record the base tag, the pinned commit, the patch-set hash, the revision and
    the arm. A failed build shows the failing step's lines and exits 1.

    \b
    Examples:
      forktool image build
      forktool image build --minus 0002-engine-retry-on-timeout.patch
      forktool image build --patchless --format json
    """
    config = app.config()
    scope = require_image_settings(config).repository
    git = app.git()
    with terminated_like_interrupted():
        docker = cleaned_engine(scope)
        result = build_candidate(config, git, docker, minus=minus, patchless=patchless)
    app.emit(result, fmt, render_build)
    return 0 if result.ok else 1


@command.command("gate")
@click.argument("candidate")
@format_option()
@pass_app
def gate(app: App, candidate: str, fmt: str) -> int:
    """Run the gate in CANDIDATE (no network) and record the verdict by image id.

    Refuses (exit 2) while the fork's files have uncommitted changes: the gate
    commands, image.site and image.gate_timeout come from the configuration
    committed at the candidate's revision. Runs every image.gate command in the
    candidate, then copies image.site out of it and runs this forktool's
    'apply --verify' on the copy (for a minus arm '--verify --except PATCH',
    for the patchless arm '--dry-run'): nothing inside the image judges the
    image. Writes the gate record, bound to the image id, revision, committed
    config blob, patch set and forktool version, under image.records.
    Exit 1 when anything fails.

    \b
    Example:
      forktool image gate 127.0.0.1:5000/pulse-fork:v1.1.0-cand-1a2b3c4
    """
    config = app.config()
    require_image_settings(config)
    git = app.git()
    steps = len(config.image.gate) + 1 if config.image else 1
    with terminated_like_interrupted(), app.lock(git):
        docker = cleaned_engine(config.image.repository if config.image else "")
        with app.output.progress(steps, f"gating {candidate}") as tick:
            record = gate_candidate(config, git, docker, candidate, progress=tick)
    app.emit(record, fmt, render_gate, extra={"record": record.record_path})
    return 0 if record.ok else 1


@command.command("promote")
@click.argument("candidate")
@click.option(
    "--tag",
    "tag",
    required=True,
    metavar="TAG",
    help="The image tag to publish on the registry (<repository>:TAG), usually the "
    "release's name: a registry tag, not a git tag to resolve.",
)
@click.option("--latest", is_flag=True, help="Also move :latest to the same digest.")
@format_option()
@pass_app
def promote(app: App, candidate: str, tag: str, latest: bool, fmt: str) -> int:
    """Publish a gated candidate's exact digest as <repository>:TAG. Never rebuilds.

    Refuses (exit 1) an image whose gate record is missing, failed, or does
    not match what promote derives again (image id, revision, committed config
    blob, patch set, gate commands, forktool version); an arm candidate; and a
    TAG the registry already holds for another image. Pushes the image id under
    a private unique tag, fetches the manifest by digest from the registry and
    requires its config to be the gated image id, then tags the release on the
    registry by that manifest digest. No local release tag is made.

    \b
    Example:
      forktool image promote 127.0.0.1:5000/pulse-fork:v1.1.0-cand-1a2b3c4 --tag v1.1.0 --latest
    """
    config = app.config()
    require_image_settings(config)
    git = app.git()
    with terminated_like_interrupted(), app.lock(git):
        result = promote_candidate(config, git, docker_engine(), candidate, tag, latest=latest)
    app.emit(result, fmt, render_promote)
    return 0 if result.ok else 1


@command.command("freeze")
@click.option(
    "--digest",
    metavar="REF",
    help="The released image (repository@sha256:... or sha256:...): it must be named by a "
    "promotion record of HEAD and its patch set; default: the newest such record.",
)
@format_option()
@pass_app
def freeze(app: App, digest: str | None, fmt: str) -> int:
    """Tag the release commit (HEAD) as fork/<pin-tag>, recording digest, patch set and pin.

    Idempotent: the same values again change nothing. A fork/<pin-tag> that
    records anything else is refused (exit 1) naming both values; it is never
    moved. The tagger is GIT_COMMITTER_NAME/EMAIL, else user.name/user.email
    from the fork's own .git/config.

    \b
    Example:
      forktool image freeze
      forktool image freeze --digest 127.0.0.1:5000/pulse-fork@sha256:4f1c...
    """
    config = app.config()
    require_image_settings(config)
    git = app.git()
    with app.lock(git):
        result = freeze_release(config, git, tagger_identity(git, os.environ), digest)
    app.emit(result, fmt, render_freeze)
    return 0 if result.ok else 1
