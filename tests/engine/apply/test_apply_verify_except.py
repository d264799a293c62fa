"""``apply --verify --except P``: proves a directory is exactly "every patch but P",
with P absent, not merely unchecked (what a minus arm's gate relies on)."""

from __future__ import annotations

from pathlib import Path

import pytest
from testing.apply_support import pristine
from testing.helpers import MiniFork, snapshot_tree
from testing.safety_fork import ENGINES, A, B, C


@pytest.fixture
def fork(safety_fork: MiniFork) -> MiniFork:
    """This module's fork: the shared ``safety_fork`` (tests/testing/)."""
    return safety_fork


def verify_except(fork: MiniFork, target: Path, engine: str, patch: str) -> dict[str, object]:
    result = fork.cli(
        "apply", "--target", target, "--engine", engine, "--verify", "--except", patch,
        "--format", "json",
    )  # fmt: skip
    assert result.code in (0, 1), result.err
    return {"code": result.code, **result.json()}


def verdicts(result: dict[str, object]) -> dict[str, tuple[str, str]]:
    return {p["patch"]: (p["status"], p["message"]) for p in result["patches"]}  # type: ignore[attr-defined]


@pytest.mark.parametrize("engine", ENGINES)
def test_verify_except_passes_exactly_the_minus_state(
    fork: MiniFork, tmp_path: Path, engine: str
) -> None:
    target = pristine(fork, tmp_path / "target")
    assert fork.cli("apply", "--target", target, "--except", B).code == 0
    before = snapshot_tree(target)
    result = verify_except(fork, target, engine, B)
    assert result["code"] == 0, result
    assert result["message"] == f"the target carries exactly the series except {B}"
    assert (result["mode"], result["excluded"]) == ("verify", [B])
    statuses = verdicts(result)
    assert statuses[B] == ("exact", "absent (--except): it applies on the rest")
    assert statuses[A][0] == statuses[C][0] == "exact"
    assert snapshot_tree(target) == before


@pytest.mark.parametrize("engine", ENGINES)
def test_verify_except_fails_when_the_left_out_patch_is_present(
    fork: MiniFork, tmp_path: Path, engine: str
) -> None:
    target = pristine(fork, tmp_path / "target")
    assert fork.cli("apply", "--target", target).code == 0
    result = verify_except(fork, target, engine, B)
    assert result["code"] == 1
    assert result["message"] == f"the target is not the series without {B}"
    assert verdicts(result)[B] == ("fails", "present, though --except says it is left out")


@pytest.mark.parametrize("engine", ENGINES)
def test_verify_except_fails_when_another_patch_is_missing(
    fork: MiniFork, tmp_path: Path, engine: str
) -> None:
    target = pristine(fork, tmp_path / "target")
    assert fork.cli("apply", "--target", target, "--except", A).code == 0
    result = verify_except(fork, target, engine, B)
    assert result["code"] == 1
    assert result["message"] == "the target does not carry the series' other patches exactly"
