"""Images: candidate builds, the gate, promotion by digest, frozen releases.

Two lessons shape this module. A push that rebuilt the image republished the
release tag without any gate, and promotion by rebuilding publishes a look-alike
the gate never saw. So a build only ever makes a *candidate*
(``<repository>:<tag>-cand-<sha7>``); the gate runs in that exact image and writes
a record keyed by its image id; promotion tags and pushes that same id, and only
when its record passed. Nothing here rebuilds.

Builds use the fork's committed tree at HEAD (``git archive``), not the working
tree, so the ``-cand-<sha7>`` name and the revision label tell the truth. Arms are
built from that copy with the series (and map) minus a patch: the user's files
are never edited.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import tarfile
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from forktool import __version__
from forktool.config import Config, ImageSettings, load_config
from forktool.docker_client import DockerEngine, ImageInfo, tail, tar_files
from forktool.engine import Progress
from forktool.engine.apply import apply_to_directory
from forktool.engine.arms import (
    FULL,
    PATCHLESS,
    Arm,
    arm_named,
    arm_patches,
    patchset_hash,
)
from forktool.errors import FatalError
from forktool.fork import Fork, load_fork
from forktool.fsutil import atomic_write
from forktool.git import Git

LABEL = "org.forktool."
L_BASE_TAG = LABEL + "base-tag"
L_PIN_COMMIT = LABEL + "pin-commit"
L_PATCH_SET = LABEL + "patch-set"
L_REVISION = LABEL + "revision"
L_ARM = LABEL + "arm"
REQUIRED_LABELS = (L_BASE_TAG, L_PIN_COMMIT, L_PATCH_SET, L_REVISION, L_ARM)
RECORD_FORMAT = 1
IN_IMAGE_FORK = "/tmp/forktool-gate"
FAILING_LINES = 30
_DOCKER_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
_IMAGE_ID = re.compile(r"^sha256:[0-9a-f]{64}$")


def require_image_settings(config: Config) -> ImageSettings:
    if config.image is None:
        raise FatalError(
            f"{config.rel(config.path)} has no image: block",
            "add image: {repository: ..., dockerfile: ...} (see docs/images.md)",
        )
    return config.image


def docker_tag(text: str, what: str) -> str:
    if not _DOCKER_TAG.match(text):
        raise FatalError(
            f"{what} '{text}' is not a valid image tag",
            "image tags are 1-128 of A-Z a-z 0-9 _ . - and do not start with . or -",
        )
    return text


def candidate_tag(settings: ImageSettings, pin_tag: str, revision: str, arm: Arm) -> str:
    tag = f"{pin_tag}-cand-{revision[:7]}{arm.suffix}"
    return f"{settings.repository}:{docker_tag(tag, 'the candidate tag')}"


def candidate_labels(fork: Fork, revision: str, arm: Arm) -> dict[str, str]:
    return {
        L_BASE_TAG: fork.config.pin_tag,
        L_PIN_COMMIT: fork.config.pin_commit,
        L_PATCH_SET: patchset_hash(arm_patches(fork, arm)),
        L_REVISION: revision,
        L_ARM: arm.name,
    }


# -- the fork as committed -------------------------------------------------------------


@contextmanager
def fork_at(git: Git, config: Config, revision: str) -> Iterator[Fork]:
    """The fork's files as committed at ``revision``, in a temporary directory."""
    top = git.toplevel().resolve()
    try:
        config_rel = config.path.resolve().relative_to(top)
    except ValueError as exc:
        raise FatalError(f"{config.path} is outside the repository {top}") from exc
    tmp = Path(tempfile.mkdtemp(prefix="forktool-image-"))
    try:
        with tarfile.open(fileobj=io.BytesIO(git.archive(revision))) as tar:
            tar.extractall(tmp / "src", filter="data")
        copy = tmp / "src" / config_rel
        if not copy.is_file():
            raise FatalError(
                f"{config_rel} is not committed at {revision[:12]}",
                "commit the fork's files: builds use the committed tree, not the working tree",
            )
        yield load_fork(load_config(copy), strict=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def arm_files(fork: Fork, arm: Arm) -> dict[Path, bytes | None]:
    """The edits that turn ``fork``'s files into the arm's (series, map, patch files)."""
    if arm.name == FULL:
        return {}
    config = fork.config
    series, umap = fork.series, fork.upstream_map
    dropped = [p for p in fork.patches if p not in arm_patches(fork, arm)]
    changes: dict[Path, bytes | None] = {}
    for patch in dropped:
        series = series.without(patch.name)
        umap = umap.without(patch.name)
        changes[patch.path] = None
    changes[config.series_path] = series.to_bytes()
    changes[config.map_path] = umap.to_bytes()
    return changes


def _apply_changes(changes: Mapping[Path, bytes | None]) -> None:
    """Edits inside a temporary copy only (never the user's checkout)."""
    for path, data in changes.items():
        if data is None:
            path.unlink(missing_ok=True)
        else:
            path.write_bytes(data)


# -- build -----------------------------------------------------------------------------


@dataclass(frozen=True)
class BuildResult:
    candidate: str
    arm: str
    revision: str
    labels: dict[str, str]
    ok: bool
    image_id: str | None
    error: str = ""
    failing_lines: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {
            "candidate": self.candidate,
            "arm": self.arm,
            "revision": self.revision,
            "ok": self.ok,
            "image": self.image_id,
            "labels": self.labels,
            "error": self.error,
            "failing_lines": list(self.failing_lines),
        }


def failing_lines(log: tuple[str, ...], error: str) -> tuple[str, ...]:
    """The failing step of a build log: its ``Step N/M`` line, its output, the error."""
    start = max((i for i, line in enumerate(log) if line.startswith("Step ")), default=0)
    lines = [line for line in log[start:] if line.strip()]
    if len(lines) > FAILING_LINES:
        lines = [lines[0], "...", *lines[-(FAILING_LINES - 2) :]]
    return (*lines, error) if error else tuple(lines)


def build_candidate(
    config: Config,
    git: Git,
    docker: DockerEngine,
    *,
    minus: str | None = None,
    patchless: bool = False,
) -> BuildResult:
    from forktool.engine.arms import choose_arm

    settings = require_image_settings(config)
    revision = git.resolve_commit("HEAD", what="fork revision (HEAD)")
    with fork_at(git, config, revision) as fork:
        arm = choose_arm(fork, minus, patchless)
        context, dockerfile = _context(fork, settings, arm)
        tag = candidate_tag(settings, fork.config.pin_tag, revision, arm)
        labels = candidate_labels(fork, revision, arm)
        _apply_changes(arm_files(fork, arm))
        outcome = docker.build(
            context, dockerfile, {settings.build_arg: fork.config.pin_tag}, labels, tag
        )
    if outcome.image_id is None:
        return BuildResult(
            tag,
            arm.name,
            revision,
            labels,
            False,
            None,
            outcome.error,
            failing_lines(outcome.log, outcome.error),
        )
    return BuildResult(tag, arm.name, revision, labels, True, outcome.image_id)


def _context(fork: Fork, settings: ImageSettings, arm: Arm) -> tuple[Path, str]:
    root = fork.config.root
    context = (root / settings.context).resolve()
    dockerfile = (root / settings.dockerfile).resolve()
    if not context.is_dir():
        raise FatalError(f"image.context '{settings.context}' is not a committed directory")
    if not dockerfile.is_file():
        raise FatalError(f"image.dockerfile '{settings.dockerfile}' is not a committed file")
    try:
        inside = dockerfile.relative_to(context).as_posix()
    except ValueError as exc:
        raise FatalError(
            f"image.dockerfile '{settings.dockerfile}' is outside image.context '{settings.context}'"
        ) from exc
    if arm.name != FULL:
        for path in arm_files(fork, arm):
            if not path.resolve().is_relative_to(context):
                raise FatalError(
                    f"{fork.config.rel(path)} is outside image.context '{settings.context}'",
                    "an arm is built from the context with its series changed",
                )
    return context, inside


# -- gate ------------------------------------------------------------------------------


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
class GateRecord:
    digest: str  # the image id (sha256 of the image config)
    candidate: str
    repo_digests: tuple[str, ...]
    labels: dict[str, str]
    checks: tuple[GateCheck, ...]
    started: str
    finished: str
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
            "forktool": __version__,
        }


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def record_path(config: Config, image_id: str) -> Path:
    settings = require_image_settings(config)
    return config.file(settings.records) / f"{image_id.removeprefix('sha256:')}.json"


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


def gate_candidate(
    config: Config,
    git: Git,
    docker: DockerEngine,
    ref: str,
    *,
    progress: Progress | None = None,
) -> GateRecord:
    """Run the gate commands and the series check in the candidate; record the outcome."""
    settings = require_image_settings(config)
    site = _site(settings)
    info = candidate_image(docker, ref)
    started = now()
    revision = info.labels[L_REVISION]
    if git.try_resolve(revision) is None:
        raise FatalError(
            f"{ref} was built from {revision[:12]}, which is not in this repository",
            "gate it in the fork it was built from (fetch that commit)",
        )
    checks: list[GateCheck] = []
    with fork_at(git, config, revision) as fork:
        arm = arm_named(fork, info.labels[L_ARM])
        checks.append(_label_check(fork, arm, info.labels))
        for command in settings.gate:
            outcome = docker.run(info.id, command)
            checks.append(GateCheck("command", command, outcome.exit_code, tail(outcome.output)))
            if progress:
                progress(1)
        checks.append(_series_check(docker, info.id, fork, arm, site))
        if progress:
            progress(1)
    record = GateRecord(info.id, ref, info.repo_digests, info.labels, tuple(checks), started, now())
    path = record_path(config, info.id)
    atomic_write(path, (json.dumps(record.to_json(), indent=2) + "\n").encode())
    return replace(record, record_path=config.rel(path))


def _site(settings: ImageSettings) -> str:
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


def _series_check(
    docker: DockerEngine, image_id: str, fork: Fork, arm: Arm, site: str
) -> GateCheck:
    """``forktool apply --verify`` in the image when it has forktool, else on a copy of site."""
    verify = ["--dry-run"] if arm.name == PATCHLESS else ["--verify"]
    probe = docker.run(image_id, ["forktool", "--version"])
    if probe.exit_code == 0:
        command = ("forktool", "-C", IN_IMAGE_FORK, "apply", "--target", site, *verify)
        files = _fork_files_for_image(fork, arm)
        outcome = docker.run(image_id, command, files)
        return GateCheck("series", command, outcome.exit_code, tail(outcome.output), "image")
    command = ("forktool", "apply", "--target", site, *verify)
    try:
        archive = docker.export_path(image_id, site)
    except FatalError as exc:
        return GateCheck("series", command, 1, exc.message, "host")
    with tempfile.TemporaryDirectory(prefix="forktool-site-") as tmp:
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        target = Path(tmp) / PurePosixPath(site).name
        # patchless: the FULL series must apply exactly (nothing applied, base intact);
        # otherwise the arm's series must reverse-apply exactly, newest first.
        checked = fork if arm.name == PATCHLESS else replace(fork, patches=arm_patches(fork, arm))
        result = apply_to_directory(
            checked,
            target,
            mode="apply" if arm.name == PATCHLESS else "verify",
            dry_run=True,
        )
    lines = [
        f"{v.patch}: {v.status}" + (f" ({v.message})" if v.message else "") for v in result.patches
    ]
    lines.append(("OK: " if result.ok else "FAILED: ") + (result.message or "series checked"))
    return GateCheck("series", command, 0 if result.ok else 1, "\n".join(lines), "host")


def _fork_files_for_image(fork: Fork, arm: Arm) -> bytes:
    """The arm's series, patches and map, plus a minimal forktool.yaml, for put_archive."""
    patches = fork.patches if arm.name == PATCHLESS else arm_patches(fork, arm)
    series = fork.series
    umap = fork.upstream_map
    for patch in fork.patches:
        if patch not in patches:
            series, umap = series.without(patch.name), umap.without(patch.name)
    prefix = IN_IMAGE_FORK.lstrip("/")
    config = (
        f"pin:\n  tag: {json.dumps(fork.config.pin_tag)}\n  commit: {fork.config.pin_commit}\n"
        "series: series\npatches: patches\nupstream_map: upstream.map\n"
    )
    files = {
        f"{prefix}/forktool.yaml": config.encode(),
        f"{prefix}/series": series.to_bytes(),
        f"{prefix}/upstream.map": umap.to_bytes(),
    }
    for patch in patches:
        files[f"{prefix}/patches/{patch.name}"] = patch.data
    return tar_files(files)


# -- promote ---------------------------------------------------------------------------


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
        }


def load_record(path: Path, shown: str) -> dict[str, object] | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_bytes())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FatalError(f"{shown}: not a valid gate record: {exc}") from exc
    if not isinstance(data, dict):
        raise FatalError(f"{shown}: not a valid gate record")
    return data


def promotion_path(config: Config, tag: str) -> Path:
    return config.file(require_image_settings(config).records) / f"promoted-{tag}.json"


def promote_candidate(
    config: Config, docker: DockerEngine, ref: str, tag: str, *, latest: bool
) -> PromoteResult:
    settings = require_image_settings(config)
    docker_tag(tag, "--tag")
    if tag == "latest" or "-cand-" in tag:
        raise FatalError(
            f"--tag {tag}: name the release (e.g. the pin tag)", "use --latest for :latest"
        )
    info = candidate_image(docker, ref)
    tags = (tag, "latest") if latest else (tag,)
    path = record_path(config, info.id)
    shown = config.rel(path)

    def refuse(message: str) -> PromoteResult:
        return PromoteResult(
            ref, info.id, settings.repository, tags, False, None, message, shown, info.labels
        )

    record = load_record(path, shown)
    if record is None:
        return refuse(f"{info.id} has no gate record ({shown}); run 'forktool image gate {ref}'")
    if record.get("digest") != info.id or not _IMAGE_ID.match(info.id):
        return refuse(f"{shown} records {record.get('digest')}, not {info.id}")
    commands = _commands(record)
    failed = [_shown(c) for c in commands if c.get("ok") is not True]
    if record.get("ok") is not True or failed or not commands:
        return refuse(f"the gate failed for {info.id}: {'; '.join(failed) or 'no passing checks'}")
    if not any(c.get("kind") == "series" for c in commands):
        return refuse(f"{shown} has no series check: re-run 'forktool image gate {ref}'")
    if info.labels.get(L_ARM) != FULL:
        return refuse(f"{ref} is the {info.labels.get(L_ARM)} arm: arms are probes, never releases")
    existing = docker.registry_digest(settings.repository, tag)
    image_digest = _digest_in(info, settings.repository)
    if existing is not None and existing != image_digest:
        return refuse(
            f"{settings.repository}:{tag} already names {existing}, not this candidate "
            f"({image_digest or info.id}); a release tag is never moved"
        )
    digest: str | None = None
    for name in tags:
        docker.tag(info.id, settings.repository, name)
        pushed = docker.push(settings.repository, name)
        if pushed.digest is None:
            return refuse(f"push of {settings.repository}:{name} failed: {pushed.error}")
        remote = docker.registry_digest(settings.repository, name)
        if remote != pushed.digest or (digest is not None and pushed.digest != digest):
            return refuse(
                f"the registry reports {remote} for {settings.repository}:{name}, "
                f"but the push acknowledged {pushed.digest}"
            )
        digest = pushed.digest
    after = docker.image(info.id)
    if after is None or after.id != info.id:
        return refuse(f"{info.id} changed under us during promotion")
    result = PromoteResult(
        ref,
        info.id,
        settings.repository,
        tags,
        True,
        digest,
        f"{settings.repository}@{digest}",
        shown,
        info.labels,
    )
    promo = {**result.to_json(), "time": now()}
    atomic_write(promotion_path(config, tag), (json.dumps(promo, indent=2) + "\n").encode())
    return result


def _commands(record: Mapping[str, object]) -> list[dict[str, object]]:
    commands = record.get("commands")
    if not isinstance(commands, list):
        return []
    return [c for c in commands if isinstance(c, dict)]


def _shown(check: Mapping[str, object]) -> str:
    command = check.get("command")
    words = [str(word) for word in command] if isinstance(command, list) else []
    return f"{' '.join(words)} (exit {check.get('exit_code')})"


def _digest_in(info: ImageInfo, repository: str) -> str | None:
    for item in info.repo_digests:
        name, _, digest = item.rpartition("@")
        if name == repository:
            return digest
    return None
