"""The second witness: leave-one-out probe results combined with ancestry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from testing.helpers import run_cli

from forktool.builder import RepoBuilder
from forktool.engine.retirement.absorbed import combine

P1 = "0001-config-do-not-crash-on-an-empty-config-file.patch"
P2 = "0002-engine-retry-on-timeout.patch"
P3 = "0003-engine-decode-input-as-UTF-8.patch"
P4 = "0004-fork-identify-the-fork-s-builds.patch"

# (ancestry verdict, full series, arm without the patch) -> outcome: the table in
# docs/retirement.md, every row.
TABLE = [
    ("retire", "pass", "pass", "retired"),
    ("keep", "pass", "pass", "probe-blind"),
    ("revisit", "pass", "pass", "retirement-unconfirmed"),
    ("fork-only", "pass", "pass", "retirement-unconfirmed"),
    ("retire", "pass", "fail", "still-required"),
    ("keep", "pass", "fail", "still-required"),
    ("revisit", "pass", "fail", "still-required"),
    ("fork-only", "pass", "fail", "still-required"),
    ("retire", "fail", "pass", "now-harmful"),
    ("keep", "fail", "pass", "now-harmful"),
    ("revisit", "fail", "pass", "now-harmful"),
    ("fork-only", "fail", "pass", "now-harmful"),
    ("retire", "fail", "fail", "broken-on-tag"),
    ("keep", "fail", "fail", "broken-on-tag"),
    ("revisit", "fail", "fail", "broken-on-tag"),
    ("fork-only", "fail", "fail", "broken-on-tag"),
]


@pytest.mark.parametrize(("verdict", "full", "arm", "outcome"), TABLE)
def test_probe_table(verdict: str, full: str, arm: str, outcome: str) -> None:
    assert combine(verdict, full, arm)[0] == outcome  # type: ignore[arg-type]


def _probe(tmp_path: Path, doc: object) -> Path:
    path = tmp_path / "arms.json"
    path.write_text(json.dumps(doc))
    return path


def _outcomes(result_json: dict[str, object]) -> list[tuple[str, str, str]]:
    return [
        (p["verdict"], p["probe"]["arm"], p["probe"]["outcome"])  # type: ignore[index]
        for p in result_json["patches"]  # type: ignore[attr-defined]
    ]


def test_probe_agreeing_blind_and_required(example_fork: RepoBuilder, tmp_path: Path) -> None:
    probe = _probe(
        tmp_path,
        {
            "tag": "v1.2.0",
            "full": "pass",
            "arms": {P1: "pass", P2: "pass", P3: "fail", P4: "fail"},
        },
    )
    result = run_cli(
        "-C",
        example_fork.path,
        "absorbed",
        "--tag",
        "v1.2.0",
        "--probe-results",
        probe,
        "--format",
        "json",
    )
    assert result.code == 0, result.err
    data = result.json()
    assert data["probe"] == {"full": "pass"}
    assert _outcomes(data) == [
        ("retire", "pass", "retired"),
        ("keep", "pass", "probe-blind"),
        ("revisit", "fail", "still-required"),
        ("fork-only", "fail", "still-required"),
    ]
    blind = data["patches"][1]["probe"]  # type: ignore[index]
    assert blind["detail"] == (
        "the probe passes without the patch but the tag does not contain the fix: "
        "keep it, and fix the probe so it exercises the change"
    )


def test_harmful_and_broken_exit_1(example_fork: RepoBuilder, tmp_path: Path) -> None:
    probe = _probe(
        tmp_path, {"full": "fail", "arms": {P1: "pass", P2: "fail", P3: "fail", P4: "fail"}}
    )
    result = run_cli(
        "-C",
        example_fork.path,
        "absorbed",
        "--tag",
        "v1.2.0",
        "--probe-results",
        probe,
        "--format",
        "json",
    )
    assert result.code == 1
    assert _outcomes(result.json()) == [
        ("retire", "pass", "now-harmful"),
        ("keep", "fail", "broken-on-tag"),
        ("revisit", "fail", "broken-on-tag"),
        ("fork-only", "fail", "broken-on-tag"),
    ]
    text = run_cli("-C", example_fork.path, "absorbed", "--tag", "v1.2.0", "--probe-results", probe)
    assert text.code == 1
    assert "now-harmful" in text.out


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"full": "pass", "arms": {P1: "pass", P2: "pass", P4: "pass"}}, f"no arm for '{P3}'"),
        (
            {
                "full": "pass",
                "arms": {P1: "pass", P2: "pass", P3: "pass", P4: "pass", "0009-x.patch": "fail"},
            },
            "arm '0009-x.patch' is not in the series",
        ),
        ({"full": "ok", "arms": {}}, '\'full\' must be "pass" or "fail", not "ok"'),
        ({"full": "pass", "arms": {P1: True}}, f'arm \'{P1}\' must be "pass" or "fail", not true'),
        ({"arms": {}}, "missing key 'full'"),
        (
            {
                "tag": "v1.3.0",
                "full": "pass",
                "arms": {P1: "pass", P2: "pass", P3: "pass", P4: "pass"},
            },
            "the probe ran on 'v1.3.0', not on 'v1.2.0'",
        ),
        ([1, 2], "expected a JSON object with full, arms, patchless, tag"),
        ({"full": "pass", "arms": {}, "ran_on": "ci"}, "unknown key(s) ran_on"),
    ],
)
def test_bad_probe_results_are_exit_2(
    example_fork: RepoBuilder, tmp_path: Path, doc: object, message: str
) -> None:
    probe = _probe(tmp_path, doc)
    result = run_cli(
        "-C", example_fork.path, "absorbed", "--tag", "v1.2.0", "--probe-results", probe
    )
    assert result.code == 2
    assert result.error_lines[0] == f"error: {probe}: {message}"
    assert result.out == ""


def test_probe_file_that_is_not_json_is_exit_2(example_fork: RepoBuilder, tmp_path: Path) -> None:
    probe = tmp_path / "arms.json"
    probe.write_text("{not json")
    result = run_cli(
        "-C", example_fork.path, "absorbed", "--tag", "v1.2.0", "--probe-results", probe
    )
    assert result.code == 2
    assert result.error_lines[0].startswith(f"error: {probe}: not valid JSON: ")


def test_one_results_file_serves_arms_check_and_absorbed(
    example_fork: RepoBuilder, tmp_path: Path
) -> None:
    """The file `arms --check --results` reads is the file `absorbed --probe-results`
    reads: the same keys (including `patchless` and `tag`) are accepted by both."""
    doc = {
        "tag": "v1.2.0",
        "full": "pass",
        "arms": {P1: "fail", P2: "pass", P3: "fail", P4: "fail"},
        "patchless": "fail",
    }
    path = _probe(tmp_path, doc)
    arms = run_cli("-C", example_fork.path, "arms", "--check", "--results", path)
    assert arms.code == 0, arms.err
    absorbed = run_cli(
        "-C", example_fork.path, "absorbed", "--tag", "v1.2.0", "--probe-results", path
    )
    assert absorbed.code in (0, 1), absorbed.err
    assert absorbed.err == ""
