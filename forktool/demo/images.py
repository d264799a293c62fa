"""Offline base images for the demo and the image tests.

No registry can be pulled from here, so the upstream release image is made
locally: a busybox rootfs imported as ``forktool/busybox:1`` (what
``scripts/docker-up.sh`` also imports), then ``pulse:<tag>`` = busybox plus the
demo upstream's ``pulse`` package at ``/opt/pulse/pulse``, as an upstream image
would install it.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from forktool.docker_client import SdkEngine
from forktool.errors import FatalError
from forktool.git import run as run_git

BUSYBOX_IMAGE = os.environ.get("FORKTOOL_BUSYBOX_IMAGE", "forktool/busybox:1")
REGISTRY = os.environ.get("FORKTOOL_REGISTRY", "127.0.0.1:5000")
UPSTREAM_IMAGE = "pulse"


def registry_answers(address: str = REGISTRY) -> bool:
    try:
        with urllib.request.urlopen(f"http://{address}/v2/", timeout=5) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def ensure_busybox_image(engine: SdkEngine) -> str:
    """Import a busybox rootfs as the base image unless it is there already."""
    if engine.image(BUSYBOX_IMAGE) is not None:
        return BUSYBOX_IMAGE
    busybox = shutil.which("busybox")
    if busybox is None:
        raise FatalError(
            "busybox is not installed: the offline base image is a busybox rootfs",
            "apt-get install busybox-static",
        )
    applets = subprocess.run(  # noqa: S603 - fixed argv
        [busybox, "--list"], capture_output=True, check=True, text=True
    ).stdout.split()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, mode in (("bin", 0o755), ("etc", 0o755), ("root", 0o700), ("tmp", 0o1777)):
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, mode
            tar.addfile(info)
        tar.add(busybox, "bin/busybox")
        for applet in applets:
            if applet != "busybox":
                info = tarfile.TarInfo(f"bin/{applet}")
                info.type, info.linkname = tarfile.SYMTYPE, "busybox"
                tar.addfile(info)
        for name, text in (
            ("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n"),
            ("etc/group", "root:x:0:\n"),
        ):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    repository, _, tag = BUSYBOX_IMAGE.rpartition(":")
    engine.client.api.import_image_from_data(
        buffer.getvalue(),
        repository=repository,
        tag=tag,
        changes=["ENV PATH=/bin", 'CMD ["/bin/sh"]'],
    )
    return BUSYBOX_IMAGE


def ensure_upstream_image(engine: SdkEngine, upstream: Path, tag: str) -> str:
    """``pulse:<tag>``: busybox plus the upstream's pulse package at /opt/pulse/pulse."""
    ref = f"{UPSTREAM_IMAGE}:{tag}"
    if engine.image(ref) is not None:
        return ref
    base = ensure_busybox_image(engine)
    archive = run_git(
        ["archive", "--format=tar", tag, "pulse"], cwd=upstream, purpose=f"export pulse {tag}"
    ).stdout
    with tempfile.TemporaryDirectory(prefix="forktool-upstream-image-") as tmp:
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        (Path(tmp) / "Dockerfile").write_text(
            f'FROM {base}\nCOPY pulse /opt/pulse/pulse\nLABEL org.example.upstream="pulse {tag}"\n'
        )
        outcome = engine.build(Path(tmp), "Dockerfile", {}, {}, ref)
    if outcome.image_id is None:
        raise FatalError(f"could not build {ref}: {outcome.error}")
    return ref
