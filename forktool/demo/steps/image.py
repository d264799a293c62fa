"""The walkthrough step on images: build a candidate, gate it, promote its digest, freeze
the release (skipped, saying why, without a Docker engine and a registry)."""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

from forktool.demo.session import FORK_MAINTAINER, Demo, fork_config
from forktool.errors import FatalError
from forktool.git import run as run_git

if TYPE_CHECKING:
    from forktool.docker_client import SdkEngine

ARM_PATCH = "0001-config-do-not-crash-on-an-empty-config-file.patch"


def step_images(demo: Demo) -> None:
    from forktool.demo.images import ensure_upstream_image

    demo.step(
        "Images: build a candidate, gate it, promote its digest, freeze the release",
        """A build only makes a candidate (<repo>:<pin>-cand-<sha7>). The gate runs in that
        exact image with no network and records its verdict by image id; promote moves
        that id, never a rebuild; freeze tags the release commit with digest and patch set.""",
    )
    engine = _docker_and_registry(demo)
    if engine is None:
        return
    config = fork_config(demo)
    if config.image is None:
        demo.say("   SKIPPED: the fork has no image: block")
        return
    base = ensure_upstream_image(engine, demo.upstream.path, config.pin_tag)
    demo.say(f"   upstream image: {base} (busybox + pulse at /opt/pulse; see docs/images.md)")
    repository = _publish_to_own_repository(demo, config.image.repository)
    candidate = f"{repository}:{config.pin_tag}-cand-{demo.fork.rev('HEAD')[:7]}"
    demo.run(["image", "build"])
    demo.run(["image", "promote", candidate, "--tag", config.pin_tag], expect=1)
    demo.run(["image", "gate", candidate])
    demo.run(["image", "promote", candidate, "--tag", config.pin_tag, "--latest"])
    demo.run(["image", "freeze"])
    demo.run(["image", "freeze"])
    if ARM_PATCH in (demo.fork_path / "series").read_text():
        _gate_the_arm_without(demo, ARM_PATCH, candidate)


def _docker_and_registry(demo: Demo) -> SdkEngine | None:
    """The Docker engine, when it and the demo's registry answer; else None, said."""
    from forktool.demo.images import REGISTRY, registry_answers
    from forktool.docker_client import connect

    try:
        engine = connect()
    except FatalError as exc:
        demo.say(f"   SKIPPED: {exc.message}")
        demo.say('   Start one with: eval "$(scripts/docker-up.sh)" and run the demo again.')
        return None
    if not registry_answers(REGISTRY):
        demo.say(f"   SKIPPED: a Docker engine answers, but no registry at {REGISTRY}.")
        demo.say("   scripts/docker-up.sh starts both.")
        return None
    return engine


def _publish_to_own_repository(demo: Demo, configured: str) -> str:
    """Commit an image repository of this run's own beside the ``configured`` one:
    promote never moves a release tag, and an earlier demo run may have published one
    in the same registry."""
    text = (demo.fork_path / "forktool.yaml").read_text()
    repository = f"{configured}-demo-{secrets.token_hex(4)}"
    text = text.replace(f"repository: {configured}\n", f"repository: {repository}\n")
    demo.fork.commit(
        "fork: publish the demo image\n", {"forktool.yaml": text}, author=FORK_MAINTAINER
    )
    for key, value in (("user.name", "Dana Okoye"), ("user.email", "dana@fork.example")):
        run_git(["config", key, value], cwd=demo.fork_path, purpose=f"set {key}")
    return repository


def _gate_the_arm_without(demo: Demo, patch: str, candidate: str) -> None:
    """The leave-one-out arm without ``patch`` fails its gate, and an uncommitted
    change to the gate cannot turn that into a pass."""
    demo.say("   A leave-one-out arm: the image without the empty-config fix fails its gate.")
    demo.run(["arms"])
    demo.run(["image", "build", "--minus", patch])
    demo.run(["image", "gate", f"{candidate}-minus-0001"], expect=1)
    demo.say(
        "   A gate judges committed configuration only: an uncommitted gate: [[true]]"
        " cannot turn that failure into a pass."
    )
    config_file = demo.fork_path / "forktool.yaml"
    committed = config_file.read_text()
    lines = committed.splitlines(keepends=True)
    lines = ['  gate: [["true"]]\n' if ln.startswith("  gate: ") else ln for ln in lines]
    config_file.write_text("".join(lines))
    try:
        demo.run(["image", "gate", f"{candidate}-minus-0001"], expect=2)
    finally:
        config_file.write_text(committed)
