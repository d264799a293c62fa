"""The one place that talks to a Docker engine.

Like :mod:`forktool.git` for git: the image engine asks typed questions through
the small :class:`DockerEngine` protocol, and :class:`SdkEngine` answers them with
the docker SDK. Unit tests hand the engine a fake that implements the protocol.
Every container forktool starts runs with networking disabled.
"""

from __future__ import annotations

import io
import os
import tarfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from forktool.errors import FatalError

RUN_TIMEOUT_SECONDS = 600
OUTPUT_TAIL_LINES = 40


@dataclass(frozen=True)
class ImageInfo:
    id: str  # sha256:<64 hex>, the image (config) digest
    labels: dict[str, str]
    repo_tags: tuple[str, ...] = ()
    repo_digests: tuple[str, ...] = ()  # repository@sha256:<manifest digest>


@dataclass(frozen=True)
class BuildOutcome:
    image_id: str | None  # None when the build failed
    log: tuple[str, ...]
    error: str = ""


@dataclass(frozen=True)
class RunOutcome:
    exit_code: int  # 127: the command was not found in the image
    output: str


@dataclass(frozen=True)
class PushOutcome:
    digest: str | None  # the manifest digest the registry acknowledged
    error: str = ""
    log: tuple[str, ...] = field(default=())


class DockerEngine(Protocol):
    def describe(self) -> str: ...

    def build(
        self,
        context: Path,
        dockerfile: str,
        buildargs: Mapping[str, str],
        labels: Mapping[str, str],
        tag: str,
    ) -> BuildOutcome: ...

    def image(self, ref: str) -> ImageInfo | None: ...

    def run(self, image: str, command: Sequence[str], files: bytes | None = None) -> RunOutcome: ...

    def export_path(self, image: str, path: str) -> bytes: ...

    def tag(self, image_id: str, repository: str, tag: str) -> None: ...

    def push(self, repository: str, tag: str) -> PushOutcome: ...

    def registry_digest(self, repository: str, tag: str) -> str | None: ...


def tail(text: str, lines: int = OUTPUT_TAIL_LINES) -> str:
    return "\n".join(text.splitlines()[-lines:])


class SdkEngine:
    """:class:`DockerEngine` on the docker SDK (DOCKER_HOST, or the default socket)."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def describe(self) -> str:
        return str(self.client.api.base_url)

    def build(
        self,
        context: Path,
        dockerfile: str,
        buildargs: Mapping[str, str],
        labels: Mapping[str, str],
        tag: str,
    ) -> BuildOutcome:
        from docker.errors import APIError

        log: list[str] = []
        image_id: str | None = None
        try:
            stream = self.client.api.build(
                path=str(context),
                dockerfile=dockerfile,
                buildargs=dict(buildargs),
                labels=dict(labels),
                tag=tag,
                rm=True,
                forcerm=True,
                pull=False,
                network_mode="none",
                decode=True,
            )
            for chunk in stream:
                if "stream" in chunk:
                    log.extend(str(chunk["stream"]).rstrip("\n").splitlines())
                if "error" in chunk:
                    return BuildOutcome(None, tuple(log), str(chunk["error"]).strip())
                aux = chunk.get("aux")
                if isinstance(aux, dict) and "ID" in aux:
                    image_id = str(aux["ID"])
        except APIError as exc:
            return BuildOutcome(None, tuple(log), _api_message(exc))
        if image_id is None:
            info = self.image(tag)
            image_id = info.id if info else None
        if image_id is None:
            return BuildOutcome(None, tuple(log), "the engine reported no image id")
        return BuildOutcome(image_id, tuple(log))

    def image(self, ref: str) -> ImageInfo | None:
        from docker.errors import ImageNotFound, NotFound

        try:
            attrs = self.client.api.inspect_image(ref)
        except (ImageNotFound, NotFound):
            return None
        config = attrs.get("Config") or {}
        return ImageInfo(
            id=str(attrs["Id"]),
            labels=dict(config.get("Labels") or {}),
            repo_tags=tuple(attrs.get("RepoTags") or ()),
            repo_digests=tuple(attrs.get("RepoDigests") or ()),
        )

    def run(self, image: str, command: Sequence[str], files: bytes | None = None) -> RunOutcome:
        from docker.errors import APIError

        try:
            container = self.client.containers.create(
                image, command=list(command), network_mode="none", detach=True
            )
        except APIError as exc:
            return RunOutcome(127 if _not_found(exc) else 125, _api_message(exc))
        try:
            if files is not None:
                container.put_archive("/", files)
            try:
                container.start()
            except APIError as exc:
                return RunOutcome(127 if _not_found(exc) else 126, _api_message(exc))
            try:
                status = container.wait(timeout=RUN_TIMEOUT_SECONDS)
            except Exception:  # the SDK raises the transport's timeout error
                container.kill()
                return RunOutcome(124, f"timed out after {RUN_TIMEOUT_SECONDS} s")
            output = container.logs(stdout=True, stderr=True).decode("utf-8", "replace")
            return RunOutcome(int(status.get("StatusCode", 1)), output)
        finally:
            container.remove(force=True)

    def export_path(self, image: str, path: str) -> bytes:
        from docker.errors import APIError, NotFound

        container = self.client.containers.create(image, command=["true"], network_mode="none")
        try:
            stream, _stat = container.get_archive(path)
            return b"".join(stream)
        except NotFound as exc:
            raise FatalError(f"{image}: the image has no {path}") from exc
        except APIError as exc:
            raise FatalError(f"could not read {path} from {image}: {_api_message(exc)}") from exc
        finally:
            container.remove(force=True)

    def tag(self, image_id: str, repository: str, tag: str) -> None:
        if not self.client.api.tag(image_id, repository, tag, force=True):
            raise FatalError(f"the engine refused to tag {image_id} as {repository}:{tag}")

    def push(self, repository: str, tag: str) -> PushOutcome:
        from docker.errors import APIError

        log: list[str] = []
        digest: str | None = None
        try:
            for chunk in self.client.api.push(repository, tag=tag, stream=True, decode=True):
                if "error" in chunk:
                    return PushOutcome(None, str(chunk["error"]).strip(), tuple(log))
                if "status" in chunk:
                    log.append(str(chunk["status"]))
                aux = chunk.get("aux")
                if isinstance(aux, dict) and "Digest" in aux:
                    digest = str(aux["Digest"])
        except APIError as exc:
            return PushOutcome(None, _api_message(exc), tuple(log))
        return PushOutcome(digest, "" if digest else "the registry acknowledged no digest")

    def registry_digest(self, repository: str, tag: str) -> str | None:
        from docker.errors import APIError, NotFound

        try:
            data = self.client.images.get_registry_data(f"{repository}:{tag}")
        except NotFound:
            return None
        except APIError as exc:
            if exc.status_code in (401, 404) or "manifest unknown" in str(exc):
                return None
            raise FatalError(
                f"could not ask the registry for {repository}:{tag}: {_api_message(exc)}"
            ) from exc
        return str(data.id)


def _api_message(exc: Exception) -> str:
    explanation = getattr(exc, "explanation", None)
    return str(explanation or exc).strip()


def _not_found(exc: Exception) -> bool:
    text = _api_message(exc)
    return "executable file not found" in text or "no such file or directory" in text


def connect() -> SdkEngine:
    """The engine DOCKER_HOST (or the default socket) names, or exit 2 saying why not."""
    from docker.errors import DockerException

    import docker

    where = os.environ.get("DOCKER_HOST") or "the default socket"
    try:
        client = docker.from_env(timeout=RUN_TIMEOUT_SECONDS)
        client.ping()
    except DockerException as exc:
        raise FatalError(
            f"no Docker engine answers at {where}: {str(exc).splitlines()[0]}",
            'start one (eval "$(scripts/docker-up.sh)") or set DOCKER_HOST',
        ) from exc
    return SdkEngine(client)


def tar_files(files: Mapping[str, bytes]) -> bytes:
    """A tar archive of ``files`` (relative paths -> bytes), for put_archive."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        dirs: set[str] = set()
        for name in sorted(files):
            for parent in _parents(name):
                if parent not in dirs:
                    dirs.add(parent)
                    info = tarfile.TarInfo(parent)
                    info.type = tarfile.DIRTYPE
                    info.mode = 0o755
                    tar.addfile(info)
            info = tarfile.TarInfo(name)
            info.size = len(files[name])
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(files[name]))
    return buffer.getvalue()


def _parents(name: str) -> Iterator[str]:
    parts = name.split("/")[:-1]
    for i in range(1, len(parts) + 1):
        yield "/".join(parts[:i])
