"""The image commands against a real Docker engine and registry (marker: docker).

Start both with ``eval "$(scripts/docker-up.sh)"``; ``.ci/run`` does. The tier
skips only when the engine could not start (``FORKTOOL_DOCKER_SKIP`` carries the
reason) or, outside CI, when no engine answers; in CI an unreachable engine fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from testing.docker_tier import gate_json, repository
from testing.helpers import run_cli

from forktool.builder import RepoBuilder
from forktool.config import load_config
from forktool.docker_client import L_OWNER_PID, SdkEngine
from forktool.engine.apply.arms import patchset_hash
from forktool.fork import load_fork


@pytest.fixture
def fork(docker_fork: RepoBuilder) -> RepoBuilder:
    """This module's fork: the shared ``docker_fork`` (tests/testing/)."""
    return docker_fork


pytestmark = pytest.mark.docker

P1 = "0001-config-do-not-crash-on-an-empty-config-file.patch"


def build(fork: RepoBuilder, *args: str) -> dict[str, object]:
    result = run_cli("-C", fork.path, "image", "build", *args, "--format", "json")
    assert result.code == 0, result.out + result.err
    return result.json()


def test_build_gate_promote_and_pull_by_digest(fork: RepoBuilder, engine: SdkEngine) -> None:
    repo = repository(fork)
    head = fork.rev("HEAD")
    built = build(fork)
    candidate = f"{repo}:v1.1.0-cand-{head[:7]}"
    assert built["candidate"] == candidate
    info = engine.image(candidate)
    assert info is not None and info.id == built["image"]
    loaded = load_fork(load_config(fork.path / "forktool.yaml"))
    assert info.labels["org.forktool.patch-set"] == patchset_hash(loaded.patches)
    assert info.labels["org.forktool.revision"] == head
    assert engine.image(f"{repo}:v1.1.0") is None  # only the candidate is tagged

    gate = run_cli("-C", fork.path, "image", "gate", candidate, "--format", "json")
    assert gate.code == 0, gate.out
    assert [c["exit_code"] for c in gate.json()["commands"]] == [0, 0, 0, 0]  # type: ignore[union-attr]

    promote = run_cli(
        "-C",
        fork.path,
        "image",
        "promote",
        candidate,
        "--tag",
        "v1.1.0",
        "--latest",
        "--format",
        "json",
    )
    assert promote.code == 0, promote.out
    digest = str(promote.json()["digest"])
    for tag in ("v1.1.0", "latest"):
        held = engine.manifest(repo, tag)
        assert held is not None and held.digest == digest and held.config_digest == info.id
    assert engine.image(f"{repo}:v1.1.0") is None  # the release is tagged on the registry only
    assert engine.image(f"{repo}:{promote.json()['pushed_as']}") is None

    pulled = engine.client.images.pull(f"{repo}@{digest}")
    assert pulled.id == info.id
    assert pulled.labels["org.forktool.base-tag"] == "v1.1.0"
    assert pulled.labels["org.forktool.arm"] == "full"
    assert pulled.labels["org.forktool.pin-commit"] == loaded.config.pin_commit


def test_a_failing_gate_is_recorded_and_blocks_promotion(
    fork: RepoBuilder, engine: SdkEngine
) -> None:
    candidate = str(build(fork, "--minus", P1)["candidate"])
    assert candidate.endswith("-minus-0001")
    gate = run_cli("-C", fork.path, "image", "gate", candidate, "--format", "json")
    assert gate.code == 1
    checks = {tuple(c["command"]): c["exit_code"] for c in gate.json()["commands"]}  # type: ignore[union-attr]
    assert checks[("grep", "-q", "if not text.strip():", "/opt/pulse/pulse/config.py")] == 1
    assert checks[("forktool", "apply", "--target", "/opt/pulse", "--verify", "--except", P1)] == 0
    promote = run_cli("-C", fork.path, "image", "promote", candidate, "--tag", "v1.1.0")
    assert promote.code == 1
    assert "the gate failed" in promote.out


def test_promote_refuses_an_ungated_digest(fork: RepoBuilder, engine: SdkEngine) -> None:
    repo = repository(fork)
    candidate = str(build(fork)["candidate"])
    promote = run_cli("-C", fork.path, "image", "promote", candidate, "--tag", "v1.1.0")
    assert promote.code == 1
    assert "has no gate record" in promote.out
    assert engine.manifest(repo, "v1.1.0") is None


def test_a_patch_that_lands_at_an_offset_fails_the_gate(
    fork: RepoBuilder, engine: SdkEngine
) -> None:
    path = fork.path / "patches" / P1
    shifted = path.read_text().replace("@@ -30,6 +30,8 @@", "@@ -27,6 +27,8 @@")
    assert shifted != path.read_text()
    fork.commit("fork: a patch regenerated against another tree\n", {f"patches/{P1}": shifted})
    candidate = str(build(fork)["candidate"])  # busybox patch places hunks by context
    gate = run_cli("-C", fork.path, "image", "gate", candidate, "--format", "json")
    assert gate.code == 1
    series = gate.json()["commands"][-1]  # type: ignore[index]
    assert series["kind"] == "series" and series["exit_code"] == 1
    assert f"{P1}: offset" in series["output"] or f"{P1}: fails" in series["output"]


def test_a_failed_build_shows_the_failing_step(fork: RepoBuilder, engine: SdkEngine) -> None:
    dockerfile = (fork.path / "docker" / "Dockerfile").read_text()
    broken = dockerfile.replace(
        "LABEL org.forktool", "RUN echo 'boom: smoke failed' >&2 && exit 3\nLABEL org.forktool"
    )
    fork.commit("fork: a broken build step\n", {"docker/Dockerfile": broken})
    result = run_cli("-C", fork.path, "image", "build")
    assert result.code == 1
    assert "boom: smoke failed" in result.out
    assert "exit 3" in result.out
    assert engine.image(f"{repository(fork)}:v1.1.0-cand-{fork.rev('HEAD')[:7]}") is None


def test_patchless_arm_passes_the_series_check_on_the_upstream_files(
    fork: RepoBuilder, engine: SdkEngine, tmp_path: Path
) -> None:
    candidate = str(build(fork, "--patchless")["candidate"])
    gate = run_cli("-C", fork.path, "image", "gate", candidate, "--format", "json")
    series = gate.json()["commands"][-1]  # type: ignore[index]
    assert series["command"][-1] == "--dry-run" and series["exit_code"] == 0
    assert gate.code == 1  # its grep smoke check fails: the empty-config fix is absent


# -- issue 14: nothing ungated ships, nothing cancelled lingers -----------------------


def set_image_keys(fork: RepoBuilder, message: str, **keys: str) -> None:
    """Commit forktool.yaml with image.<key> lines replaced (or added after image.site)."""
    text = (fork.path / "forktool.yaml").read_text()
    for key, value in keys.items():
        line = f"  {key}: {value}"
        pattern = re.compile(rf"^  {key}: .*$", re.MULTILINE)
        if found := pattern.search(text):
            text = text[: found.start()] + line + text[found.end() :]
        else:
            text = text.replace("  site: /opt/pulse\n", f"  site: /opt/pulse\n{line}\n")
    fork.commit(message + "\n", {"forktool.yaml": text})


def test_a_hand_written_gate_record_is_not_gated(fork: RepoBuilder, engine: SdkEngine) -> None:
    repo = repository(fork)
    built = build(fork)
    image_id = str(built["image"])
    record = {
        "format": 2,
        "digest": image_id,
        "ok": True,
        "labels": built["labels"],
        "commands": [{"kind": "series", "command": ["true"], "exit_code": 0, "ok": True}],
    }
    path = fork.path / ".forktool/gate-records" / f"{image_id[7:]}.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(record))
    promote = run_cli(
        "-C", fork.path, "image", "promote", str(built["candidate"]), "--tag", "v1.1.0"
    )
    assert promote.code == 1
    assert f"REFUSED: {image_id} is not gated" in promote.out
    assert engine.manifest(repo, "v1.1.0") is None


def test_gate_refuses_uncommitted_changes_and_keeps_the_failing_record(
    fork: RepoBuilder, engine: SdkEngine
) -> None:
    candidate = str(build(fork, "--minus", P1)["candidate"])
    code, failing = gate_json(fork, candidate)
    assert code == 1
    config = fork.path / "forktool.yaml"
    config.write_text(re.sub(r"^  gate: .*$", '  gate: [["true"]]', config.read_text(), flags=re.M))
    result = run_cli("-C", fork.path, "image", "gate", candidate)
    assert result.code == 2
    assert result.error_lines[0] == "error: uncommitted changes to the fork's files: forktool.yaml"
    record = json.loads((fork.path / str(failing["record"])).read_text())
    assert record["ok"] is False and record["commands"] == failing["commands"]


def test_re_promoting_compares_the_registry_manifest_not_local_tags(
    fork: RepoBuilder, engine: SdkEngine
) -> None:
    repo = repository(fork)
    candidate = str(build(fork)["candidate"])
    assert gate_json(fork, candidate)[0] == 0
    first = run_cli(
        "-C", fork.path, "image", "promote", candidate, "--tag", "v1.1.0", "--format", "json"
    )
    assert first.code == 0, first.out
    # Another runner: the image under another local name, no trace of the first push.
    image_id = str(first.json()["image"])
    engine.client.api.tag(image_id, repo, "elsewhere")
    engine.client.api.remove_image(candidate, noprune=True)
    again = run_cli(
        "-C",
        fork.path,
        "image",
        "promote",
        f"{repo}:elsewhere",
        "--tag",
        "v1.1.0",
        "--format",
        "json",
    )
    assert again.code == 0, again.out
    assert again.json()["digest"] == first.json()["digest"]
    assert again.json()["pushed_as"] == ""  # nothing pushed: the registry already has it


def test_freeze_accepts_only_a_digest_a_promotion_of_head_names(
    fork: RepoBuilder, engine: SdkEngine
) -> None:
    candidate = str(build(fork)["candidate"])
    assert gate_json(fork, candidate)[0] == 0
    for bogus in ("sha256:" + "0" * 64, f"{repository(fork)}@sha256:{'1' * 64}"):
        result = run_cli("-C", fork.path, "image", "freeze", "--digest", bogus)
        assert result.code == 2
        assert result.error_lines[0].startswith(f"error: --digest {bogus}: no promotion of")
    promote = run_cli(
        "-C", fork.path, "image", "promote", candidate, "--tag", "v1.1.0", "--format", "json"
    )
    reference = str(promote.json()["reference"])
    frozen = run_cli("-C", fork.path, "image", "freeze", "--digest", reference, "--format", "json")
    assert frozen.code == 0, frozen.err
    assert frozen.json()["values"]["Image-Digest"] == reference  # type: ignore[index]


def test_a_tag_with_a_newline_is_exit_2_in_one_line(fork: RepoBuilder, engine: SdkEngine) -> None:
    candidate = str(build(fork)["candidate"])
    result = run_cli("-C", fork.path, "image", "promote", candidate, "--tag", "v3.0.0\n")
    assert result.code == 2
    assert result.err.count("\n") == 2  # error: and hint:, the newline shown escaped
    assert result.error_lines[0] == "error: --tag 'v3.0.0\\n' is not a valid image tag"


def test_the_gate_timeout_is_configured_and_recorded(fork: RepoBuilder, engine: SdkEngine) -> None:
    set_image_keys(
        fork, "fork: a gate command that hangs", gate='[["sleep", "120"]]', gate_timeout="1"
    )
    code, record = gate_json(fork, str(build(fork)["candidate"]))
    assert code == 1
    assert record["gate_timeout"] == 1
    hung = record["commands"][1]  # type: ignore[index]
    assert hung["exit_code"] == 124 and "timed out after 1 s" in hung["output"]


def test_an_image_site_that_is_a_link_is_followed_inside_the_image(
    fork: RepoBuilder, engine: SdkEngine
) -> None:
    dockerfile = (fork.path / "docker" / "Dockerfile").read_text()
    linked = dockerfile.replace(
        "LABEL org.forktool",
        "RUN ln -s pulse /opt/app && ln -s /etc/passwd /opt/pulse/passwd\nLABEL org.forktool",
    )
    fork.commit("fork: the site through a link\n", {"docker/Dockerfile": linked})
    set_image_keys(fork, "fork: the site through a link", site="/opt/app")
    code, record = gate_json(fork, str(build(fork)["candidate"]))
    series = record["commands"][-1]  # type: ignore[index]
    assert "/opt/app is a link to /opt/pulse in the image" in series["output"]
    assert "not copied: pulse/passwd -> /etc/passwd (it leads outside the site)" in series["output"]
    assert series["exit_code"] == 0, series["output"]
    assert code == 0


def test_a_committed_link_out_of_the_repository_is_exit_2(
    fork: RepoBuilder, engine: SdkEngine
) -> None:
    (fork.path / "docker" / "hosts").symlink_to("/etc/hosts")
    fork.git.run(["add", "docker/hosts"], purpose="add")
    fork.git.run(["commit", "-qm", "fork: a link out"], purpose="commit")
    result = run_cli("-C", fork.path, "image", "build")
    assert result.code == 2
    assert result.error_lines[0].startswith("error: docker/hosts -> /etc/hosts: a committed link")


def test_build_output_is_escaped(fork: RepoBuilder, engine: SdkEngine) -> None:
    dockerfile = (fork.path / "docker" / "Dockerfile").read_text()
    broken = dockerfile.replace(
        "LABEL org.forktool",
        "RUN printf '\\033]0;owned\\007\\033[31mred\\n' && exit 3\nLABEL org.forktool",
    )
    fork.commit("fork: a noisy failing step\n", {"docker/Dockerfile": broken})
    result = run_cli("-C", fork.path, "image", "build")
    assert result.code == 1
    assert "\x1b" not in result.out and "\x07" not in result.out
    assert "\\x1b]0;owned\\x07\\x1b[31mred" in result.out


def labelled(engine: SdkEngine, pid: int) -> list[dict[str, object]]:
    return list(engine.client.api.containers(all=True, filters={"label": f"{L_OWNER_PID}={pid}"}))


def start_gate(fork: RepoBuilder, engine: SdkEngine, tmp: Path) -> subprocess.Popen[str]:
    """``forktool image gate`` in a child process (temporary files under ``tmp``, so no
    other test's leftover sweep sees them), returned once its gate container runs."""
    set_image_keys(fork, "fork: a gate command that takes long", gate='[["sleep", "300"]]')
    candidate = str(build(fork)["candidate"])
    child = subprocess.Popen(
        [sys.executable, "-m", "forktool", "-C", str(fork.path), "image", "gate", candidate],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp)},
    )
    while not any(c.get("State") == "running" for c in labelled(engine, child.pid)):
        assert child.poll() is None, child.communicate()
        time.sleep(0.1)
    return child


def own_temp_dirs(tmp: Path, pid: int) -> list[Path]:
    return sorted(tmp.glob(f"forktool-*-{pid}-*"))


def test_sigterm_during_the_gate_removes_its_container_and_temp_dirs(
    fork: RepoBuilder, engine: SdkEngine, tmp_path: Path
) -> None:
    child = start_gate(fork, engine, tmp_path)
    assert own_temp_dirs(tmp_path, child.pid)
    child.send_signal(signal.SIGTERM)
    _out, err = child.communicate(timeout=120)
    assert child.returncode == 130, err
    assert "error: interrupted" in err
    assert labelled(engine, child.pid) == []
    assert own_temp_dirs(tmp_path, child.pid) == []


def test_the_next_run_removes_what_a_sigkill_left_with_a_notice(
    fork: RepoBuilder, engine: SdkEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    child = start_gate(fork, engine, tmp_path)
    child.kill()
    child.communicate(timeout=60)
    (left,) = labelled(engine, child.pid)
    assert own_temp_dirs(tmp_path, child.pid)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    result = run_cli("-C", fork.path, "image", "build")
    assert result.code == 0, result.err
    notices = [line for line in result.err.splitlines() if line.startswith("notice: ")]
    assert f"notice: removed container {str(left['Id'])[:12]}" in "\n".join(notices)
    assert any(f"(pid {child.pid})" in line and "forktool-image-" in line for line in notices)
    assert labelled(engine, child.pid) == []
    assert own_temp_dirs(tmp_path, child.pid) == []


class _DropOnWait(threading.Thread):
    """A proxy to the engine's socket that hangs up once the client waits on a container:
    the engine stopping mid-gate, as the client sees it."""

    def __init__(self, upstream: str, path: Path) -> None:
        super().__init__(daemon=True)
        self.upstream = upstream
        self.server = socket.socket(socket.AF_UNIX)
        self.server.bind(str(path))
        self.server.listen(16)

    def run(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(client,), daemon=True).start()

    def serve(self, client: socket.socket) -> None:
        engine = socket.socket(socket.AF_UNIX)
        engine.connect(self.upstream)
        pump = threading.Thread(target=self.pump, args=(engine, client), daemon=True)
        pump.start()
        try:
            while data := client.recv(65536):
                if b"/wait" in data.split(b"\r\n", 1)[0]:
                    break
                engine.sendall(data)
        except OSError:
            pass
        for sock in (client, engine):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    @staticmethod
    def pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass


def test_an_engine_that_stops_mid_gate_is_exit_2_in_one_line(
    fork: RepoBuilder, engine: SdkEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_image_keys(fork, "fork: a gate command that takes long", gate='[["sleep", "300"]]')
    candidate = str(build(fork)["candidate"])
    proxy = _DropOnWait(os.environ["DOCKER_HOST"].removeprefix("unix://"), tmp_path / "e.sock")
    proxy.start()
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'e.sock'}")
    try:
        result = run_cli("-C", fork.path, "image", "gate", candidate)
    finally:
        proxy.server.close()
        for item in labelled(engine, os.getpid()):
            engine.client.api.remove_container(item["Id"], force=True)
    assert result.code == 2
    assert len(result.error_lines) == 2, result.err
    assert result.error_lines[0].startswith("error: the Docker engine at ")
    assert "stopped answering (run sleep 300)" in result.error_lines[0]
