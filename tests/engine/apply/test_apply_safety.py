"""``apply --target`` and ``verify`` fail closed: nothing outside DIR, nothing half-done,
no stray files, no pass on missing input, no state inherited between arms."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from testing.apply_support import (
    edit_line,
    numbered,
    patch_of,
    pristine,
    side_commit,
    stray_names,
    writes,
)
from testing.helpers import MiniFork, mini_fork, snapshot_tree
from testing.safety_fork import APP, BASE, ENGINES, A, B, C

from forktool.builder import RepoBuilder
from forktool.engine.apply.precheck import EMPTY_NOTE


@pytest.fixture
def fork(safety_fork: MiniFork) -> MiniFork:
    """This module's fork: the shared ``safety_fork`` (tests/testing/)."""
    return safety_fork


def applied_text(*names: str) -> str:
    text = BASE
    if A in names:
        text = edit_line(text, "line 5", "line 5 a")
    if B in names:
        text = edit_line(text, "line 30", "line 30 b")
    return text


# -- never outside DIR ----------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_symlinked_directory_pointing_outside_is_refused(
    fork: MiniFork, tmp_path: Path, engine: str
) -> None:
    target = pristine(fork, tmp_path / "target")
    outside = tmp_path / "outside"
    (target / "src").rename(outside)
    (target / "src").symlink_to(outside)
    before_target, before_outside = snapshot_tree(target), snapshot_tree(outside)
    result = fork.cli("apply", "--target", target, "--engine", engine, "--format", "json")
    assert result.code == 1
    verdict = result.json()["patches"][0]  # type: ignore[index]
    assert verdict["status"] == "unsafe"
    assert verdict["message"] == (
        f"{APP}: 'src' is a symlinked directory (to {outside}); refusing to write through it"
    )
    assert snapshot_tree(target) == before_target
    assert snapshot_tree(outside) == before_outside


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("where", ["outside", "inside"])
def test_symlinked_leaf_file_is_refused(
    fork: MiniFork, tmp_path: Path, engine: str, where: str
) -> None:
    target = pristine(fork, tmp_path / "target")
    real = (tmp_path / "elsewhere.py") if where == "outside" else (target / "real-app.py")
    (target / APP).rename(real)
    (target / APP).symlink_to(real)  # absolute: a scratch copy would still point at it
    before, real_bytes = snapshot_tree(target), real.read_bytes()
    result = fork.cli("apply", "--target", target, "--engine", engine)
    assert result.code == 1
    assert f"FAILED: {APP}: is a symlink (to {real}); refusing to patch through it" in result.out
    assert snapshot_tree(target) == before
    assert real.read_bytes() == real_bytes


def test_unsafe_path_in_a_later_patch_stops_the_run_before_anything(
    fork: MiniFork, tmp_path: Path
) -> None:
    evil = b"--- a/../escape.txt\n+++ b/../escape.txt\n@@ -0,0 +1 @@\n+owned\n"
    fork.write({**fork.patches, "0004-evil.patch": evil})
    for engine in ENGINES:
        target = pristine(fork, tmp_path / engine)
        before = snapshot_tree(target)
        result = fork.cli("apply", "--target", target, "--engine", engine, "--format", "json")
        assert result.code == 1
        statuses = [(p["patch"], p["status"]) for p in result.json()["patches"]]  # type: ignore[union-attr]
        assert statuses == [("0004-evil.patch", "unsafe")]
        assert snapshot_tree(target) == before
        assert not (tmp_path / "escape.txt").exists()
    verify = fork.cli("verify", "--format", "json")
    assert verify.code == 1
    assert [p["status"] for p in verify.json()["patches"]] == [  # type: ignore[union-attr]
        "exact",
        "exact",
        "exact",
        "unsafe",
    ]


# -- nothing half-done, nothing left behind --------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_failing_second_hunk_leaves_target_identical_and_no_reject(
    builder: RepoBuilder, tmp_path: Path, engine: str
) -> None:
    fork = mini_fork(builder, {APP: BASE})
    two = edit_line(edit_line(BASE, "line 5", "line 5 a"), "line 35", "line 35 b")
    fork.write({A: patch_of(builder, "v1", writes({APP: two}))})
    # Hunk 2 no longer matches: the target's line 35 differs from the pinned tree.
    target = pristine(fork, tmp_path / "target")
    (target / APP).write_text(edit_line(BASE, "line 35", "line 35 local"))
    before = snapshot_tree(target)
    result = fork.cli("apply", "--target", target, "--engine", engine, "--format", "json")
    assert result.code == 1
    verdict = result.json()["patches"][0]  # type: ignore[index]
    assert (verdict["status"], verdict["file"], verdict["hunk"]) == ("fails", APP, 2)
    assert snapshot_tree(target) == before
    assert stray_names(target) == []


@pytest.mark.parametrize("engine", ENGINES)
def test_leftover_reject_in_target_refuses_the_run(
    fork: MiniFork, tmp_path: Path, engine: str
) -> None:
    target = pristine(fork, tmp_path / "target")
    (target / "src" / "app.py.rej").write_text("from an earlier botched build\n")
    before = snapshot_tree(target)
    result = fork.cli("apply", "--target", target, "--engine", engine)
    assert result.code == 1
    assert "leftover files already in the target: src/app.py.rej" in result.out
    assert snapshot_tree(target) == before


@pytest.mark.parametrize("engine", ENGINES)
def test_dry_run_writes_nothing(fork: MiniFork, tmp_path: Path, engine: str) -> None:
    target = pristine(fork, tmp_path / "target")
    before = snapshot_tree(target)
    result = fork.cli("apply", "--target", target, "--engine", engine, "--dry-run")
    assert result.code == 0
    assert snapshot_tree(target) == before


@pytest.mark.parametrize("engine", ENGINES)
def test_second_apply_is_refused_and_changes_nothing(
    fork: MiniFork, tmp_path: Path, engine: str
) -> None:
    target = pristine(fork, tmp_path / "target")
    assert fork.cli("apply", "--target", target, "--engine", engine).code == 0
    assert (target / APP).read_text() == applied_text(A, B)
    once = snapshot_tree(target)
    again = fork.cli("apply", "--target", target, "--engine", engine, "--format", "json")
    assert again.code == 1
    first = again.json()["patches"][0]  # type: ignore[index]
    assert first["status"] == "fails"
    assert str(first["message"]).startswith("already applied: ")
    assert snapshot_tree(target) == once
    assert stray_names(target) == []


# -- fail closed on missing or empty input ---------------------------------------------


def test_missing_series_file_is_an_error(fork: MiniFork, tmp_path: Path) -> None:
    target = pristine(fork, tmp_path / "target")
    before = snapshot_tree(target)
    (fork.root / "series").unlink()
    for args in (
        ["apply", "--target", str(target)],
        ["apply", "--target", str(target), "--verify"],
    ):
        result = fork.cli(*args)
        assert result.code == 2
        assert result.error_lines[0] == "error: series: no such file (the patch series)"
    assert fork.cli("verify").code == 2
    assert snapshot_tree(target) == before


def test_missing_patch_file_is_an_error(fork: MiniFork, tmp_path: Path) -> None:
    target = pristine(fork, tmp_path / "target")
    before = snapshot_tree(target)
    (fork.root / "patches" / B).unlink()
    for args in (["apply", "--target", str(target)], ["verify"]):
        result = fork.cli(*args)
        assert result.code == 2
        assert result.error_lines[0] == (
            f"error: series:2: names '{B}' but patches/{B} does not exist"
        )
    assert snapshot_tree(target) == before


@pytest.mark.parametrize("engine", ENGINES)
def test_empty_patch_is_a_no_op_with_a_notice(fork: MiniFork, tmp_path: Path, engine: str) -> None:
    # quilt and dpkg-source apply a 0-byte patch as a no-op; so does every engine here.
    fork.write({**fork.patches, B: b""})
    target = pristine(fork, tmp_path / "target")
    result = fork.cli("apply", "--target", target, "--engine", engine, "--format", "json")
    assert result.code == 0, result.out
    verdicts = {p["patch"]: p for p in result.json()["patches"]}  # type: ignore[union-attr]
    assert verdicts[B] == {"patch": B, "status": "exact", "message": EMPTY_NOTE, "hunks": []}
    verify = fork.cli("verify", "--format", "json")
    assert verify.code == 0, verify.out
    notes = {p["patch"]: p["message"] for p in verify.json()["patches"]}  # type: ignore[union-attr]
    assert notes[B] == EMPTY_NOTE and set(notes.values()) == {"", EMPTY_NOTE}


def test_empty_series_is_an_error_never_a_pass(fork: MiniFork, tmp_path: Path) -> None:
    target = pristine(fork, tmp_path / "target")
    fork.write({}, series="# nothing here\n")
    for patch in (fork.root / "patches").iterdir():
        patch.unlink()
    for extra in ([], ["--verify"], ["--except", A]):
        result = fork.cli("apply", "--target", target, *extra)
        assert result.code == 2, extra
        assert result.error_lines[0] == (
            "error: series lists no patches: refusing to report an empty series as applied"
        )
    verify = fork.cli("verify", "--format", "json")
    assert verify.code == 1
    assert verify.json()["ok"] is False
    assert verify.json()["message"] == "the series lists no patches: there is nothing to verify"


# -- --verify and --except --------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_verify_target_requires_every_patch(fork: MiniFork, tmp_path: Path, engine: str) -> None:
    target = pristine(fork, tmp_path / "target")
    pristine_check = fork.cli("apply", "--target", target, "--engine", engine, "--verify")
    assert pristine_check.code == 1
    assert fork.cli("apply", "--target", target, "--engine", engine, "--except", B).code == 0
    partial = fork.cli(
        "apply", "--target", target, "--engine", engine, "--verify", "--format", "json"
    )
    assert partial.code == 1
    assert partial.json()["ok"] is False
    assert fork.cli("apply", "--target", target, "--engine", engine, "--except", A).code == 0
    assert fork.cli("apply", "--target", target, "--engine", engine).code == 1  # A is missing
    fresh = pristine(fork, tmp_path / "fresh")
    assert fork.cli("apply", "--target", fresh, "--engine", engine).code == 0
    full = fork.cli("apply", "--target", fresh, "--engine", engine, "--verify", "--format", "json")
    assert full.code == 0
    assert full.json()["message"] == "the target carries exactly the 3 patches of the series"


@pytest.mark.parametrize("engine", ENGINES)
def test_except_blames_the_arm_when_a_later_patch_is_exact_only_on_the_left_out_one(
    builder: RepoBuilder, tmp_path: Path, engine: str
) -> None:
    """The first patch adds lines above the second's: without it the second applies only
    at an offset. The patch is exact in the series, so refreshing it changes nothing;
    the message says the arm cannot be built (Debian's openssh, --except gssapi.patch)."""
    fork = mini_fork(builder, {"f.txt": numbered(30)})
    grown = edit_line(numbered(30), "line 2", "line 2\nadded a\nadded b")
    one = patch_of(builder, "v1", writes({"f.txt": grown}))
    two_base = side_commit(builder, "v1", writes({"f.txt": grown}))
    two = patch_of(builder, two_base, writes({"f.txt": grown.replace("line 25", "25!")}))
    fork.write({"0001-one.patch": one, "0002-two.patch": two})
    assert fork.cli("verify").code == 0
    target = pristine(fork, tmp_path / "t")
    result = fork.cli(
        "apply", "--target", target, "--engine", engine, "--except", "0001-one.patch",
        "--format", "json",
    )  # fmt: skip
    assert result.code == 1
    message = str(result.json()["message"])
    assert message.startswith("0002-two.patch: f.txt: hunk 1 applies only at offset -2")
    assert message.endswith(
        "with 0001-one.patch left out: this arm cannot be built (the patch is exact only "
        "on top of the left-out one); the target was not changed"
    )
    assert "refresh" not in message
    assert (target / "f.txt").read_text() == numbered(30)


@pytest.mark.parametrize("engine", ENGINES)
def test_except_never_inherits_a_previous_arm(fork: MiniFork, tmp_path: Path, engine: str) -> None:
    target = pristine(fork, tmp_path / "target")
    util_base = (target / "src/util.py").read_text()
    assert fork.cli("apply", "--target", target, "--engine", engine).code == 0
    arm_a = fork.cli("apply", "--target", target, "--engine", engine, "--except", A)
    assert arm_a.code == 0, arm_a.out
    assert (target / APP).read_text() == applied_text(B)
    arm_b = fork.cli(
        "apply", "--target", target, "--engine", engine, "--except", B, "--format", "json"
    )
    assert arm_b.code == 0, arm_b.out
    assert arm_b.json()["state"] == {A: "absent", B: "applied", C: "applied"}
    assert (target / APP).read_text() == applied_text(A)
    assert (target / "src/util.py").read_text() == util_base + "more\n"
    # The same arm from a pristine directory gives the same bytes.
    fresh = pristine(fork, tmp_path / "fresh")
    assert fork.cli("apply", "--target", fresh, "--engine", engine, "--except", B).code == 0
    assert snapshot_tree(fresh) == snapshot_tree(target)
    assert stray_names(target) == []


def test_except_with_an_unknown_patch_is_exit_2(fork: MiniFork, tmp_path: Path) -> None:
    target = pristine(fork, tmp_path / "target")
    before = snapshot_tree(target)
    result = fork.cli("apply", "--target", target, "--except", "0009-nope.patch")
    assert result.code == 2
    assert result.error_lines[0] == "error: '0009-nope.patch' is not in the series"
    assert snapshot_tree(target) == before


def test_except_refuses_a_target_in_an_unknown_state(fork: MiniFork, tmp_path: Path) -> None:
    target = pristine(fork, tmp_path / "target")
    (target / APP).write_text(edit_line(BASE, "line 30", "line 30 local"))
    before = snapshot_tree(target)
    result = fork.cli("apply", "--target", target, "--except", A)
    assert result.code == 1
    assert f"{B}: the target is in an unknown state" in result.out
    assert snapshot_tree(target) == before


# -- verify: the JSON contract and a byte-identical repository -------------------------


def test_verify_json_has_exactly_the_documented_shape(fork: MiniFork) -> None:
    result = fork.cli("verify", "--format", "json")
    assert result.code == 0
    data = json.loads(result.out)
    assert set(data) == {"base", "base_commit", "ok", "round_trip", "rule", "patches"}
    assert (data["base"], data["ok"], data["round_trip"]) == ("v1", True, True)
    assert data["base_commit"] == fork.repo.rev("v1")
    assert data["patches"] == [
        {
            "patch": A,
            "status": "exact",
            "message": "",
            "hunks": [{"file": APP, "line": 2, "offset": 0}],
        },
        {
            "patch": B,
            "status": "exact",
            "message": "",
            "hunks": [{"file": APP, "line": 27, "offset": 0}],
        },
        {
            "patch": C,
            "status": "exact",
            "message": "",
            "hunks": [{"file": "src/util.py", "line": 8, "offset": 0}],
        },
    ]


def test_failing_verify_leaves_the_repository_byte_identical(fork: MiniFork) -> None:
    stale = patch_of(fork.repo, "v1", writes({APP: edit_line(BASE, "line 5", "line 5 z")}))
    fork.write({**fork.patches, "0004-conflict.patch": stale})
    before = snapshot_tree(fork.root)
    result = fork.cli("verify", "--format", "json")
    assert result.code == 1
    assert [p["status"] for p in result.json()["patches"]] == ["exact", "exact", "exact", "fails"]  # type: ignore[union-attr]
    assert snapshot_tree(fork.root) == before


def test_target_inside_a_git_checkout_is_still_a_plain_directory(
    fork: MiniFork, tmp_path: Path
) -> None:
    target = fork.root / "vendor"
    target.mkdir()
    (target / "src").mkdir()
    (target / APP).write_text(BASE)
    (target / "src/util.py").write_text(numbered(10, "util"))
    git_dir_before = snapshot_tree(fork.root / ".git")
    assert fork.cli("apply", "--target", target).code == 0
    assert (target / APP).read_text() == applied_text(A, B)
    assert snapshot_tree(fork.root / ".git") == git_dir_before
    assert os.listdir(target) == ["src"]


@pytest.mark.parametrize("engine", ENGINES)
def test_except_from_a_pristine_tree_applies_patches_that_build_on_each_other(
    builder: RepoBuilder, tmp_path: Path, engine: str
) -> None:
    """The second patch changes what the first made: on a pristine tree it applies only
    once the first has, so the peeling asks nothing of a patch that is not there
    (Debian's bzip2, pcre3, readline: every arm failed as "an unknown state")."""
    fork = mini_fork(builder, {"f.txt": numbered(12)})
    first = edit_line(numbered(12), "line 6", "six")
    one = patch_of(builder, "v1", writes({"f.txt": first}))
    two_base = side_commit(builder, "v1", writes({"f.txt": first}))
    two = patch_of(builder, two_base, writes({"f.txt": first.replace("six", "SIX")}))
    fork.write({"0001-one.patch": one, "0002-two.patch": two})
    for left_out, text in (("0002-two.patch", first), ("0001-one.patch", None)):
        target = pristine(fork, tmp_path / left_out)
        result = fork.cli(
            "apply",
            "--target",
            target,
            "--engine",
            engine,
            "--except",
            left_out,
            "--format",
            "json",
        )
        if text is None:  # the second cannot go on without the first: refused, unchanged
            assert result.code == 1
            assert "with 0001-one.patch left out: this arm cannot be built" in str(
                result.json()["message"]
            )
            assert (target / "f.txt").read_text() == numbered(12)
        else:
            assert result.code == 0, result.out
            assert (target / "f.txt").read_text() == text
            assert (
                fork.cli(
                    "apply",
                    "--target",
                    target,
                    "--engine",
                    engine,
                    "--verify",
                    "--except",
                    left_out,
                ).code
                == 0
            )


def test_except_keeps_the_exact_rule_and_says_so(builder: RepoBuilder, tmp_path: Path) -> None:
    fork = mini_fork(builder, {"f.txt": numbered(20)})
    made_on = side_commit(builder, "v1", writes({"f.txt": "header\n" * 3 + numbered(20)}))
    shifted = patch_of(
        builder, made_on, writes({"f.txt": "header\n" * 3 + edit_line(numbered(20), "line 9", "x")})
    )
    other = patch_of(builder, "v1", writes({"f.txt": edit_line(numbered(20), "line 18", "y")}))
    fork.write(
        {"0001-shifted.patch": shifted, "0002-other.patch": other},
        extra_config="apply_rule: dpkg\n",
    )
    target = pristine(fork, tmp_path / "t")
    assert fork.cli("apply", "--target", target).code == 0  # the fork's rule takes the offset
    result = fork.cli("apply", "--target", target, "--except", "0002-other.patch")
    assert result.code == 1
    assert "--except keeps the exact rule" in result.out


# A block that ends as its own leading context does: once applied, the patch applies
# again just below its own copy, at an offset (Debian's krb5 0006-Add-substpdf-target).
SELF_SIMILAR = "".join(f"line {n}\n" for n in range(1, 9)) + "c1\nc2\nc3\nt1\nt2\nt3\n"
TWICE = SELF_SIMILAR.replace("c3\nt1\n", "c3\nnew\nc1\nc2\nc3\nt1\n")


@pytest.mark.parametrize("rule", ["dpkg", "exact"])
def test_verify_refuses_a_patch_that_is_there_already_and_applies_again_at_an_offset(
    builder: RepoBuilder, rule: str
) -> None:
    fork = mini_fork(builder, {"f.txt": SELF_SIMILAR})
    patch = patch_of(builder, "v1", writes({"f.txt": TWICE}))
    builder.commit("upstream: the same change\n", {"f.txt": TWICE})
    builder.tag("v2")
    fork.write({"0001-twice.patch": patch}, extra_config=f"apply_rule: {rule}\n")
    assert fork.cli("verify").code == 0
    result = fork.cli("verify", "--base", "v2", "--format", "json")
    assert result.code == 1, result.out
    (entry,) = result.json()["patches"]  # type: ignore[misc]
    assert (entry["status"], entry["file"], entry["hunk"], entry["hunks"]) == (
        "fails",
        "f.txt",
        1,
        [],
    )
    assert str(entry["message"]).startswith(
        "already applied: the change is there (it reverse-applies); forward it applies only "
        "at an offset, which would make it twice: f.txt: hunk 1 applies only at offset +4"
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_apply_refuses_a_patch_the_target_has_that_would_go_on_twice(
    builder: RepoBuilder, tmp_path: Path, engine: str
) -> None:
    fork = mini_fork(builder, {"f.txt": SELF_SIMILAR})
    fork.write(
        {"0001-twice.patch": patch_of(builder, "v1", writes({"f.txt": TWICE}))},
        extra_config="apply_rule: dpkg\n",
    )
    target = tmp_path / "t"
    target.mkdir()
    (target / "f.txt").write_text(TWICE)
    result = fork.cli("apply", "--target", target, "--engine", engine, "--format", "json")
    assert result.code == 1, result.out
    assert str(result.json()["message"]).startswith("0001-twice.patch: already applied:")
    assert (target / "f.txt").read_text() == TWICE
