"""The CI gate: one verdict, fail-closed, and every output format parses back."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from testing.helpers import run_cli, snapshot_tree

from forktool.builder import RepoBuilder
from forktool.engine.release.check import check_ids

P2 = "0002-engine-retry-on-timeout.patch"
ANNOTATION = re.compile(r"^::(error|warning|notice)( [a-z]+=[^,:]*(,[a-z]+=[^,:]*)*)?::.*$")


def _break_p2_with_an_offset(root: Path) -> None:
    """Shift 0002's hunk header by two lines: it then applies only at an offset."""
    path = root / "patches" / P2
    text = path.read_text()
    path.write_text(text.replace("@@ -96,10 +96,15 @@", "@@ -94,10 +94,15 @@"))


def test_check_passes_on_the_example_fork_and_changes_nothing(example_fork: RepoBuilder) -> None:
    before = snapshot_tree(example_fork.path)
    result = run_cli("-C", example_fork.path, "check", "--format", "json")
    assert result.code == 0, result.out
    data = result.json()
    assert data["ok"] is True
    assert [c["id"] for c in data["checks"]] == [
        "files",
        "pin",
        "apply",
        "format",
        "pins",
        "align",
        "history",
        "record",
    ]  # type: ignore[index]
    assert snapshot_tree(example_fork.path) == before


def test_offset_patch_fails_the_gate_with_file_and_line(example_fork: RepoBuilder) -> None:
    _break_p2_with_an_offset(example_fork.path)
    result = run_cli("-C", example_fork.path, "check", "--format", "json")
    assert result.code == 1
    checks = {c["id"]: c for c in result.json()["checks"]}  # type: ignore[union-attr]
    assert checks["apply"]["ok"] is False
    [finding] = checks["apply"]["findings"]
    assert finding["path"] == f"patches/{P2}"
    assert finding["line"] == 18
    assert finding["message"].startswith(
        "offset: pulse/engine.py: hunk 1 applies only at offset +2"
    )


def test_missing_series_is_a_finding_not_a_pass(example_fork: RepoBuilder) -> None:
    (example_fork.path / "series").unlink()
    result = run_cli("-C", example_fork.path, "check", "--format", "json")
    assert result.code == 1
    checks = {c["id"]: c for c in result.json()["checks"]}  # type: ignore[union-attr]
    assert checks["files"]["findings"][0]["message"] == "series: no such file (the patch series)"
    assert checks["apply"]["ok"] is False


def test_empty_series_is_a_finding_not_a_pass(example_fork: RepoBuilder) -> None:
    root = example_fork.path
    (root / "series").write_text("# nothing\n")
    (root / "upstream.map").write_text("")
    for patch in (root / "patches").glob("*.patch"):
        patch.unlink()
    result = run_cli("-C", root, "check", "--format", "json")
    assert result.code == 1
    checks = {c["id"]: c for c in result.json()["checks"]}  # type: ignore[union-attr]
    assert checks["apply"]["findings"][0]["message"] == (
        "the series lists no patches: there is nothing to verify"
    )


def test_retired_patch_still_in_series_fails_record_check(example_fork: RepoBuilder) -> None:
    root = example_fork.path
    fork_md = root / "FORK.md"
    row = f"| 2026-01-01 | retired | {P2} | - | {'7' * 40} | v1.3.0rc0 | v1.3.0 | ancestry |\n"
    fork_md.write_text(
        fork_md.read_text().replace(
            "<!-- forktool:retirement-record:end -->",
            row + "<!-- forktool:retirement-record:end -->",
        )
    )
    result = run_cli("-C", root, "check", "--only", "record", "--format", "json")
    assert result.code == 1
    [check] = result.json()["checks"]  # type: ignore[misc]
    assert check["findings"][0]["message"] == (
        f"'{P2}' was retired (see FORK.md) but is still in the series"
    )
    assert check["findings"][0]["path"] == "series"


def test_junit_is_valid_xml_with_one_case_per_check(example_fork: RepoBuilder) -> None:
    _break_p2_with_an_offset(example_fork.path)
    result = run_cli("-C", example_fork.path, "check", "--format", "junit")
    assert result.code == 1
    root = ET.fromstring(result.out)
    suite = root.find("testsuite")
    assert suite is not None
    assert suite.get("tests") == "8" and suite.get("failures") == "2"
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert set(cases) == {"files", "pin", "apply", "format", "pins", "align", "history", "record"}
    failure = cases["apply"].find("failure")
    assert failure is not None and "offset" in (failure.get("message") or "")
    assert cases["files"].find("failure") is None


def test_github_annotations_follow_workflow_command_syntax(example_fork: RepoBuilder) -> None:
    _break_p2_with_an_offset(example_fork.path)
    result = run_cli("-C", example_fork.path, "check", "--format", "github")
    assert result.code == 1
    lines = result.out.splitlines()
    annotations = [line for line in lines if line.startswith("::")]
    assert annotations, result.out
    for line in annotations:
        assert ANNOTATION.match(line), line
    assert annotations[0].startswith(
        f"::error file=patches/{P2},line=18,title=forktool apply::offset"
    )
    assert lines[-1] == "forktool check: FAILED"


def test_markdown_summary(example_fork: RepoBuilder) -> None:
    _break_p2_with_an_offset(example_fork.path)
    result = run_cli("-C", example_fork.path, "check", "--format", "markdown")
    assert result.out.startswith("## ❌ forktool check failed\n")
    assert "| `apply` exact apply and round trip | **failed** | 1 |" in result.out
    assert f"- **error** [apply] `patches/{P2}:18` offset:" in result.out


def test_only_and_skip_select_checks(example_fork: RepoBuilder) -> None:
    result = run_cli("-C", example_fork.path, "check", "--skip", "apply", "--format", "json")
    assert [c["id"] for c in json.loads(result.out)["checks"]] == [
        "files",
        "pin",
        "format",
        "pins",
        "align",
        "history",
        "record",
    ]
    bad = run_cli("-C", example_fork.path, "check", "--only", "nope")
    assert bad.code == 2
    assert bad.error_lines[0] == "error: unknown check 'nope'"


NOTHING_RAN = "no check ran: every selected check was skipped or none was selected"


@pytest.mark.parametrize(
    "selection",
    [
        ("--only", "history"),  # skipped: the fork has no history.branch
        ("--only", "files", "--skip", "files"),  # none selected
        tuple(arg for check in check_ids() for arg in ("--skip", check)),
    ],
)
def test_a_gate_where_no_check_ran_fails_in_every_format(
    example_fork: RepoBuilder, selection: tuple[str, ...]
) -> None:
    root = example_fork.path
    text = run_cli("-C", root, "check", *selection)
    assert text.code == 1
    assert "all checks passed" not in text.out
    assert text.out.splitlines()[-1] == f"FAILED: {NOTHING_RAN}"
    data = run_cli("-C", root, "check", *selection, "--format", "json")
    assert data.code == 1
    assert data.json()["ok"] is False and data.json()["ran"] == 0  # type: ignore[index]
    assert data.json()["failure"] == NOTHING_RAN  # type: ignore[index]
    github = run_cli("-C", root, "check", *selection, "--format", "github")
    assert github.code == 1
    assert github.out.splitlines()[-2:] == [
        f"::error title=forktool gate::{NOTHING_RAN}",
        f"forktool check: FAILED: {NOTHING_RAN}",
    ]
    junit = run_cli("-C", root, "check", *selection, "--format", "junit")
    assert junit.code == 1
    suite = ET.fromstring(junit.out).find("testsuite")
    assert suite is not None and suite.get("failures") == "1"
    gate = suite.find("testcase[@name='gate']/failure")
    assert gate is not None and gate.get("message") == NOTHING_RAN
    markdown = run_cli("-C", root, "check", *selection, "--format", "markdown")
    assert markdown.code == 1
    assert markdown.out.startswith("## ❌ forktool check failed\n")
    assert f"**failed**: {NOTHING_RAN}" in markdown.out


def test_history_check_runs_only_for_forks_that_export_from_commits(
    example_fork: RepoBuilder,
) -> None:
    skipped = run_cli("-C", example_fork.path, "check", "--only", "history", "--format", "json")
    [check] = skipped.json()["checks"]  # type: ignore[misc]
    assert check["skipped"].startswith("the fork keeps its patches as files")
    assert skipped.code == 1  # the only check selected did not run: the gate proves nothing
    with (example_fork.path / "forktool.yaml").open("a") as config:
        config.write("history:\n  branch: main\n")
    result = run_cli("-C", example_fork.path, "check", "--only", "history", "--format", "json")
    assert result.code == 1
    [check] = result.json()["checks"]  # type: ignore[misc]
    messages = [f["message"] for f in check["findings"]]
    assert any("Upstream-Merge" in m for m in messages), messages


def _without_timings(data: object) -> object:
    if isinstance(data, dict):
        return {k: _without_timings(v) for k, v in data.items() if k != "seconds"}
    if isinstance(data, list):
        return [_without_timings(v) for v in data]
    return data


@pytest.mark.parametrize("offset", [False, True])
def test_the_apply_check_starts_git_at_once_and_answers_as_without(
    example_fork: RepoBuilder, monkeypatch: pytest.MonkeyPatch, offset: bool
) -> None:
    """The apply check's git work starts before the first check reads the fork (as
    verify's does); the gate's answer is the one of a gate that started it later."""
    from forktool.engine.apply import early
    from forktool.engine.release import check

    if offset:
        _break_p2_with_an_offset(example_fork.path)
    started: list[object] = []
    real = early.early_start

    def spy(*args: object, **kwargs: object) -> object:
        started.append(args)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    served: list[bool] = []
    serves = early.EarlyStart.serves

    def used(self: early.EarlyStart, paths: object) -> bool:
        served.append(serves(self, paths))  # type: ignore[arg-type]
        return served[-1]

    monkeypatch.setattr(early, "early_start", spy)
    monkeypatch.setattr(early.EarlyStart, "serves", used)
    at_once = run_cli("-C", example_fork.path, "check", "--format", "json")
    assert len(started) == 1
    assert served == [True]  # the apply check took what was started, not a fresh start
    monkeypatch.setattr(check, "_apply_started", lambda stack, ctx: None)
    later = run_cli("-C", example_fork.path, "check", "--format", "json")
    assert len(started) == 1
    assert at_once.code == later.code == (1 if offset else 0)
    assert _without_timings(at_once.json()) == _without_timings(later.json())


def test_no_apply_check_starts_no_git_early(
    example_fork: RepoBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from forktool.engine.apply import early

    started: list[object] = []
    monkeypatch.setattr(early, "early_start", lambda *a, **k: started.append(a))
    result = run_cli("-C", example_fork.path, "check", "--skip", "apply", "--format", "json")
    assert result.code == 0, result.out
    assert started == []
