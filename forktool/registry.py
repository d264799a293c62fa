"""The registry's own answer: manifests fetched and tagged over the distribution API.

``image promote`` must not take the engine's word for what it pushed: it fetches
the manifest by digest from the registry and reads ``config.digest`` (the image
id), and it names the release by putting that same manifest under the release
tag on the registry, so no local tag (which any process can move) is involved.
"""

from __future__ import annotations

import hashlib
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

from forktool.errors import FatalError

MANIFEST_TYPES = (
    "application/vnd.docker.distribution.manifest.v2+json",
    "application/vnd.oci.image.manifest.v1+json",
)
_CHALLENGE = re.compile(r'(\w+)="([^"]*)"')


@dataclass(frozen=True)
class Manifest:
    digest: str  # sha256 of the manifest bytes, as the registry names it
    media_type: str
    body: bytes
    config_digest: str  # the image id the manifest describes


def split_repository(repository: str) -> tuple[str, str]:
    """``host[:port]/name`` -> (registry address, name); Docker Hub for a bare name."""
    first, sep, rest = repository.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return first, rest
    name = repository if "/" in repository else f"library/{repository}"
    return "registry-1.docker.io", name


def base_url(address: str) -> str:
    host = address if address.endswith("]") else address.rsplit(":", 1)[0]
    local = host in ("localhost", "[::1]") or host.startswith("127.")
    return f"{'http' if local else 'https'}://{address}"


class RegistryClient:
    """Anonymous (or anonymous-token) access to one registry, with a short timeout."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._tokens: dict[str, str] = {}

    def manifest(self, repository: str, reference: str) -> Manifest | None:
        address, name = split_repository(repository)
        url = f"{base_url(address)}/v2/{name}/manifests/{reference}"
        status, headers, body = self._call("GET", url, repository, None, {})
        if status == 404:
            return None
        if status != 200:
            raise FatalError(f"the registry answered {status} for {repository}:{reference}")
        digest = "sha256:" + hashlib.sha256(body).hexdigest()
        media_type = headers.get("Content-Type", "").split(";")[0].strip()
        try:
            data = json.loads(body)
            config = data["config"]["digest"]
        except (ValueError, KeyError, TypeError) as exc:
            raise FatalError(
                f"{repository}@{digest} is not a single-image manifest ({media_type})"
            ) from exc
        return Manifest(digest, media_type or str(data.get("mediaType", "")), body, str(config))

    def put_manifest(self, repository: str, tag: str, manifest: Manifest) -> str:
        """Name ``manifest`` (already in the registry) as ``tag``; the digest it answers."""
        address, name = split_repository(repository)
        url = f"{base_url(address)}/v2/{name}/manifests/{tag}"
        headers = {"Content-Type": manifest.media_type}
        status, answer, body = self._call("PUT", url, repository, manifest.body, headers)
        if status not in (200, 201):
            text = body.decode("utf-8", "replace").strip().splitlines()
            raise FatalError(
                f"the registry refused to tag {repository}:{tag}: {status} "
                + (text[0] if text else "")
            )
        return answer.get("Docker-Content-Digest", manifest.digest)

    def _call(
        self, method: str, url: str, repository: str, data: bytes | None, headers: dict[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        headers = {"Accept": ", ".join(MANIFEST_TYPES), **headers}
        for attempt in range(2):
            token = self._tokens.get(repository)
            if token:
                headers["Authorization"] = f"Bearer {token}"
            request = urllib.request.Request(url, data=data, headers=headers, method=method)
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    return response.status, dict(response.headers), response.read()
            except urllib.error.HTTPError as exc:
                challenge = exc.headers.get("WWW-Authenticate", "")
                if exc.code == 401 and attempt == 0 and challenge.startswith("Bearer "):
                    self._tokens[repository] = self._token(challenge)
                    continue
                return exc.code, dict(exc.headers), exc.read()
            except (urllib.error.URLError, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                raise FatalError(
                    f"no registry answers at {urllib.parse.urlsplit(url).netloc}: {reason}"
                ) from exc
        raise FatalError(f"the registry refused anonymous access to {repository}")

    def _token(self, challenge: str) -> str:
        fields = dict(_CHALLENGE.findall(challenge))
        realm = fields.pop("realm", "")
        if not realm.startswith("https://"):
            raise FatalError(f"the registry asks for a token from '{realm}', which is not https")
        url = f"{realm}?{urllib.parse.urlencode(fields)}"
        try:
            with urllib.request.urlopen(url, timeout=self.timeout) as response:
                data = json.loads(response.read())
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise FatalError(f"could not get a registry token from {realm}: {exc}") from exc
        return str(data.get("token") or data.get("access_token") or "")
