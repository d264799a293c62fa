"""Images: candidate builds and the gate.

Two lessons shape this module. A push that rebuilt the image republished the
release tag without any gate, and promotion by rebuilding publishes a look-alike
the gate never saw. So a build only ever makes a *candidate*
(``<repository>:<tag>-cand-<sha7>``); the gate runs in that exact image and writes
a record keyed by its image id and bound to what produced it (the committed
configuration, the patch set, forktool's version); promotion
(:mod:`forktool.engine.image.promote`) re-derives every binding. Nothing here rebuilds.

Builds and gates use the fork's committed tree (``git archive``), never the
working tree. The series check never trusts the image: the site is copied out
and forktool's own strict engine judges it on the host."""

from __future__ import annotations

import io
import os
import re
import shutil
import tarfile
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from forktool.config import Config, ImageSettings, load_config
from forktool.docker_client import DockerEngine
from forktool.engine.apply.arms import FULL, Arm, arm_patches, patchset_hash
from forktool.errors import FatalError, some_names
from forktool.fork import Fork, load_fork
from forktool.fsutil import pid_alive
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
        raise FatalError(
            f"uncommitted changes to the fork's files: {some_names(changed)}",
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
    from forktool.engine.apply.arms import choose_arm

    require_image_settings(config)
    revision = git.require_commit("HEAD", what="fork revision (HEAD)")
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
