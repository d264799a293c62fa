"""The documented CI integrations run the commands the tests run.

Every ``forktool ...`` command line in the example workflows, the composite action and
the pre-commit hook is extracted and run against the example fork.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml
from testing.helpers import run_cli

from forktool.builder import RepoBuilder

ROOT = Path(__file__).resolve().parents[2]


def _run_blocks(workflow: dict[str, object]) -> list[str]:
    runs = workflow.get("runs")
    if isinstance(runs, dict):  # a composite action
        steps = runs.get("steps", [])
    else:
        jobs = workflow.get("jobs", {})
        assert isinstance(jobs, dict)
        steps = [step for job in jobs.values() for step in job.get("steps", [])]
    return [str(step["run"]) for step in steps if isinstance(step, dict) and "run" in step]


def forktool_commands(path: Path) -> list[list[str]]:
    """Every forktool invocation in a workflow file, as argv (shell syntax stripped)."""
    workflow = yaml.safe_load(path.read_text())
    commands = []
    for block in _run_blocks(workflow):
        for line in block.splitlines():
            line = line.strip()
            if not line.startswith("forktool "):
                continue
            line = line.split(" >> ")[0].split(" > ")[0].split(" || ")[0]
            commands.append(shlex.split(line)[1:])
    return commands


def _expand(argv: list[str], env: dict[str, str]) -> list[str]:
    out = []
    for word in argv:
        if word == "$FORKTOOL_ARGS":
            continue
        for key, value in env.items():
            word = word.replace(f"${key}", value)
        out.append(word)
    return out


def test_every_documented_workflow_names_forktool_commands() -> None:
    assert forktool_commands(ROOT / "docs/workflows/pr-gate.yml") == [
        ["check", "--format", "github"],
        ["check", "--format", "junit"],
    ]
    assert forktool_commands(ROOT / "docs/workflows/nightly-sync.yml") == [
        ["upstream", "poll", "--forecast", "--format", "json"],
        ["forecast", "--no-fetch", "--format", "markdown"],
        ["forecast", "--no-fetch", "--format", "html"],
        ["sync", "$TAG", "--format", "markdown"],
    ]
    assert forktool_commands(ROOT / "action.yml") == [
        ["check", "--format", "github", "$FORKTOOL_ARGS"]
    ]
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert [h["entry"] for h in hooks] == ["forktool check"]


@pytest.mark.parametrize("source", ["docs/workflows/pr-gate.yml", "action.yml"])
def test_gate_commands_pass_on_the_example_fork(example_fork: RepoBuilder, source: str) -> None:
    for argv in forktool_commands(ROOT / source):
        result = run_cli("-C", example_fork.path, *_expand(argv, {}))
        assert result.code == 0, (argv, result.out, result.err)


def test_precommit_hook_entry_passes_on_the_example_fork(example_fork: RepoBuilder) -> None:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    argv = shlex.split(hooks[0]["entry"])[1:]
    assert run_cli("-C", example_fork.path, *argv).code == 0


def test_nightly_sync_commands_work_on_the_example_fork(example_fork: RepoBuilder) -> None:
    poll_argv, markdown_argv, html_argv, sync_argv = forktool_commands(
        ROOT / "docs/workflows/nightly-sync.yml"
    )
    run_git = example_fork.git.run
    run_git(["config", "user.name", "forktool sync"], purpose="identity")
    run_git(["config", "user.email", "forktool-sync@users.noreply.example"], purpose="identity")
    poll = run_cli("-C", example_fork.path, *poll_argv)
    assert poll.code == 3, poll.out  # a clean plan: v1.3.0 absorbs every upstream fix
    tag = str(poll.json()["newest"])
    assert tag == "v1.3.0"
    forecast = poll.json()["forecast"]
    assert [t["ref"] for t in forecast["targets"]] == ["v1.1.1rc0", "v1.2.0", "v1.3.0rc0", tag]  # type: ignore[index]
    summary = run_cli("-C", example_fork.path, *markdown_argv)
    assert summary.code == 0 and summary.out.startswith("## Forecast from v1.1.0\n")
    page = run_cli("-C", example_fork.path, *html_argv)
    assert page.code == 0 and page.out.startswith("<!DOCTYPE html>")
    sync = run_cli("-C", example_fork.path, *_expand(sync_argv, {"TAG": tag}))
    assert sync.code == 0, sync.out
    assert sync.out.startswith(f"# Sync: v1.1.0 → {tag}\n")
    assert "## Check: passed" in sync.out
    assert example_fork.git.branch_commit(f"forktool/sync-{tag}") is not None
