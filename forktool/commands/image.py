from __future__ import annotations

import os

import click

from forktool.app import App, format_option, pass_app
from forktool.docker_client import DockerEngine, connect
from forktool.engine.freeze import freeze_release, tagger_identity
from forktool.engine.image import (
    build_candidate,
    gate_candidate,
    promote_candidate,
    require_image_settings,
)
from forktool.report.image import render_build, render_freeze, render_gate, render_promote


def engine() -> DockerEngine:
    """The Docker engine to use (tests replace this with a fake)."""
    return connect()


@click.group("image")
def command() -> None:
    """Candidate images, the gate, promotion by digest, frozen releases.

    A build only ever makes a candidate; the gate runs in that exact image and
    records its verdict by image id; promotion tags and pushes that same id, and
    only when it passed. Nothing rebuilds. Configured by the image: block of
    forktool.yaml; the engine is DOCKER_HOST (or the default socket).

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
    require_image_settings(config)
    result = build_candidate(config, app.git(), engine(), minus=minus, patchless=patchless)
    app.emit(result, fmt, render_build)
    return 0 if result.ok else 1


@command.command("gate")
@click.argument("candidate")
@format_option()
@pass_app
def gate(app: App, candidate: str, fmt: str) -> int:
    """Run the gate in CANDIDATE (no network) and record the verdict by image id.

    Runs every image.gate command in the candidate, then checks the series in
    image.site: 'forktool apply --verify' inside the image when forktool is
    there, else the same strict engine on a copy of the site taken out of the
    image. Writes the gate record under image.records. Exit 1 when anything fails.

    \b
    Example:
      forktool image gate 127.0.0.1:5000/pulse-fork:v1.1.0-cand-1a2b3c4
    """
    config = app.config()
    require_image_settings(config)
    git = app.git()
    docker = engine()
    steps = len(config.image.gate) + 1 if config.image else 1
    with app.lock(git), app.output.progress(steps, f"gating {candidate}") as tick:
        record = gate_candidate(config, git, docker, candidate, progress=tick)
    app.emit(record, fmt, render_gate, extra={"record": record.record_path})
    return 0 if record.ok else 1


@command.command("promote")
@click.argument("candidate")
@click.option("--tag", "tag", required=True, metavar="TAG", help="The release tag to publish.")
@click.option("--latest", is_flag=True, help="Also move :latest to the same digest.")
@format_option()
@pass_app
def promote(app: App, candidate: str, tag: str, latest: bool, fmt: str) -> int:
    """Publish a gated candidate's exact digest as <repository>:TAG. Never rebuilds.

    Refuses (exit 1) an image without a passing gate record, an arm candidate,
    and a TAG the registry already holds for another digest. Tags the image id,
    pushes, and checks the registry reports the digest the push acknowledged.

    \b
    Example:
      forktool image promote 127.0.0.1:5000/pulse-fork:v1.1.0-cand-1a2b3c4 --tag v1.1.0 --latest
    """
    config = app.config()
    require_image_settings(config)
    git = app.git()
    with app.lock(git):
        result = promote_candidate(config, engine(), candidate, tag, latest=latest)
    app.emit(result, fmt, render_promote)
    return 0 if result.ok else 1


@command.command("freeze")
@click.option(
    "--digest",
    metavar="REF",
    help="The released image (repository@sha256:... or sha256:...); default: its promotion record.",
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
