"""Image commands against a fake Docker engine: tagging, labels, records, refusals.

Git and the apply engine are real; only the Docker engine is faked, at the
:class:`forktool.docker_client.DockerEngine` boundary.
"""

from __future__ import annotations

import importlib
import json
import os
import socket
import tempfile
from pathlib import Path

import pytest
from testing.helpers import run_cli, snapshot_tree
from testing.image_fakes import REPO, FakeEngine, identity, site_with

from forktool.builder import RepoBuilder
from forktool.config import load_config
from forktool.demo import DemoUpstream
from forktool.docker_client import (
    ImageInfo,
    Leftover,
)
from forktool.engine.apply.arms import patchset_hash
from forktool.fork import load_fork
from forktool.git import run as run_git
from forktool.registry import Manifest

P1 = "0001-config-do-not-crash-on-an-empty-config-file.patch"
P2 = "0002-engine-retry-on-timeout.patch"
P3 = "0003-engine-decode-input-as-UTF-8.patch"
P4 = "0004-fork-identify-the-fork-s-builds.patch"


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeEngine:
    """The fake engine, and a temporary directory of the test's own: the leftover
    sweep of one test never sees another's directories."""
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    engine = FakeEngine()
    importlib.import_module("forktool.cli")  # loads the command modules (they import the CLI)
    image_command = importlib.import_module("forktool.commands.image")
    monkeypatch.setattr(image_command, "docker_engine", lambda: engine)
    return engine


# -- build -------------------------------------------------------------------------


def test_build_tags_only_a_candidate_named_for_pin_and_head(
    example_fork: RepoBuilder, fake: FakeEngine
) -> None:
    head = example_fork.rev("HEAD")
    result = run_cli("-C", example_fork.path, "image", "build", "--format", "json")
    assert result.code == 0, result.err
    data = result.json()
    assert data["candidate"] == f"{REPO}:v1.1.0-cand-{head[:7]}"
    (built,) = fake.builds
    assert built.tag == f"{REPO}:v1.1.0-cand-{head[:7]}"
    assert built.dockerfile == "docker/Dockerfile"
    assert built.buildargs == {"BASE_TAG": "v1.1.0"}
    assert list(fake.tags) == [built.tag]
    assert fake.pushes == []


def test_build_labels_record_base_pin_patch_set_and_revision(
    example_fork: RepoBuilder, fake: FakeEngine
) -> None:
    assert run_cli("-C", example_fork.path, "image", "build").code == 0
    fork = load_fork(load_config(example_fork.path / "forktool.yaml"))
    assert fake.builds[0].labels == {
        "org.forktool.base-tag": "v1.1.0",
        "org.forktool.pin-commit": fork.config.pin_commit,
        "org.forktool.patch-set": patchset_hash(fork.patches),
        "org.forktool.revision": example_fork.rev("HEAD"),
        "org.forktool.arm": "full",
    }


def test_build_uses_the_committed_tree_not_uncommitted_edits(
    example_fork: RepoBuilder, fake: FakeEngine
) -> None:
    (example_fork.path / "series").write_text("# uncommitted edit\n")
    assert run_cli("-C", example_fork.path, "image", "build").code == 0
    assert P1 in fake.builds[0].series and P3 in fake.builds[0].series


def test_minus_arm_builds_from_a_copy_without_the_patch_and_leaves_the_fork_alone(
    example_fork: RepoBuilder, fake: FakeEngine
) -> None:
    before = snapshot_tree(example_fork.path)
    result = run_cli("-C", example_fork.path, "image", "build", "--minus", P2, "--format", "json")
    assert result.code == 0, result.err
    assert result.json()["candidate"].endswith("-minus-0002")
    built = fake.builds[0]
    assert P2 not in built.series and P1 in built.series and P3 in built.series
    assert built.patches == [P1, P3, P4]
    assert P2 not in built.upstream_map and P1 in built.upstream_map
    assert built.labels["org.forktool.arm"] == f"minus-{P2}"
    fork = load_fork(load_config(example_fork.path / "forktool.yaml"))
    assert built.labels["org.forktool.patch-set"] == patchset_hash(
        [p for p in fork.patches if p.name != P2]
    )
    assert snapshot_tree(example_fork.path) == before


def test_patchless_arm_has_an_empty_series(example_fork: RepoBuilder, fake: FakeEngine) -> None:
    result = run_cli("-C", example_fork.path, "image", "build", "--patchless", "--format", "json")
    assert result.code == 0
    assert result.json()["candidate"].endswith("-patchless")
    assert fake.builds[0].patches == []
    assert ".patch" not in fake.builds[0].series
    assert fake.builds[0].labels["org.forktool.patch-set"] == patchset_hash([])


def test_failed_build_shows_the_failing_lines_and_exits_1(
    example_fork: RepoBuilder, fake: FakeEngine
) -> None:
    fake.fail_build = ("patching file pulse/config.py", "Hunk 1 FAILED 1/1.")
    result = run_cli("-C", example_fork.path, "image", "build")
    assert result.code == 1
    assert "Step 2/3 : RUN apply" in result.out
    assert "Hunk 1 FAILED 1/1." in result.out
    assert "non-zero code: 1" in result.out
    assert fake.tags == {}


def test_unknown_minus_patch_is_exit_2_and_builds_nothing(
    example_fork: RepoBuilder, fake: FakeEngine
) -> None:
    result = run_cli("-C", example_fork.path, "image", "build", "--minus", "0009-nope.patch")
    assert result.code == 2
    assert result.error_lines[0] == "error: '0009-nope.patch' is not in the series"
    assert fake.builds == []


def test_image_commands_without_an_image_block_are_exit_2(
    example_fork: RepoBuilder, fake: FakeEngine
) -> None:
    config = example_fork.path / "forktool.yaml"
    config.write_text(config.read_text().split("image:")[0])
    result = run_cli("-C", example_fork.path, "image", "build")
    assert result.code == 2
    assert "has no image: block" in result.error_lines[0]


def test_patch_set_hash_depends_on_names_bytes_and_order(example_fork: RepoBuilder) -> None:
    fork = load_fork(load_config(example_fork.path / "forktool.yaml"))
    patches = list(fork.patches)
    assert patchset_hash(patches) == patchset_hash(list(fork.patches))
    assert patchset_hash(patches) != patchset_hash(patches[::-1])
    assert patchset_hash(patches[:1]) != patchset_hash(patches[:2])
    assert patchset_hash([]).startswith("sha256:")


# -- gate --------------------------------------------------------------------------


def gated(
    example_fork: RepoBuilder, fake: FakeEngine, *build_args: str
) -> tuple[str, dict[str, object]]:
    result = run_cli("-C", example_fork.path, "image", "build", *build_args, "--format", "json")
    assert result.code == 0, result.err
    candidate = str(result.json()["candidate"])
    gate = run_cli("-C", example_fork.path, "image", "gate", candidate, "--format", "json")
    assert gate.code in (0, 1), gate.err
    return candidate, {"code": gate.code, **gate.json()}


def test_gate_passes_and_writes_a_record_keyed_by_image_id(
    example_fork: RepoBuilder, fake: FakeEngine, demo_upstream: DemoUpstream, tmp_path: Path
) -> None:
    fake.site = site_with(demo_upstream, tmp_path, example_fork)
    candidate, gate = gated(example_fork, fake)
    assert gate["code"] == 0 and gate["ok"] is True
    image_id = fake.tags[candidate]
    path = example_fork.path / ".forktool/gate-records" / f"{image_id[7:]}.json"
    record = json.loads(path.read_text())
    assert record["digest"] == image_id
    assert record["labels"]["org.forktool.arm"] == "full"
    kinds = [(c["kind"], c["exit_code"]) for c in record["commands"]]
    assert kinds == [("labels", 0), ("command", 0), ("command", 0), ("series", 0)]
    assert record["commands"][1]["command"] == ["test", "-s", "/opt/pulse/pulse/__init__.py"]
    assert record["commands"][3]["where"] == "host"
    assert record["time"] >= record["started"]
    assert record["config_blob"] == example_fork.git.out(
        ["rev-parse", "HEAD:forktool.yaml"], purpose="read"
    )
    assert record["revision"] == example_fork.rev("HEAD")
    assert record["gate_timeout"] == 600
    assert record["patch_set"] == record["labels"]["org.forktool.patch-set"]
    gate_runs = [cmd for _, cmd, _ in fake.runs]
    assert gate_runs == [
        ("test", "-s", "/opt/pulse/pulse/__init__.py"),
        ("grep", "-q", "if not text.strip():", "/opt/pulse/pulse/config.py"),
    ]


def test_gate_fails_when_a_gate_command_fails(
    example_fork: RepoBuilder, fake: FakeEngine, demo_upstream: DemoUpstream, tmp_path: Path
) -> None:
    fake.site = site_with(demo_upstream, tmp_path, example_fork)
    fake.exit_codes[("test", "-s", "/opt/pulse/pulse/__init__.py")] = 1
    _candidate, gate = gated(example_fork, fake)
    assert gate["code"] == 1 and gate["ok"] is False
    assert [c["exit_code"] for c in gate["commands"]] == [0, 1, 0, 0]  # type: ignore[union-attr]


def test_gate_fails_when_the_site_does_not_carry_the_series(
    example_fork: RepoBuilder, fake: FakeEngine, demo_upstream: DemoUpstream, tmp_path: Path
) -> None:
    fake.site = site_with(demo_upstream, tmp_path, example_fork, "--except", P3)
    _candidate, gate = gated(example_fork, fake)
    assert gate["code"] == 1
    series = gate["commands"][-1]  # type: ignore[index]
    assert series["kind"] == "series" and series["exit_code"] == 1


def test_gate_of_a_minus_arm_checks_the_arm_series(
    example_fork: RepoBuilder, fake: FakeEngine, demo_upstream: DemoUpstream, tmp_path: Path
) -> None:
    fake.site = site_with(demo_upstream, tmp_path, example_fork, "--except", P3)
    _candidate, gate = gated(example_fork, fake, "--minus", P3)
    assert gate["code"] == 0, gate
    assert gate["arm"] == f"minus-{P3}"


def test_gate_of_the_patchless_arm_requires_the_pristine_site(
    example_fork: RepoBuilder, fake: FakeEngine, demo_upstream: DemoUpstream, tmp_path: Path
) -> None:
    fake.site = site_with(demo_upstream, tmp_path, example_fork)
    _candidate, gate = gated(example_fork, fake, "--patchless")
    assert gate["code"] == 1  # every patch is applied: not the upstream image


def test_the_series_check_of_a_minus_arm_runs_on_the_host_as_verify_except(
    example_fork: RepoBuilder, fake: FakeEngine, demo_upstream: DemoUpstream, tmp_path: Path
) -> None:
    fake.site = site_with(demo_upstream, tmp_path, example_fork, "--except", P2)
    _candidate, gate = gated(example_fork, fake, "--minus", P2)
    assert gate["code"] == 0, gate
    series = gate["commands"][-1]  # type: ignore[index]
    assert series["command"] == [
        "forktool",
        "apply",
        "--target",
        "/opt/pulse",
        "--verify",
        "--except",
        P2,
    ]
    assert series["where"] == "host"
    assert f"{P2}: exact (absent (--except): it applies on the rest)" in series["output"]
    assert all(cmd[0] != "forktool" for _, cmd, _ in fake.runs)  # nothing in the image judges


def test_a_minus_arm_carrying_the_full_series_fails_its_gate(
    example_fork: RepoBuilder, fake: FakeEngine, demo_upstream: DemoUpstream, tmp_path: Path
) -> None:
    fake.site = site_with(demo_upstream, tmp_path, example_fork)
    _candidate, gate = gated(example_fork, fake, "--minus", P2)
    assert gate["code"] == 1
    series = gate["commands"][-1]  # type: ignore[index]
    assert series["exit_code"] == 1
    assert f"{P2}: fails (present, though --except says it is left out)" in series["output"]


def test_a_candidate_without_the_site_fails_the_series_check(
    example_fork: RepoBuilder, fake: FakeEngine
) -> None:
    _candidate, gate = gated(example_fork, fake)
    assert gate["code"] == 1
    series = gate["commands"][-1]  # type: ignore[index]
    assert series["exit_code"] == 1 and "has no /opt/pulse" in series["output"]


def test_gate_refuses_an_image_that_is_not_a_candidate(
    example_fork: RepoBuilder, fake: FakeEngine
) -> None:
    fake.images["sha256:" + "a" * 64] = ImageInfo("sha256:" + "a" * 64, {}, ("other:1",), ())
    fake.tags["other:1"] = "sha256:" + "a" * 64
    result = run_cli("-C", example_fork.path, "image", "gate", "other:1")
    assert result.code == 2
    assert "is not a forktool candidate" in result.error_lines[0]


# -- promote -----------------------------------------------------------------------


def test_promote_refuses_a_digest_without_a_gate_record(
    example_fork: RepoBuilder, fake: FakeEngine
) -> None:
    result = run_cli("-C", example_fork.path, "image", "build", "--format", "json")
    candidate = str(result.json()["candidate"])
    promote = run_cli("-C", example_fork.path, "image", "promote", candidate, "--tag", "v1.1.0")
    assert promote.code == 1
    assert f"REFUSED: {fake.tags[candidate]} has no gate record" in promote.out
    assert fake.pushes == [] and fake.registry == {}


def test_promote_refuses_a_failed_gate(
    example_fork: RepoBuilder, fake: FakeEngine, demo_upstream: DemoUpstream, tmp_path: Path
) -> None:
    fake.site = site_with(demo_upstream, tmp_path, example_fork)
    fake.exit_codes[("test", "-s", "/opt/pulse/pulse/__init__.py")] = 3
    candidate, _gate = gated(example_fork, fake)
    promote = run_cli("-C", example_fork.path, "image", "promote", candidate, "--tag", "v1.1.0")
    assert promote.code == 1
    assert "the gate failed" in promote.out and "(exit 3)" in promote.out
    assert fake.pushes == []


def test_promote_refuses_an_arm_even_when_gated(
    example_fork: RepoBuilder, fake: FakeEngine, demo_upstream: DemoUpstream, tmp_path: Path
) -> None:
    fake.site = site_with(demo_upstream, tmp_path, example_fork, "--except", P3)
    candidate, gate = gated(example_fork, fake, "--minus", P3)
    assert gate["code"] == 0
    promote = run_cli("-C", example_fork.path, "image", "promote", candidate, "--tag", "v1.1.0")
    assert promote.code == 1
    assert "arms are probes, never releases" in promote.out


def test_promote_tags_and_pushes_the_gated_id_and_checks_the_registry(
    example_fork: RepoBuilder, fake: FakeEngine, demo_upstream: DemoUpstream, tmp_path: Path
) -> None:
    fake.site = site_with(demo_upstream, tmp_path, example_fork)
    candidate, _gate = gated(example_fork, fake)
    image_id = fake.tags[candidate]
    builds = len(fake.builds)
    promote = run_cli(
        "-C",
        example_fork.path,
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
    data = promote.json()
    assert fake.release("v1.1.0") == image_id == fake.release("latest")
    (pushed,) = fake.pushes
    assert pushed == f"{REPO}:{data['pushed_as']}"
    assert str(data["pushed_as"]).startswith("forktool-promote-")
    assert fake.put == [f"{REPO}:v1.1.0", f"{REPO}:latest"]
    assert set(fake.tags) == {candidate}  # no local release tag, the private tag removed
    assert data["digest"] == fake.registry[f"{REPO}:v1.1.0"]
    assert data["reference"] == f"{REPO}@{data['digest']}"
    assert len(fake.builds) == builds  # never rebuilds
    again = run_cli("-C", example_fork.path, "image", "promote", candidate, "--tag", "v1.1.0")
    assert again.code == 0  # the same digest again is fine


def test_promote_never_moves_a_release_tag_to_another_digest(
    example_fork: RepoBuilder, fake: FakeEngine, demo_upstream: DemoUpstream, tmp_path: Path
) -> None:
    fake.site = site_with(demo_upstream, tmp_path, example_fork)
    candidate, _gate = gated(example_fork, fake)
    other = Manifest("sha256:" + "9" * 64, "application/json", b"{}", "sha256:" + "8" * 64)
    fake.manifests[other.digest] = other
    fake.registry[f"{REPO}:v1.1.0"] = other.digest
    promote = run_cli("-C", example_fork.path, "image", "promote", candidate, "--tag", "v1.1.0")
    assert promote.code == 1
    assert f"{REPO}:v1.1.0 already names sha256:{'9' * 64} (image sha256:{'8' * 64})" in (
        promote.out.replace("\n", "")
    )
    assert fake.pushes == []


def test_promote_rejects_latest_and_candidate_names_as_release_tags(
    example_fork: RepoBuilder, fake: FakeEngine
) -> None:
    for tag in ("latest", "v1.1.0-cand-abc1234", "bad/tag"):
        result = run_cli("-C", example_fork.path, "image", "promote", "x", "--tag", tag)
        assert result.code == 2, tag


# -- freeze (pure git) -------------------------------------------------------------

DIGEST = f"{REPO}@sha256:{'1' * 64}"


def promoted(fork: RepoBuilder, reference: str = DIGEST, tag: str = "v1.1.0") -> None:
    """A promotion record of HEAD naming ``reference``, as ``image promote`` writes it."""
    loaded = load_fork(load_config(fork.path / "forktool.yaml"))
    record = {
        "ok": True,
        "reference": reference,
        "digest": reference.rpartition("@")[2],
        "labels": {
            "org.forktool.revision": fork.rev("HEAD"),
            "org.forktool.patch-set": patchset_hash(loaded.patches),
        },
        "time": "2026-01-01T00:00:00+00:00",
    }
    path = fork.path / ".forktool/gate-records" / f"promoted-{tag}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record))


def test_freeze_tags_head_with_digest_patch_set_and_pin(
    example_fork: RepoBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    identity(monkeypatch)
    promoted(example_fork)
    result = run_cli("-C", example_fork.path, "image", "freeze", "--digest", DIGEST)
    assert result.code == 0, result.err
    fork = load_fork(load_config(example_fork.path / "forktool.yaml"))
    assert example_fork.rev("refs/tags/fork/v1.1.0") == example_fork.rev("HEAD")
    message = run_git(
        ["cat-file", "-p", "refs/tags/fork/v1.1.0"], cwd=example_fork.path, purpose="read"
    ).out
    assert "tagger Rel Eng <releng@fork.example>" in message
    assert f"Image-Digest: {DIGEST}\n" in message
    assert f"Patch-Set: {patchset_hash(fork.patches)}\n" in message
    assert f"Pin: v1.1.0 {fork.config.pin_commit}\n" in message


def test_freeze_is_idempotent(example_fork: RepoBuilder, monkeypatch: pytest.MonkeyPatch) -> None:
    identity(monkeypatch)
    promoted(example_fork)
    assert run_cli("-C", example_fork.path, "image", "freeze", "--digest", DIGEST).code == 0
    before = snapshot_tree(example_fork.path)
    again = run_cli(
        "-C", example_fork.path, "image", "freeze", "--digest", DIGEST, "--format", "json"
    )
    assert again.code == 0
    assert again.json()["created"] is False
    assert snapshot_tree(example_fork.path) == before


def test_freeze_refuses_when_the_tag_records_another_digest(
    example_fork: RepoBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    identity(monkeypatch)
    promoted(example_fork)
    assert run_cli("-C", example_fork.path, "image", "freeze", "--digest", DIGEST).code == 0
    other = f"{REPO}@sha256:{'2' * 64}"
    promoted(example_fork, other, "v1.1.0-again")
    result = run_cli("-C", example_fork.path, "image", "freeze", "--digest", other)
    assert result.code == 1
    assert f"Image-Digest: tag has {DIGEST}, this release has {other}" in result.out


def test_freeze_refuses_when_head_moved_on(
    example_fork: RepoBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    identity(monkeypatch)
    promoted(example_fork)
    frozen_at = example_fork.rev("HEAD")
    assert run_cli("-C", example_fork.path, "image", "freeze", "--digest", DIGEST).code == 0
    example_fork.commit("fork: a later change\n", {"NOTES": "later\n"})
    promoted(example_fork)
    result = run_cli("-C", example_fork.path, "image", "freeze", "--digest", DIGEST)
    assert result.code == 1
    assert f"commit: tag has {frozen_at}" in result.out
    assert example_fork.rev("refs/tags/fork/v1.1.0") == frozen_at


def test_freeze_without_a_tagger_identity_is_exit_2_with_a_hint(
    example_fork: RepoBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in (
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(example_fork.path.parent))  # no git config of one's own
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    # setup_fork gives the demo fork an identity in its own config: take it away.
    for key in ("user.name", "user.email"):
        example_fork.git.run(["config", "--unset", key], purpose="unset")
    promoted(example_fork)
    result = run_cli("-C", example_fork.path, "image", "freeze", "--digest", DIGEST)
    assert result.code == 2
    assert result.error_lines[0] == "error: creating the tag fork/v1.1.0 needs a tagger identity"
    assert "user.name" in result.error_lines[1]
    assert example_fork.git.find_object("refs/tags/fork/v1.1.0") is None


def test_freeze_takes_the_tagger_from_the_repository_config(
    example_fork: RepoBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in (
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
    ):
        monkeypatch.delenv(name, raising=False)
    example_fork.git.run(["config", "user.name", "Local Tagger"], purpose="set")
    example_fork.git.run(["config", "user.email", "local@fork.example"], purpose="set")
    promoted(example_fork)
    assert run_cli("-C", example_fork.path, "image", "freeze", "--digest", DIGEST).code == 0
    message = example_fork.git.out(["cat-file", "-p", "refs/tags/fork/v1.1.0"], purpose="read")
    assert "tagger Local Tagger <local@fork.example>" in message


def test_freeze_without_digest_or_promotion_is_exit_2(
    example_fork: RepoBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    identity(monkeypatch)
    result = run_cli("-C", example_fork.path, "image", "freeze")
    assert result.code == 2
    assert "no promotion of" in result.error_lines[0]


def test_freeze_uses_the_promotion_record_of_head(
    example_fork: RepoBuilder,
    fake: FakeEngine,
    demo_upstream: DemoUpstream,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    identity(monkeypatch)
    fake.site = site_with(demo_upstream, tmp_path, example_fork)
    candidate, _gate = gated(example_fork, fake)
    promote = run_cli(
        "-C",
        example_fork.path,
        "image",
        "promote",
        candidate,
        "--tag",
        "v1.1.0",
        "--format",
        "json",
    )
    result = run_cli("-C", example_fork.path, "image", "freeze", "--format", "json")
    assert result.code == 0, result.err
    assert result.json()["values"]["Image-Digest"] == promote.json()["reference"]  # type: ignore[index]


# -- arms --------------------------------------------------------------------------


def test_arms_lists_full_one_minus_per_patch_and_patchless(example_fork: RepoBuilder) -> None:
    result = run_cli("-C", example_fork.path, "arms", "--format", "json")
    assert result.code == 0
    include = result.json()["include"]
    assert [a["arm"] for a in include] == [  # type: ignore[union-attr]
        "full",
        f"minus-{P1}",
        f"minus-{P2}",
        f"minus-{P3}",
        f"minus-{P4}",
        "patchless",
    ]
    assert include[2] == {  # type: ignore[index]
        "arm": f"minus-{P2}",
        "patch": P2,
        "args": ["--minus", P2],
        "tag_suffix": "-minus-0002",
    }
    assert include[5]["args"] == ["--patchless"]  # type: ignore[index]


def test_arms_of_a_series_not_all_numbered_are_tagged_by_position(
    example_fork: RepoBuilder,
) -> None:
    # A distribution's series names its patches freely (Debian's nginx: the third has
    # no number, a later one is 0003-...): by position every arm's tag is its own.
    root = example_fork.path
    renamed = {P3: "fix-crash.patch", P4: "0003-late.patch"}
    for old, new in renamed.items():
        (root / "patches" / old).rename(root / "patches" / new)
        for name in ("series", "upstream.map"):
            (root / name).write_text((root / name).read_text().replace(old, new))
    result = run_cli("-C", root, "arms", "--format", "json")
    assert result.code == 0, result.err
    include = result.json()["include"]
    assert [(a["patch"], a["tag_suffix"]) for a in include[1:-1]] == [  # type: ignore[index]
        (P1, "-minus-0001"),
        (P2, "-minus-0002"),
        ("fix-crash.patch", "-minus-0003"),
        ("0003-late.patch", "-minus-0004"),
    ]


def write_waivers(fork: RepoBuilder, text: str) -> None:
    (fork.path / "arm-waivers").write_text(text)
    config = fork.path / "forktool.yaml"
    config.write_text(config.read_text() + "  waivers: arm-waivers\n")


def test_a_waived_patch_gets_no_arm(example_fork: RepoBuilder) -> None:
    write_waivers(example_fork, f"# patch reason\n{P3} cherry-picked; probe cannot tell\n")
    result = run_cli("-C", example_fork.path, "arms", "--format", "json")
    assert result.code == 0, result.err
    data = result.json()
    assert f"minus-{P3}" not in [a["arm"] for a in data["include"]]  # type: ignore[union-attr]
    assert data["waivers"] == [
        {"patch": P3, "reason": "cherry-picked; probe cannot tell", "line": 2}
    ]


def test_bad_waivers_are_exit_2(example_fork: RepoBuilder) -> None:
    write_waivers(example_fork, f"0009-gone.patch old\n{P1}\n")
    result = run_cli("-C", example_fork.path, "arms")
    assert result.code == 2
    assert result.error_lines[0] == (
        "error: arm-waivers:1: waives '0009-gone.patch', which the series does not list (and 1 more)"
    )


def results_file(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "arm-results.json"
    path.write_text(json.dumps(data))
    return path


def test_arms_check_fails_when_a_patch_has_no_result_and_no_waiver(
    example_fork: RepoBuilder, tmp_path: Path
) -> None:
    path = results_file(
        tmp_path,
        {"full": "pass", "arms": {P1: "fail", P2: "pass", P4: "pass"}, "patchless": "fail"},
    )
    result = run_cli(
        "-C", example_fork.path, "arms", "--check", "--results", path, "--format", "json"
    )
    assert result.code == 1
    messages = [f["message"] for f in result.json()["findings"]]  # type: ignore[union-attr]
    assert messages == [f"'{P3}' has neither an arm result nor a waiver"]


def test_arms_check_passes_with_results_or_waivers_for_every_patch(
    example_fork: RepoBuilder, tmp_path: Path
) -> None:
    write_waivers(example_fork, f"{P3} decided by ancestry alone\n")
    path = results_file(
        tmp_path,
        {"full": "pass", "arms": {P1: "fail", P2: "fail", P4: "pass"}, "patchless": "fail"},
    )
    result = run_cli("-C", example_fork.path, "arms", "--check", "--results", path)
    assert result.code == 0, result.out
    assert "OK: every patch has an arm result or a waiver" in result.out


def test_arms_check_flags_results_for_patches_not_in_the_series(
    example_fork: RepoBuilder, tmp_path: Path
) -> None:
    arms = {P1: "pass", P2: "pass", P3: "pass", P4: "pass", "0009-old.patch": "pass"}
    path = results_file(tmp_path, {"full": "pass", "arms": arms})
    result = run_cli("-C", example_fork.path, "arms", "--check", "--results", path)
    assert result.code == 1
    assert "'0009-old.patch', which the series does not list" in result.out


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ("{not json", "not valid JSON"),
        (json.dumps({"full": "ok"}), '\'full\' must be "pass" or "fail", not "ok"'),
        (json.dumps({"full": "pass", "extra": 1}), "unknown key(s) extra"),
        (json.dumps([]), "expected a JSON object"),
    ],
)
def test_malformed_arm_results_are_exit_2(
    example_fork: RepoBuilder, tmp_path: Path, data: str, error: str
) -> None:
    path = tmp_path / "r.json"
    path.write_text(data)
    result = run_cli("-C", example_fork.path, "arms", "--check", "--results", path)
    assert result.code == 2
    assert error in result.error_lines[0]


def test_arms_check_needs_results(example_fork: RepoBuilder) -> None:
    result = run_cli("-C", example_fork.path, "arms", "--check")
    assert result.code == 2
    assert result.error_lines[0] == "error: --check goes with --results FILE"


# -- issue 14: the release flow cannot be fooled ------------------------------------


def promote_json(fork: RepoBuilder, candidate: str, *args: str) -> tuple[int, dict[str, object]]:
    result = run_cli(
        "-C", fork.path, "image", "promote", candidate, "--tag", "v1.1.0", *args, "--format", "json"
    )
    assert result.code in (0, 1), result.err
    return result.code, result.json()


def tamper(fork: RepoBuilder, image_id: str, **fields: object) -> None:
    path = fork.path / ".forktool/gate-records" / f"{image_id[7:]}.json"
    record = json.loads(path.read_text())
    record.update(fields)
    path.write_text(json.dumps(record))


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"forktool": "0.0.1"}, "the record was written by forktool 0.0.1"),
        ({"config_blob": "0" * 40}, f"the record's config blob {'0' * 40} is not the committed"),
        ({"patch_set": "sha256:" + "0" * 64}, "the record's patch set sha256:000"),
        ({"gate_timeout": 1}, "the record's gate timeout 1 is not the committed 600"),
        ({"format": 1}, "the record is format 1, not 2"),
        (
            {"commands": [{"kind": "series", "command": ["true"], "exit_code": 0, "ok": True}]},
            "the recorded checks are not the committed gate commands and series check",
        ),
    ],
)
def test_promote_refuses_a_record_whose_bindings_do_not_derive_again(
    example_fork: RepoBuilder,
    fake: FakeEngine,
    demo_upstream: DemoUpstream,
    tmp_path: Path,
    fields: dict[str, object],
    reason: str,
) -> None:
    fake.site = site_with(demo_upstream, tmp_path, example_fork)
    candidate, gate = gated(example_fork, fake)
    assert gate["code"] == 0
    tamper(example_fork, fake.tags[candidate], **fields)
    code, data = promote_json(example_fork, candidate)
    assert code == 1
    assert f"{fake.tags[candidate]} is not gated: " in str(data["message"])
    assert reason in str(data["message"])
    assert fake.pushes == [] and fake.put == []


def test_gate_refuses_uncommitted_changes_to_the_forks_files(
    example_fork: RepoBuilder, fake: FakeEngine
) -> None:
    candidate = str(
        run_cli("-C", example_fork.path, "image", "build", "--format", "json").json()["candidate"]
    )
    config = example_fork.path / "forktool.yaml"
    config.write_text(config.read_text().replace('["test", "-s"', '["true"], ["test", "-s"'))
    result = run_cli("-C", example_fork.path, "image", "gate", candidate)
    assert result.code == 2
    assert result.error_lines == [
        "error: uncommitted changes to the fork's files: forktool.yaml",
        "hint: commit or stash them: the gate judges committed configuration only",
    ]
    assert fake.runs == []
    (example_fork.path / "patches" / "0009-new.patch").write_text("x\n")
    config.write_text(config.read_text().replace('["true"], ', ""))
    again = run_cli("-C", example_fork.path, "image", "gate", candidate)
    assert again.error_lines[0] == (
        "error: uncommitted changes to the fork's files: patches/0009-new.patch"
    )


def test_a_retag_between_tag_and_push_is_caught_and_releases_nothing(
    example_fork: RepoBuilder, fake: FakeEngine, demo_upstream: DemoUpstream, tmp_path: Path
) -> None:
    fake.site = site_with(demo_upstream, tmp_path, example_fork)
    candidate, _gate = gated(example_fork, fake)
    other = "sha256:" + "e" * 64
    fake.images[other] = ImageInfo(other, {}, (), ())

    def retag(engine: FakeEngine, ref: str) -> None:
        engine.tags[ref] = other

    fake.before_push = retag
    code, data = promote_json(example_fork, candidate, "--latest")
    assert code == 1
    assert f"describes image {other}, not the gated {fake.tags[candidate]}" in str(data["message"])
    assert fake.release("v1.1.0") is None and fake.release("latest") is None
    assert fake.put == []
    assert set(fake.tags) == {candidate}  # the private tag is gone, no release tag made


def test_a_failed_push_leaves_no_local_tag_behind(
    example_fork: RepoBuilder, fake: FakeEngine, demo_upstream: DemoUpstream, tmp_path: Path
) -> None:
    fake.site = site_with(demo_upstream, tmp_path, example_fork)
    candidate, _gate = gated(example_fork, fake)

    def refuse(engine: FakeEngine, ref: str) -> None:
        raise_push_error()

    fake.before_push = refuse
    result = run_cli("-C", example_fork.path, "image", "promote", candidate, "--tag", "v1.1.0")
    assert result.code == 2
    assert set(fake.tags) == {candidate}


def raise_push_error() -> None:
    from forktool.errors import FatalError

    raise FatalError("the registry hung up")


def test_re_promoting_the_same_image_pushes_nothing(
    example_fork: RepoBuilder, fake: FakeEngine, demo_upstream: DemoUpstream, tmp_path: Path
) -> None:
    fake.site = site_with(demo_upstream, tmp_path, example_fork)
    candidate, _gate = gated(example_fork, fake)
    assert promote_json(example_fork, candidate)[0] == 0
    fake.tags = {candidate: fake.tags[candidate]}  # another runner: no local trace
    code, data = promote_json(example_fork, candidate, "--latest")
    assert code == 0, data
    assert len(fake.pushes) == 1 and data["pushed_as"] == ""
    assert fake.release("latest") == fake.tags[candidate]


def test_a_tag_with_a_trailing_newline_is_exit_2(
    example_fork: RepoBuilder, fake: FakeEngine
) -> None:
    result = run_cli("-C", example_fork.path, "image", "promote", "x", "--tag", "v3.0.0\n")
    assert result.code == 2
    assert result.error_lines[0] == "error: --tag 'v3.0.0\\n' is not a valid image tag"
    assert len(result.err.splitlines()) == 2


def test_freeze_refuses_a_digest_no_promotion_of_head_names(
    example_fork: RepoBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    identity(monkeypatch)
    promoted(example_fork)
    for bogus in ("sha256:" + "0" * 64, f"{REPO}@sha256:{'2' * 64}"):
        result = run_cli("-C", example_fork.path, "image", "freeze", "--digest", bogus)
        assert result.code == 2
        assert result.error_lines[0].startswith(f"error: --digest {bogus}: no promotion of")
    bare = run_cli("-C", example_fork.path, "image", "freeze", "--digest", "sha256:" + "1" * 64)
    assert bare.code == 0, bare.err  # the bare digest of the recorded promotion


def test_freeze_refuses_a_promotion_of_another_patch_set(
    example_fork: RepoBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    identity(monkeypatch)
    promoted(example_fork)
    path = example_fork.path / ".forktool/gate-records/promoted-v1.1.0.json"
    record = json.loads(path.read_text())
    record["labels"]["org.forktool.patch-set"] = "sha256:" + "3" * 64
    path.write_text(json.dumps(record))
    result = run_cli("-C", example_fork.path, "image", "freeze", "--digest", DIGEST)
    assert result.code == 2
    assert "was built from patch set sha256:333" in result.error_lines[0]


@pytest.mark.parametrize("key", ["context", "dockerfile", "records", "waivers"])
@pytest.mark.parametrize("value", ["/etc", "../..", "docker/../../x"])
def test_image_paths_outside_the_fork_are_exit_2(
    example_fork: RepoBuilder, key: str, value: str
) -> None:
    config = example_fork.path / "forktool.yaml"
    text = config.read_text()
    if key == "dockerfile":
        text = text.replace("  dockerfile: docker/Dockerfile\n", "")
    text = text.replace("  site: /opt/pulse\n", f"  site: /opt/pulse\n  {key}: {value}\n")
    config.write_text(text)
    result = run_cli("-C", example_fork.path, "image", "freeze")
    assert result.code == 2
    assert result.error_lines[0].endswith(f"image.{key} '{value}' must be a path inside the fork")


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("1", True),
        ("86400", True),
        ("0", False),
        ("1.5", False),
        ("soon", False),
        ("\u00b2", False),  # str.isdigit says yes, int says no
        ("\u0664\u0662", False),  # Arabic-Indic digits: int would read 42
        ("9" * 5000, False),  # int refuses more than 4,300 digits
        ("'600'", False),  # a string, not a number
        ("0x10", False),
        ("1_000", False),
        ("[1]", False),
        ("{a: 1}", False),
    ],
)
def test_gate_timeout_is_whole_seconds(example_fork: RepoBuilder, value: str, ok: bool) -> None:
    config = example_fork.path / "forktool.yaml"
    config.write_text(
        config.read_text().replace(
            "  site: /opt/pulse\n", f"  site: /opt/pulse\n  gate_timeout: {value}\n"
        )
    )
    if ok:
        settings = load_config(config).image
        assert settings is not None and settings.gate_timeout == int(value)
    else:
        result = run_cli("-C", example_fork.path, "image", "freeze")
        assert result.code == 2, result.err
        line = config.read_text().splitlines().index(f"  gate_timeout: {value}") + 1
        first, hint = result.error_lines
        assert first.startswith(f"error: {config}:{line}: image.gate_timeout ")
        assert first.endswith(" must be a whole number of seconds from 1 to 86400")
        assert len(first) < len(str(config)) + 150  # a 5,000-digit value is not echoed whole
        assert hint == "hint: write it in ASCII digits, unquoted, e.g. gate_timeout: 600"


def test_the_committed_gate_timeout_reaches_every_gate_command(
    example_fork: RepoBuilder, fake: FakeEngine, demo_upstream: DemoUpstream, tmp_path: Path
) -> None:
    config = example_fork.path / "forktool.yaml"
    text = config.read_text().replace(
        "  site: /opt/pulse\n", "  site: /opt/pulse\n  gate_timeout: 42\n"
    )
    example_fork.commit("fork: a shorter gate timeout\n", {"forktool.yaml": text})
    fake.site = site_with(demo_upstream, tmp_path, example_fork)
    _candidate, gate = gated(example_fork, fake)
    assert gate["gate_timeout"] == 42
    assert [timeout for _, _, timeout in fake.runs] == [42, 42]


def test_a_committed_link_out_of_the_repository_is_exit_2_not_a_traceback(
    example_fork: RepoBuilder, fake: FakeEngine
) -> None:
    (example_fork.path / "docker" / "up").symlink_to("../../..")
    example_fork.git.run(["add", "docker/up"], purpose="add")
    example_fork.git.run(["commit", "-qm", "a link out"], purpose="commit")
    for args in (["build"], ["freeze", "--digest", DIGEST]):
        result = run_cli("-C", example_fork.path, "image", *args)
        assert result.code == 2
        assert result.error_lines[0].startswith("error: docker/up -> ../../..: a committed link")
    assert fake.builds == []


def test_a_link_out_of_the_site_is_left_out_and_named(
    example_fork: RepoBuilder, fake: FakeEngine, demo_upstream: DemoUpstream, tmp_path: Path
) -> None:
    site = site_with(demo_upstream, tmp_path, example_fork)
    (site / "pulse" / "hosts").symlink_to("/etc/hosts")
    fake.site = site
    _candidate, gate = gated(example_fork, fake)
    assert gate["code"] == 0
    series = gate["commands"][-1]  # type: ignore[index]
    assert (
        "not copied: pulse/pulse/hosts -> /etc/hosts (it leads outside the site)"
        in (series["output"])
    )
    assert "forktool-site-" not in series["output"]


def test_build_and_container_output_is_escaped(example_fork: RepoBuilder, fake: FakeEngine) -> None:
    fake.fail_build = ("\x1b]0;owned\x07\x1b[31mboom",)
    result = run_cli("-C", example_fork.path, "image", "build")
    assert result.code == 1
    assert "\x1b" not in result.out and "\\x1b]0;owned\\x07\\x1b[31mboom" in result.out


def test_leftovers_of_a_killed_run_are_removed_with_a_notice(
    example_fork: RepoBuilder, fake: FakeEngine
) -> None:
    dead = 2**22 + 17  # above the default pid_max: no such process
    tmp_path = Path(tempfile.gettempdir())  # the fake fixture's own
    (tmp_path / f"forktool-image-{dead}-abc").mkdir()
    (tmp_path / f"forktool-site-{dead}-def").mkdir()
    (tmp_path / f"forktool-image-{os.getpid()}-mine").mkdir()
    fake.left = [Leftover("c" * 64, dead, "127.0.0.1:5000/pulse-fork:v1.1.0-cand-1234567")]
    result = run_cli("-C", example_fork.path, "image", "build")
    assert result.code == 0, result.err
    assert result.err.splitlines() == [
        f"notice: removed container {'c' * 12} (127.0.0.1:5000/pulse-fork:v1.1.0-cand-1234567) "
        "left by a forktool run "
        f"that is gone (pid {dead})",
        f"notice: removed {tmp_path}/forktool-image-{dead}-abc left by a forktool run "
        f"that is gone (pid {dead})",
        f"notice: removed {tmp_path}/forktool-site-{dead}-def left by a forktool run "
        f"that is gone (pid {dead})",
    ]
    assert fake.removed == ["c" * 64]
    assert sorted(p.name for p in tmp_path.glob("forktool-*")) == [
        f"forktool-image-{os.getpid()}-mine"
    ]


def test_an_engine_that_never_answers_is_exit_2_after_the_control_timeout(
    example_fork: RepoBuilder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "mute.sock"))
    server.listen(4)  # accepts connections (the kernel's backlog), never answers
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'mute.sock'}")
    monkeypatch.setenv("FORKTOOL_DOCKER_TIMEOUT", "1")
    try:
        result = run_cli("-C", example_fork.path, "image", "build")
    finally:
        server.close()
    assert result.code == 2
    assert result.error_lines[0].startswith(
        f"error: no Docker engine answers at unix://{tmp_path / 'mute.sock'}: "
    )
    assert len(result.error_lines) == 2


@pytest.mark.parametrize(
    ("repository", "url", "name"),
    [
        ("127.0.0.1:5000/team/app", "http://127.0.0.1:5000", "team/app"),
        ("localhost/app", "http://localhost", "app"),
        ("[::1]:5000/app", "http://[::1]:5000", "app"),
        ("registry.example.org/team/app", "https://registry.example.org", "team/app"),
        ("app", "https://registry-1.docker.io", "library/app"),
        ("team/app", "https://registry-1.docker.io", "team/app"),
    ],
)
def test_a_repository_names_its_registry_and_scheme(repository: str, url: str, name: str) -> None:
    from forktool.registry import base_url, split_repository

    address, found = split_repository(repository)
    assert (base_url(address), found) == (url, name)
