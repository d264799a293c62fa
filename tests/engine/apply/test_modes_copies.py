"""Modes, copies and ``.orig`` files a series creates, in every engine.

A mode is part of a tree: a mode-only patch (``old mode 100644`` / ``new mode
100755``) is applied, verified, reverted and compared like any other change, by
``verify`` (temporary index), ``apply --engine git`` and ``apply --engine patch``,
and judged by ``absorbed``. Copies (``format-patch -C``) cannot be reverted by git,
so every engine refuses them up front, saying "copy".
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from testing.apply_support import export, numbered, patch_of, pristine, side_commit, writes
from testing.helpers import MiniFork, mini_fork, snapshot_tree

from forktool.builder import RepoBuilder

APP = "src/app.py"
BASE = numbered(12)
P = "0001-mode.patch"
ENGINES = ["git", "patch"]


def chmod_x(root: Path) -> None:
    os.chmod(root / APP, 0o755)


def executable(path: Path) -> bool:
    return bool(path.stat().st_mode & stat.S_IXUSR)


def refused(fork: MiniFork, target: Path, *args: str) -> dict[str, object]:
    """The first patch's verdict from an ``apply --target`` that must refuse (exit 1)
    and leave the target byte-identical."""
    before = snapshot_tree(target)
    result = fork.cli("apply", "--target", target, *args, "--format", "json")
    assert result.code == 1, result.out
    assert snapshot_tree(target) == before
    verdict: dict[str, object] = result.json()["patches"][0]  # type: ignore[index]
    return verdict


@pytest.fixture
def fork(builder: RepoBuilder) -> MiniFork:
    fork = mini_fork(builder, {APP: BASE, "README": "readme\n"})
    fork.write({P: patch_of(builder, "v1", chmod_x)})
    return fork


# -- apply --target and --verify ---------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_mode_only_patch_is_applied_and_verified(
    fork: MiniFork, tmp_path: Path, engine: str
) -> None:
    assert b"old mode 100644\nnew mode 100755\n" in fork.patches[P]
    target = pristine(fork, tmp_path / "target")
    result = fork.cli("apply", "--target", target, "--engine", engine)
    assert result.code == 0, result.out
    assert executable(target / APP)
    check = fork.cli("apply", "--target", target, "--engine", engine, "--verify")
    assert check.code == 0, check.out


@pytest.mark.parametrize("engine", ENGINES)
def test_verify_fails_on_a_target_that_lacks_the_mode_change(
    fork: MiniFork, tmp_path: Path, engine: str
) -> None:
    target = pristine(fork, tmp_path / "target")
    result = fork.cli(
        "apply", "--target", target, "--engine", engine, "--verify", "--format", "json"
    )
    assert result.code == 1, result.out
    verdict = result.json()["patches"][0]  # type: ignore[index]
    assert verdict["status"] == "fails"
    assert verdict["message"] == "not applied: the patch applies forward, so the target lacks it"


@pytest.mark.parametrize("engine", ENGINES)
def test_mode_patch_on_a_target_with_the_mode_already_set_is_already_applied(
    fork: MiniFork, tmp_path: Path, engine: str
) -> None:
    target = pristine(fork, tmp_path / "target")
    os.chmod(target / APP, 0o755)
    verdict = refused(fork, target, "--engine", engine)
    assert verdict["status"] == "fails"
    assert str(verdict["message"]).startswith("already applied")


@pytest.mark.parametrize("engine", ENGINES)
def test_patched_files_keep_their_permissions(
    builder: RepoBuilder, tmp_path: Path, engine: str
) -> None:
    fork = mini_fork(builder, {APP: BASE, "tool.sh": "echo 1\n"})
    edit = writes({APP: BASE + "more\n", "tool.sh": "echo 2\n"})
    fork.write({P: patch_of(builder, "v1", edit)})
    target = pristine(fork, tmp_path / "target")
    os.chmod(target / APP, 0o600)
    os.chmod(target / "tool.sh", 0o750)
    result = fork.cli("apply", "--target", target, "--engine", engine)
    assert result.code == 0, result.out
    assert stat.S_IMODE((target / APP).stat().st_mode) == 0o600
    assert stat.S_IMODE((target / "tool.sh").stat().st_mode) == 0o750
    assert (target / APP).read_text() == BASE + "more\n"


@pytest.mark.parametrize("engine", ENGINES)
def test_mode_change_keeps_the_other_permission_bits(
    fork: MiniFork, tmp_path: Path, engine: str
) -> None:
    target = pristine(fork, tmp_path / "target")
    os.chmod(target / APP, 0o640)
    result = fork.cli("apply", "--target", target, "--engine", engine)
    assert result.code == 0, result.out
    assert stat.S_IMODE((target / APP).stat().st_mode) == 0o750


@pytest.mark.parametrize("engine", ENGINES)
def test_a_new_executable_file_is_created_executable_and_verified(
    builder: RepoBuilder, tmp_path: Path, engine: str
) -> None:
    fork = mini_fork(builder, {APP: BASE})

    def add_script(root: Path) -> None:
        (root / "run.sh").write_text("#!/bin/sh\n")
        os.chmod(root / "run.sh", 0o755)

    patch = patch_of(builder, "v1", add_script)
    assert b"new file mode 100755" in patch
    fork.write({P: patch})
    target = pristine(fork, tmp_path / "target")
    result = fork.cli("apply", "--target", target, "--engine", engine)
    assert result.code == 0, result.out
    assert executable(target / "run.sh")
    os.chmod(target / "run.sh", 0o644)
    check = fork.cli("apply", "--target", target, "--engine", engine, "--verify")
    assert check.code == 1, check.out


# -- verify (temporary index) and absorbed -----------------------------------------------


def test_verify_base_where_the_mode_is_already_set_says_already_applied(
    builder: RepoBuilder,
) -> None:
    fork = mini_fork(builder, {APP: BASE})
    patch = patch_of(builder, "v1", chmod_x)
    set_x = side_commit(builder, "v1", chmod_x)
    fork.write({P: patch})
    result = fork.cli("verify", "--base", set_x, "--format", "json")
    assert result.code == 1
    data = result.json()
    verdict = data["patches"][0]  # type: ignore[index]
    assert verdict["status"] == "fails"
    assert verdict["message"] == (
        f"already applied: the change is present on {set_x} (it reverse-applies exactly)"
    )
    assert data["round_trip"] is False


def test_verify_fails_where_the_file_mode_differs_from_the_patch_base(
    builder: RepoBuilder,
) -> None:
    fork = mini_fork(builder, {APP: BASE})
    patch = patch_of(builder, "v1", writes({APP: BASE + "more\n"}))
    set_x = side_commit(builder, "v1", chmod_x)
    fork.write({P: patch})
    result = fork.cli("verify", "--base", set_x, "--format", "json")
    assert result.code == 1
    verdict = result.json()["patches"][0]  # type: ignore[index]
    assert verdict["status"] == "fails"
    assert verdict["message"] == (
        f"{APP}: the patch expects mode 100644, but the file has mode 100755 on {set_x}"
    )


def test_verify_mode_patch_on_the_pin_is_exact_and_round_trips(fork: MiniFork) -> None:
    result = fork.cli("verify", "--format", "json")
    assert result.code == 0, result.out
    assert result.json()["round_trip"] is True


def test_absorbed_retires_a_mode_change_the_release_made(builder: RepoBuilder) -> None:
    builder.commit("import\n", {APP: BASE})
    builder.tag("v1.0.0")
    chmod_x(builder.path)
    fix = builder.commit("make app executable\n")
    builder.tag("v1.1.0")
    patch = export(builder, fix)
    fork = MiniFork(builder, "v1.0.0")
    fork.write({P: patch}, commits={P: fix}, extra_config="upstream:\n  remote: origin\n")
    result = fork.cli("absorbed", "--tag", "v1.1.0", "--format", "json")
    assert result.code == 0, result.err
    entry = result.json()["patches"][0]  # type: ignore[index]
    assert entry["verdict"] == "retire", entry
    assert [e["kind"] for e in entry["evidence"]] == ["content-present"]


# -- copies ----------------------------------------------------------------------------------


def copy_fork(builder: RepoBuilder) -> MiniFork:
    fork = mini_fork(builder, {APP: BASE})
    patch = patch_of(builder, "v1", writes({"src/copy.py": BASE + "copied\n"}), "-C", "-C")
    assert b"copy from src/app.py\ncopy to src/copy.py\n" in patch
    fork.write({P: patch})
    return fork


COPY_MESSAGE = (
    "src/copy.py: a copy (copy from src/app.py) cannot be reverted exactly, so forktool "
    "refuses copies; regenerate the patch without copy detection (no -C or --find-copies), "
    "so it creates the file"
)


def test_verify_refuses_a_copy_saying_copy(builder: RepoBuilder) -> None:
    fork = copy_fork(builder)
    result = fork.cli("verify", "--format", "json")
    assert result.code == 1
    verdict = result.json()["patches"][0]  # type: ignore[index]
    assert (verdict["status"], verdict["message"]) == ("unsupported", COPY_MESSAGE)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("verify", [False, True])
def test_apply_refuses_a_copy_saying_copy(
    builder: RepoBuilder, tmp_path: Path, engine: str, verify: bool
) -> None:
    fork = copy_fork(builder)
    target = pristine(fork, tmp_path / "target")
    extra = ["--verify"] if verify else []
    verdict = refused(fork, target, "--engine", engine, *extra)
    assert (verdict["status"], verdict["message"]) == ("unsupported", COPY_MESSAGE)


# -- .orig and .rej files that the series itself creates -------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_series_creating_orig_and_rej_files_applies_and_verifies(
    builder: RepoBuilder, tmp_path: Path, engine: str
) -> None:
    fork = mini_fork(builder, {APP: BASE, "README": "readme\n"})
    created: dict[str, str | bytes | None] = {
        "setup.cfg.orig": "[metadata]\n",
        "data/table.rej": "rejected rows\n",
    }
    fork.write({P: patch_of(builder, "v1", writes(created))})
    target = pristine(fork, tmp_path / "target")
    result = fork.cli("apply", "--target", target, "--engine", engine)
    assert result.code == 0, result.out
    assert (target / "setup.cfg.orig").read_text() == "[metadata]\n"
    check = fork.cli("apply", "--target", target, "--engine", engine, "--verify")
    assert check.code == 0, check.out
    (target / "setup.cfg.orig.rej").write_text("left by a failed run\n")
    stray = fork.cli("apply", "--target", target, "--engine", engine, "--verify")
    assert stray.code == 1
    assert "leftover files already in the target: setup.cfg.orig.rej;" in stray.out
    # one beside a file the series does not patch is the target's own (an upstream
    # tarball may ship one: Debian's isc-dhcp)
    (target / "setup.cfg.orig.rej").unlink()
    (target / "README.orig").write_text("shipped by upstream\n")
    assert fork.cli("apply", "--target", target, "--engine", engine, "--verify").code == 0
