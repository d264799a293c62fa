"""The one place that talks to a Docker engine.

Like :mod:`forktool.git` for git: the image engine asks typed questions through
the small :class:`DockerEngine` protocol, and :class:`SdkEngine` answers them with
the docker SDK. Unit tests hand the engine a fake that implements the protocol.
Every container forktool starts runs with networking disabled.
"""

from __future__ import annotations

import os
import posixpath
import socket
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from forktool.errors import FatalError
from forktool.fsutil import pid_alive
from forktool.model.text import whole_number
from forktool.registry import Manifest, RegistryClient

DEFAULT_GATE_TIMEOUT = 600
OUTPUT_TAIL_LINES = 40
MAX_LINK_HOPS = 8
# Every container forktool makes carries these labels, so a run killed with
# SIGKILL can be found and cleaned by the next one.
L_OWNER_HOST = "org.forktool.owner-host"
L_OWNER_PID = "org.forktool.owner-pid"
L_OWNER_SCOPE = "org.forktool.owner-scope"  # the image repository the run worked for


def control_timeout() -> int:
    """Seconds a control call (ping, inspect, tag, create, remove) may take:
    ``FORKTOOL_DOCKER_TIMEOUT``, default 30."""
    text = os.environ.get("FORKTOOL_DOCKER_TIMEOUT", "")
    seconds = whole_number(text, 6)
    return seconds if seconds else 30


def owner_labels(scope: str) -> dict[str, str]:
    return {
        L_OWNER_HOST: socket.gethostname(),
        L_OWNER_PID: str(os.getpid()),
        L_OWNER_SCOPE: scope,
    }


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
    exit_code: int  # 127: the command was not found in the image; 124: timed out
    output: str


@dataclass(frozen=True)
class PushOutcome:
    digest: str | None  # the manifest digest the registry acknowledged
    error: str = ""
    log: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class PathArchive:
    path: str  # the directory archived, after following symlinks inside the image
    data: bytes  # a tar whose top entry is basename(path)


@dataclass(frozen=True)
class Leftover:
    id: str
    pid: int
    image: str


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

    def run(self, image: str, command: Sequence[str], timeout: int, scope: str) -> RunOutcome: ...

    def export_path(self, image: str, path: str, scope: str) -> PathArchive: ...

    def tag(self, image_id: str, repository: str, tag: str) -> None: ...

    def untag(self, repository: str, tag: str) -> None: ...

    def push(self, repository: str, tag: str) -> PushOutcome: ...

    def manifest(self, repository: str, reference: str) -> Manifest | None: ...

    def put_manifest(self, repository: str, tag: str, manifest: Manifest) -> str: ...

    def leftovers(self, scope: str) -> list[Leftover]: ...

    def remove_container(self, container_id: str) -> None: ...


def tail(text: str, lines: int = OUTPUT_TAIL_LINES) -> str:
    return "\n".join(text.splitlines()[-lines:])


class SdkEngine:
    """:class:`DockerEngine` on the docker SDK (DOCKER_HOST, or the default socket)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.registry = RegistryClient(control_timeout())

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
        with self._answering("build"):
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
                    timeout=None,  # a RUN step may be silent for long; the ping proved the engine
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
        from docker.errors import APIError, ImageNotFound, NotFound

        with self._answering(f"inspect {ref}"):
            try:
                attrs = self.client.api.inspect_image(ref)
            except (ImageNotFound, NotFound):
                return None
            except APIError as exc:
                raise FatalError(
                    f"the engine cannot read image '{ref}': {_api_message(exc)}"
                ) from exc
        config = attrs.get("Config") or {}
        return ImageInfo(
            id=str(attrs["Id"]),
            labels=dict(config.get("Labels") or {}),
            repo_tags=tuple(attrs.get("RepoTags") or ()),
            repo_digests=tuple(attrs.get("RepoDigests") or ()),
        )

    def run(self, image: str, command: Sequence[str], timeout: int, scope: str) -> RunOutcome:
        from docker.errors import APIError

        with self._answering(f"run {' '.join(command)}"):
            try:
                container = self.client.containers.create(
                    image,
                    command=list(command),
                    network_mode="none",
                    detach=True,
                    labels=owner_labels(scope),
                )
            except APIError as exc:
                return RunOutcome(127 if _not_found(exc) else 125, _api_message(exc))
            try:
                return self._run_created(container, timeout)
            finally:
                self._remove(container.id)

    def _run_created(self, container: Any, timeout: int) -> RunOutcome:
        from docker.errors import APIError

        try:
            container.start()
        except APIError as exc:
            return RunOutcome(127 if _not_found(exc) else 126, _api_message(exc))
        try:
            status = container.wait(timeout=timeout)
        except Exception as exc:
            if not _timed_out(exc):
                raise
            container.kill()
            return RunOutcome(124, f"timed out after {timeout} s (image.gate_timeout)")
        output = container.logs(stdout=True, stderr=True).decode("utf-8", "replace")
        return RunOutcome(int(status.get("StatusCode", 1)), output)

    def export_path(self, image: str, path: str, scope: str) -> PathArchive:
        """``path`` from the image's root (symlinks followed inside that root)."""
        from docker.errors import APIError, NotFound

        with self._answering(f"read {path} from {image}"):
            container = self.client.containers.create(
                image, command=["true"], network_mode="none", labels=owner_labels(scope)
            )
            try:
                for _hop in range(MAX_LINK_HOPS):
                    try:
                        stream, stat = container.get_archive(path)
                    except NotFound as exc:
                        raise FatalError(f"{image}: the image has no {path}") from exc
                    link = str((stat or {}).get("linkTarget") or "")
                    if not link:
                        return PathArchive(path, b"".join(stream))
                    for _chunk in stream:
                        pass
                    path = posixpath.normpath(posixpath.join(posixpath.dirname(path), link))
                raise FatalError(f"{image}: {path} is a chain of more than {MAX_LINK_HOPS} links")
            except APIError as exc:
                raise FatalError(
                    f"could not read {path} from {image}: {_api_message(exc)}"
                ) from exc
            finally:
                self._remove(container.id)

    def tag(self, image_id: str, repository: str, tag: str) -> None:
        with self._answering(f"tag {repository}:{tag}"):
            if not self.client.api.tag(image_id, repository, tag, force=True):
                raise FatalError(f"the engine refused to tag {image_id} as {repository}:{tag}")

    def untag(self, repository: str, tag: str) -> None:
        from docker.errors import APIError, NotFound

        with self._answering(f"untag {repository}:{tag}"):
            try:
                self.client.api.remove_image(f"{repository}:{tag}", noprune=True)
            except NotFound:
                pass
            except APIError as exc:
                raise FatalError(
                    f"could not remove the tag {repository}:{tag}: {_api_message(exc)}"
                ) from exc

    def push(self, repository: str, tag: str) -> PushOutcome:
        from docker.errors import APIError

        log: list[str] = []
        digest: str | None = None
        api = self.client.api
        saved, api.timeout = api.timeout, None  # layers may take long; the ping proved the engine
        try:
            with self._answering(f"push {repository}:{tag}"):
                for chunk in api.push(repository, tag=tag, stream=True, decode=True):
                    if "error" in chunk:
                        return PushOutcome(None, str(chunk["error"]).strip(), tuple(log))
                    if "status" in chunk:
                        log.append(str(chunk["status"]))
                    aux = chunk.get("aux")
                    if isinstance(aux, dict) and "Digest" in aux:
                        digest = str(aux["Digest"])
        except APIError as exc:
            return PushOutcome(None, _api_message(exc), tuple(log))
        finally:
            api.timeout = saved
        return PushOutcome(digest, "" if digest else "the registry acknowledged no digest")

    def manifest(self, repository: str, reference: str) -> Manifest | None:
        return self.registry.manifest(repository, reference)

    def put_manifest(self, repository: str, tag: str, manifest: Manifest) -> str:
        return self.registry.put_manifest(repository, tag, manifest)

    def leftovers(self, scope: str) -> list[Leftover]:
        """Containers forktool runs on this host made for ``scope`` and that outlived
        their run."""
        host = socket.gethostname()
        wanted = [f"{L_OWNER_HOST}={host}", f"{L_OWNER_SCOPE}={scope}"]
        with self._answering("list containers"):
            found = self.client.api.containers(all=True, filters={"label": wanted})
        out = []
        for item in found:
            labels = item.get("Labels") or {}
            pid = labels.get(L_OWNER_PID, "")
            if pid.isdigit() and not pid_alive(int(pid)):
                out.append(Leftover(str(item["Id"]), int(pid), str(item.get("Image", ""))))
        return out

    def remove_container(self, container_id: str) -> None:
        with self._answering(f"remove container {container_id[:12]}"):
            self._remove(container_id)

    def _remove(self, container_id: str) -> None:
        from docker.errors import NotFound

        try:
            self.client.api.remove_container(container_id, force=True)
        except NotFound:
            pass

    @contextmanager
    def _answering(self, what: str) -> Iterator[None]:
        """The engine's transport failures as one exit-2 line, never a traceback."""
        import requests
        from docker.errors import APIError, DockerException

        try:
            yield
        except (APIError, FatalError):
            raise
        except (requests.exceptions.RequestException, DockerException) as exc:
            kind = "did not answer in time" if _timed_out(exc) else "stopped answering"
            raise FatalError(
                f"the Docker engine at {self.describe()} {kind} ({what}): {_first_line(exc)}",
                "check the engine (docker info); containers forktool started are removed "
                "by its next run",
            ) from exc


def _timed_out(exc: BaseException) -> bool:
    import requests

    if isinstance(exc, requests.exceptions.Timeout):
        return True
    return "timed out" in str(exc).lower()


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _api_message(exc: Exception) -> str:
    explanation = getattr(exc, "explanation", None)
    return str(explanation or exc).strip()


def _not_found(exc: Exception) -> bool:
    text = _api_message(exc)
    return "executable file not found" in text or "no such file or directory" in text


def connect() -> SdkEngine:
    """The engine DOCKER_HOST (or the default socket) names, or exit 2 saying why not."""
    import requests
    from docker.errors import DockerException

    import docker

    where = os.environ.get("DOCKER_HOST") or "the default socket"
    try:
        client = docker.from_env(timeout=control_timeout())
        client.ping()
    except (DockerException, requests.exceptions.RequestException) as exc:
        raise FatalError(
            f"no Docker engine answers at {where}: {_first_line(exc)}",
            'start one (eval "$(scripts/docker-up.sh)") or set DOCKER_HOST',
        ) from exc
    return SdkEngine(client)
