"""Images: candidate builds and the gate.

Two lessons shape this module. A push that rebuilt the image republished the
release tag without any gate, and promotion by rebuilding publishes a look-alike
the gate never saw. So a build only ever makes a *candidate*
(``<repository>:<tag>-cand-<sha7>``); the gate runs in that exact image and writes
a record keyed by its image id and bound to what produced it (the committed
configuration, the patch set, forktool's version); promotion
(:mod:`forktool.engine.promote`) re-derives every binding. Nothing here rebuilds.

Builds and gates use the fork's committed tree (``git archive``), never the
working tree. The series check never trusts the image: the site is copied out
and forktool's own strict engine judges it on the host.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import tarfile
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from forktool import __version__
from forktool.config import Config, ImageSettings, load_config
from forktool.docker_client import DockerEngine, ImageInfo, pid_alive, tail
from forktool.engine import Progress
from forktool.engine.apply_target import apply_mode, apply_to_directory
from forktool.engine.arms import FULL, PATCHLESS, Arm, arm_named, arm_patches, patchset_hash
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
RECORD_FORMAT = 2
FAILING_LINES = 30
TEMP_KINDS = ("image", "site")
_DOCKER_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_TEMP_NAME = re.compile(r"forktool-(?:image|site)-(\d+)-")


def require_image_settings(config: Config) -> ImageSettings:
    if config.image is None:
        raise FatalError(
            f"{config.rel(config.path)} has no image: block",
            "add image: {repository: ..., dockerfile: ...} (see docs/images.md)",
        )
    return config.image


def docker_tag(text: str, what: str) -> str:
    if not _DOCKER_TAG.fullmatch(text):
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


# -- temporary directories and containers a killed run left -----------------------


def temp_prefix(kind: str) -> str:
    """``forktool-<kind>-<pid>-``: the owner's pid, so the next run can tell it is gone."""
    return f"forktool-{kind}-{os.getpid()}-"


def clean_leftovers(docker: DockerEngine, scope: str) -> list[str]:
    """Remove what a forktool run killed with SIGKILL left; one message for each.

    Containers: those of this host and ``scope`` (the image repository) whose owner
    process is gone. Temporary directories: any whose owner process is gone.
    """
    messages = []
    for item in docker.leftovers(scope):
        docker.remove_container(item.id)
        messages.append(
            f"removed container {item.id[:12]} ({item.image}) left by a forktool run "
            f"that is gone (pid {item.pid})"
        )
    root = Path(tempfile.gettempdir())
    for kind in TEMP_KINDS:
        for path in sorted(root.glob(f"forktool-{kind}-*")):
            match = _TEMP_NAME.match(path.name)
            if match and path.is_dir() and not pid_alive(int(match.group(1))):
                shutil.rmtree(path, ignore_errors=True)
                messages.append(
                    f"removed {path} left by a forktool run that is gone (pid {match.group(1)})"
                )
    return messages


# -- the fork as committed -------------------------------------------------------------


def config_in_repository(git: Git, config: Config) -> str:
    """forktool.yaml's path from the top of the repository."""
    top = git.toplevel().resolve()
    try:
        return config.path.resolve().relative_to(top).as_posix()
    except ValueError as exc:
        raise FatalError(f"{config.path} is outside the repository {top}") from exc


@contextmanager
def fork_at(git: Git, config: Config, revision: str) -> Iterator[Fork]:
    """The fork's files as committed at ``revision``, in a temporary directory."""
    config_rel = config_in_repository(git, config)
    tmp = Path(tempfile.mkdtemp(prefix=temp_prefix("image")))
    try:
        _extract_committed(git.archive(revision), tmp / "src", revision)
        copy = tmp / "src" / config_rel
        if not copy.is_file():
            raise FatalError(
                f"{config_rel} is not committed at {revision[:12]}",
                "commit the fork's files: builds use the committed tree, not the working tree",
            )
        yield load_fork(load_config(copy), strict=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _extract_committed(archive: bytes, dest: Path, revision: str) -> None:
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for member in tar.getmembers():
            try:
                tarfile.data_filter(member, str(dest))
            except tarfile.FilterError as exc:
                link = f" -> {member.linkname}" if member.issym() or member.islnk() else ""
                raise FatalError(
                    f"{member.name}{link}: a committed link at {revision[:12]} points outside "
                    "the repository",
                    "builds and gates copy the committed tree: make the link relative and "
                    "inside the repository, or remove it",
                ) from exc
        tar.extractall(dest, filter="data")


def committed_config_blob(git: Git, config: Config, revision: str) -> str:
    rel = config_in_repository(git, config)
    blob = git.blob_id(revision, rel)
    if blob is None:
        raise FatalError(f"{rel} is not committed at {revision[:12]}")
    return blob


def require_committed(git: Git, config: Config) -> None:
    """Refuse when the fork's files differ from HEAD: a gate judges committed configuration."""
    top = git.toplevel().resolve()
    paths = [config.path, config.series_path, config.patches_dir, config.map_path]
    settings = config.image
    if settings is not None:
        paths += [config.file(settings.context), config.file(settings.dockerfile)]
        if settings.waivers is not None:
            paths.append(config.file(settings.waivers))
    specs = [_from_top(path, top) for path in paths]
    exclude = [_from_top(config.file(settings.records), top)] if settings else []
    changed = git.uncommitted(sorted(set(specs)), exclude)
    if changed:
        shown = ", ".join(changed[:5]) + (
            f" and {len(changed) - 5} more" if len(changed) > 5 else ""
        )
        raise FatalError(
            f"uncommitted changes to the fork's files: {shown}",
            "commit or stash them: the gate judges committed configuration only",
        )


def _from_top(path: Path, top: Path) -> str:
    try:
        return Path(os.path.normpath(path)).relative_to(top).as_posix()
    except ValueError:
        return "."


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

    require_image_settings(config)
    revision = git.resolve_commit("HEAD", what="fork revision (HEAD)")
    with fork_at(git, config, revision) as fork:
        settings = require_image_settings(fork.config)
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
    root = fork.config.root.resolve()
    context = (root / settings.context).resolve()
    dockerfile = (root / settings.dockerfile).resolve()
    for key, path in (("context", context), ("dockerfile", dockerfile)):
        if not path.is_relative_to(root):
            raise FatalError(
                f"image.{key} '{getattr(settings, key)}' leads outside the fork through a link"
            )
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
    if git.try_resolve(revision) != revision:
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
