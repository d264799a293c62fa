"""``image promote``: publish exactly the gated image, or nothing.

A gate record is only believed when every binding it states is derived again
and agrees: the image id, the candidate's revision, the committed config's blob
id, the arm's patch set, the gate commands and timeout, forktool's version. The
push goes under a private, unique tag no other process knows; the manifest is
then fetched by digest from the registry and must describe the gated image id
(``config.digest``); only then is the release tag put on the registry, naming
that manifest by digest. No local release tag is ever made, so none can be moved
under the push or left behind by a failed one.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from forktool import __version__
from forktool.config import Config
from forktool.docker_client import DockerEngine, ImageInfo
from forktool.engine.apply.arms import FULL, arm_named, arm_patches, patchset_hash
from forktool.engine.image.build import (
    L_ARM,
    L_PATCH_SET,
    L_REVISION,
    RECORD_FORMAT,
    committed_config_blob,
    config_in_repository,
    docker_tag,
    fork_at,
    require_image_settings,
)
from forktool.engine.image.gate import (
    candidate_image,
    candidate_revision,
    image_site,
    now,
    read_record,
    record_path,
    series_command,
)
from forktool.errors import FatalError, command_line
from forktool.fsutil import atomic_write
from forktool.git import Git
from forktool.registry import Manifest

PRIVATE_TAG = "forktool-promote-"


@dataclass(frozen=True)
class PromoteResult:
    candidate: str
    image_id: str
    repository: str
    tags: tuple[str, ...]
    ok: bool
    digest: str | None = None  # the registry's manifest digest
    message: str = ""
    record: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    pushed_as: str = ""  # the private tag the manifest was pushed under

    @property
    def reference(self) -> str | None:
        return f"{self.repository}@{self.digest}" if self.digest else None

    def to_json(self) -> dict[str, object]:
        return {
            "candidate": self.candidate,
            "image": self.image_id,
            "repository": self.repository,
            "tags": list(self.tags),
            "ok": self.ok,
            "digest": self.digest,
            "reference": self.reference,
            "message": self.message,
            "gate_record": self.record,
            "labels": self.labels,
            "pushed_as": self.pushed_as,
        }


def load_record(path: Path, shown: str) -> dict[str, object] | None:
    return read_record(path, shown, "gate record") if path.is_file() else None


def promotion_path(config: Config, tag: str) -> Path:
    return config.file(require_image_settings(config).records) / f"promoted-{tag}.json"


def release_tag(tag: str) -> str:
    docker_tag(tag, "--tag")
    if tag == "latest" or "-cand-" in tag or tag.startswith(PRIVATE_TAG):
        raise FatalError(
            f"--tag {tag}: name the release (e.g. the pin tag)", "use --latest for :latest"
        )
    return tag


def promote_candidate(
    config: Config, git: Git, docker: DockerEngine, ref: str, tag: str, *, latest: bool
) -> PromoteResult:
    settings = require_image_settings(config)
    release_tag(tag)
    info = candidate_image(docker, ref)
    tags = (tag, "latest") if latest else (tag,)
    path = record_path(config, info.id)
    shown = config.rel(path)
    repository = settings.repository

    def refuse(message: str, pushed_as: str = "") -> PromoteResult:
        return PromoteResult(
            ref, info.id, repository, tags, False, None, message, shown, info.labels, pushed_as
        )

    if problem := _not_releasable(config, git, info, ref, path):
        return refuse(problem)
    held = docker.manifest(repository, tag)
    if held is not None and held.config_digest != info.id:
        return refuse(_moved(repository, tag, held, info.id))
    private = ""
    if held is None:
        pushed = push_privately(docker, repository, info.id)
        private = pushed.tag
        if isinstance(pushed.result, str):
            return refuse(pushed.result, private)
        manifest = pushed.result
    else:
        manifest = held  # released before (perhaps from another runner): the same image
    if problem := _put_release_tags(docker, repository, tags, manifest, info.id):
        return refuse(problem, private)
    result = PromoteResult(
        ref,
        info.id,
        repository,
        tags,
        True,
        manifest.digest,
        f"{repository}@{manifest.digest}",
        shown,
        info.labels,
        private,
    )
    _write_promotion(config, tag, result, info)
    return result


def _not_releasable(config: Config, git: Git, info: ImageInfo, ref: str, path: Path) -> str | None:
    """Why ``info`` may not be released: no gate record, a record that does not prove
    it passed, or a leave-one-out arm; None when it may."""
    shown = config.rel(path)
    record = load_record(path, shown)
    if record is None:
        gate = command_line("forktool", "image", "gate", ref)
        return f"{info.id} has no gate record ({shown}); run '{gate}'"
    problem = gate_problem(config, git, info, ref, record)
    if problem:
        return f"{info.id} is not gated: {shown}: {problem}"
    if info.labels.get(L_ARM) != FULL:
        return f"{ref} is the {info.labels.get(L_ARM)} arm: arms are probes, never releases"
    return None


def _put_release_tags(
    docker: DockerEngine, repository: str, tags: Sequence[str], manifest: Manifest, image_id: str
) -> str | None:
    """Name ``manifest`` by digest under each of ``tags`` and read each back; why that
    failed, or None. A tag that names another image is never moved (``latest`` is)."""
    for name in tags:
        current = docker.manifest(repository, name)
        if current is not None and current.digest == manifest.digest:
            continue
        if name != "latest" and current is not None:
            return _moved(repository, name, current, image_id)
        docker.put_manifest(repository, name, manifest)
        after = docker.manifest(repository, name)
        if after is None or after.digest != manifest.digest or after.config_digest != image_id:
            return (
                f"the registry reports {after.digest if after else 'nothing'} for "
                f"{repository}:{name}, not {manifest.digest}"
            )
    return None


def _write_promotion(config: Config, tag: str, result: PromoteResult, info: ImageInfo) -> None:
    """The promotion record beside the gate records: what was released, from what."""
    promo = {**result.to_json(), "revision": info.labels[L_REVISION], "time": now()}
    promo["patch_set"] = info.labels[L_PATCH_SET]
    atomic_write(promotion_path(config, tag), (json.dumps(promo, indent=2) + "\n").encode())


@dataclass(frozen=True)
class Pushed:
    tag: str  # the private tag pushed
    result: Manifest | str  # the registry's manifest of the gated image, or why not


def push_privately(docker: DockerEngine, repository: str, image_id: str) -> Pushed:
    """Push ``image_id`` under a fresh private tag; its manifest as the registry has it."""
    private = PRIVATE_TAG + secrets.token_hex(8)
    docker.tag(image_id, repository, private)
    try:
        pushed = docker.push(repository, private)
    finally:
        docker.untag(repository, private)
    if pushed.digest is None:
        return Pushed(private, f"push of {image_id} to {repository} failed: {pushed.error}")
    manifest = docker.manifest(repository, pushed.digest)
    if manifest is None or manifest.digest != pushed.digest:
        return Pushed(private, f"the registry has no manifest {pushed.digest} after the push")
    if manifest.config_digest != image_id:
        return Pushed(
            private,
            f"the pushed manifest {manifest.digest} describes image {manifest.config_digest}, "
            f"not the gated {image_id}: {repository}:{private} was retagged during the push; "
            "nothing was released",
        )
    return Pushed(private, manifest)


def _moved(repository: str, tag: str, held: Manifest, image_id: str) -> str:
    return (
        f"{repository}:{tag} already names {held.digest} (image {held.config_digest}), "
        f"not this candidate (image {image_id}); a release tag is never moved"
    )


def gate_problem(
    config: Config, git: Git, info: ImageInfo, ref: str, record: Mapping[str, object]
) -> str | None:
    """Why ``record`` does not prove ``info`` passed the gate, or None when it does."""
    if record.get("format") != RECORD_FORMAT:
        return f"the record is format {record.get('format')}, not {RECORD_FORMAT}: gate again"
    if record.get("digest") != info.id:
        return f"the record is for {record.get('digest')}"
    if record.get("forktool") != __version__:
        return f"the record was written by forktool {record.get('forktool')}, this is {__version__}"
    if record.get("labels") != info.labels:
        return "the record's labels are not the image's"
    revision = candidate_revision(git, ref, info)
    if record.get("revision") != revision:
        return f"the record is for revision {record.get('revision')}, the image for {revision}"
    if record.get("config") != config_in_repository(git, config):
        return f"the record names the config {record.get('config')}"
    blob = committed_config_blob(git, config, revision)
    if record.get("config_blob") != blob:
        return f"the record's config blob {record.get('config_blob')} is not the committed {blob}"
    with fork_at(git, config, revision) as fork:
        settings = require_image_settings(fork.config)
        arm = arm_named(fork, info.labels[L_ARM])
        patch_set = patchset_hash(arm_patches(fork, arm))
        expected = [("labels", ["labels"])]
        expected += [("command", list(command)) for command in settings.gate]
        expected.append(("series", list(series_command(arm, image_site(settings)))))
        timeout = settings.gate_timeout
    if record.get("patch_set") != patch_set or info.labels.get(L_PATCH_SET) != patch_set:
        return f"the record's patch set {record.get('patch_set')} is not the committed {patch_set}"
    if record.get("gate_timeout") != timeout:
        return (
            f"the record's gate timeout {record.get('gate_timeout')} is not the committed {timeout}"
        )
    commands = record.get("commands")
    checks = [c for c in commands if isinstance(c, dict)] if isinstance(commands, list) else []
    if [(c.get("kind"), c.get("command")) for c in checks] != expected:
        return "the recorded checks are not the committed gate commands and series check"
    failed = [_shown(c) for c in checks if c.get("ok") is not True or c.get("exit_code") != 0]
    if failed or record.get("ok") is not True:
        return f"the gate failed: {'; '.join(failed) or 'not ok'}"
    if any(c.get("kind") in ("labels", "series") and c.get("where") != "host" for c in checks):
        return "the labels and series checks must have run on the host"
    return None


def _shown(check: Mapping[str, object]) -> str:
    command = check.get("command")
    words = [str(word) for word in command] if isinstance(command, list) else []
    return f"{' '.join(words)} (exit {check.get('exit_code')})"
