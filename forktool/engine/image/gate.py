"""``image gate``: the candidate's checks, and the gate record bound to what was gated."""

from __future__ import annotations

import io
import json
import tarfile
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from forktool import __version__
from forktool.config import Config, ImageSettings
from forktool.docker_client import DockerEngine, ImageInfo, tail
from forktool.engine import Progress
from forktool.engine.apply.arms import PATCHLESS, Arm, arm_named, arm_patches, patchset_hash
from forktool.engine.apply.target import apply_mode, apply_to_directory
from forktool.engine.image.build import (
    L_ARM,
    L_REVISION,
    RECORD_FORMAT,
    REQUIRED_LABELS,
    candidate_labels,
    committed_config_blob,
    config_in_repository,
    fork_at,
    require_committed,
    require_image_settings,
    temp_prefix,
)
from forktool.errors import FatalError
from forktool.fork import Fork
from forktool.fsutil import atomic_write
from forktool.git import Git


@dataclass(frozen=True)
class GateCheck:
    kind: str  # labels | command | series
    command: tuple[str, ...]
    exit_code: int
    output: str
    where: str = "image"  # image: ran in the candidate; host: on files copied out of it

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "command": list(self.command),
            "exit_code": self.exit_code,
            "ok": self.ok,
            "where": self.where,
            "output": self.output,
        }


@dataclass(frozen=True)
class Binding:
    """What a gate record is bound to; promote derives each again and compares."""

    revision: str
    config: str  # forktool.yaml's path in the repository
    config_blob: str  # its blob id at ``revision``
    patch_set: str  # the arm's patch set, hashed from the committed files
    gate_timeout: int
    forktool: str = __version__

    def to_json(self) -> dict[str, object]:
        return {
            "revision": self.revision,
            "config": self.config,
            "config_blob": self.config_blob,
            "patch_set": self.patch_set,
            "gate_timeout": self.gate_timeout,
            "forktool": self.forktool,
        }


@dataclass(frozen=True)
class GateRecord:
    digest: str  # the image id (sha256 of the image config)
    candidate: str
    repo_digests: tuple[str, ...]
    labels: dict[str, str]
    checks: tuple[GateCheck, ...]
    started: str
    finished: str
    binding: Binding
    record_path: str = ""

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(check.ok for check in self.checks)

    @property
    def arm(self) -> str:
        return self.labels.get(L_ARM, "")

    def to_json(self) -> dict[str, object]:
        return {
            "format": RECORD_FORMAT,
            "digest": self.digest,
            "candidate": self.candidate,
            "repo_digests": list(self.repo_digests),
            "labels": self.labels,
            "arm": self.arm,
            "ok": self.ok,
            "commands": [check.to_json() for check in self.checks],
            "started": self.started,
            "time": self.finished,
            **self.binding.to_json(),
        }


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def record_path(config: Config, image_id: str) -> Path:
    settings = require_image_settings(config)
    return config.file(settings.records) / f"{image_id.removeprefix('sha256:')}.json"


def read_record(path: Path, shown: str, what: str) -> dict[str, object]:
    """A JSON record forktool wrote under image.records (exit 2 when it is not one)."""
    try:
        data = json.loads(path.read_bytes())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FatalError(f"{shown}: not a valid {what}: {exc}") from exc
    if not isinstance(data, dict):
        raise FatalError(f"{shown}: not a valid {what}")
    return data


def candidate_image(docker: DockerEngine, ref: str) -> ImageInfo:
    info = docker.image(ref)
    if info is None:
        raise FatalError(f"no image '{ref}' in the engine", "build it: forktool image build")
    missing = [key for key in REQUIRED_LABELS if key not in info.labels]
    if missing:
        raise FatalError(
            f"{ref} is not a forktool candidate: it has no {', '.join(missing)} label",
            "gate and promote only images built by 'forktool image build'",
        )
    return info


def candidate_revision(git: Git, ref: str, info: ImageInfo) -> str:
    revision = info.labels[L_REVISION]
    if git.find_commit(revision) != revision:
        raise FatalError(
            f"{ref} was built from {revision[:12]}, which is not in this repository",
            "gate it in the fork it was built from (fetch that commit)",
        )
    return revision


def gate_candidate(
    config: Config,
    git: Git,
    docker: DockerEngine,
    ref: str,
    *,
    progress: Progress | None = None,
) -> GateRecord:
    """Run the committed gate commands in the candidate, check its series from outside."""
    scope = require_image_settings(config).repository
    require_committed(git, config)
    info = candidate_image(docker, ref)
    started = now()
    revision = candidate_revision(git, ref, info)
    checks: list[GateCheck] = []
    with fork_at(git, config, revision) as fork:
        settings = require_image_settings(fork.config)
        site = image_site(settings)
        arm = arm_named(fork, info.labels[L_ARM])
        binding = Binding(
            revision,
            config_in_repository(git, config),
            committed_config_blob(git, config, revision),
            patchset_hash(arm_patches(fork, arm)),
            settings.gate_timeout,
        )
        checks.append(_label_check(fork, arm, info.labels))
        for command in settings.gate:
            outcome = docker.run(info.id, command, settings.gate_timeout, scope)
            checks.append(GateCheck("command", command, outcome.exit_code, tail(outcome.output)))
            if progress:
                progress(1)
        checks.append(series_check(docker, info.id, fork, arm, site, scope))
        if progress:
            progress(1)
    record = GateRecord(
        info.id, ref, info.repo_digests, info.labels, tuple(checks), started, now(), binding
    )
    path = record_path(config, info.id)
    atomic_write(path, (json.dumps(record.to_json(), indent=2) + "\n").encode())
    return replace(record, record_path=config.rel(path))


def image_site(settings: ImageSettings) -> str:
    site = settings.site
    if site is None:
        raise FatalError(
            "image.site is not set: the gate cannot check the series in the image",
            "set image.site to the directory the series is applied to (e.g. /opt/app)",
        )
    path = PurePosixPath(site)
    if not path.is_absolute() or path == PurePosixPath("/") or ".." in path.parts:
        raise FatalError(f"image.site '{site}' must be an absolute directory other than /")
    return str(path)


def _label_check(fork: Fork, arm: Arm, labels: Mapping[str, str]) -> GateCheck:
    want = candidate_labels(fork, labels[L_REVISION], arm)
    wrong = [
        f"{key}={labels.get(key)!r}, expected {value!r}"
        for key, value in want.items()
        if labels.get(key) != value
    ]
    output = "; ".join(wrong) if wrong else "labels match the fork at the candidate's revision"
    return GateCheck("labels", ("labels",), 1 if wrong else 0, output, "host")


def series_command(arm: Arm, site: str) -> tuple[str, ...]:
    """The ``forktool apply`` the series check is (run by the host on the copied site)."""
    if arm.name == PATCHLESS:
        return ("forktool", "apply", "--target", site, "--dry-run")
    if arm.patch is not None:
        return ("forktool", "apply", "--target", site, "--verify", "--except", arm.patch)
    return ("forktool", "apply", "--target", site, "--verify")


def series_check(
    docker: DockerEngine, image_id: str, fork: Fork, arm: Arm, site: str, scope: str
) -> GateCheck:
    """The host's ``apply --verify`` on a copy of ``site`` taken out of the image.

    Nothing in the image runs: a ``forktool`` (or ``patch``) inside the thing
    being judged could say anything.
    """
    command = series_command(arm, site)

    def failed(message: str) -> GateCheck:
        return GateCheck("series", command, 1, message, "host")

    try:
        archive = docker.export_path(image_id, site, scope)
    except FatalError as exc:
        return failed(exc.message)
    with tempfile.TemporaryDirectory(prefix=temp_prefix("site")) as tmp:
        skipped = _extract_site(archive.data, Path(tmp))
        target = Path(tmp) / PurePosixPath(archive.path).name
        if not target.is_dir():
            return failed(f"{site} in the image is not a directory")
        notes = [f"not copied: {line}" for line in skipped]
        if archive.path != site:
            notes.insert(0, f"{site} is a link to {archive.path} in the image")
        try:
            result = apply_to_directory(
                fork,
                target,
                mode="apply"
                if arm.name == PATCHLESS
                else apply_mode(verify=True, excluding=arm.patch is not None),
                exclude=[arm.patch] if arm.patch is not None else [],
                dry_run=True,
            )
        except FatalError as exc:
            return failed("\n".join([*notes, exc.message]).replace(str(target), archive.path))
    lines = [
        *notes,
        *(
            f"{v.patch}: {v.status}" + (f" ({v.message})" if v.message else "")
            for v in result.patches
        ),
    ]
    lines.append(("OK: " if result.ok else "FAILED: ") + (result.message or "series checked"))
    # Messages name the image's path, never the host's temporary copy.
    output = "\n".join(lines).replace(str(target), archive.path)
    return GateCheck("series", command, 0 if result.ok else 1, output, "host")


def _extract_site(data: bytes, dest: Path) -> list[str]:
    """Extract the site's copy; members no safe extraction allows are left out, and named.

    A link out of the site (absolute, or up past its top) is the image's business,
    not the host's: it is never created here, and a patch that touches it fails.
    """
    skipped: list[str] = []
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        members = []
        for member in tar.getmembers():
            try:
                tarfile.data_filter(member, str(dest))
            except tarfile.FilterError:
                link = f" -> {member.linkname}" if member.issym() or member.islnk() else ""
                skipped.append(f"{member.name}{link} (it leads outside the site)")
                continue
            members.append(member)
        tar.extractall(dest, members=members, filter="data")
    return skipped
