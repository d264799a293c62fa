"""The CLI's start-up: 'forktool --help' lists commands from a static table and imports none."""

from __future__ import annotations

import subprocess
import sys
from importlib import import_module
from pathlib import Path

import click
import pytest
from testing.helpers import run_cli
from testing.image_fakes import site_with

import forktool.commands
from forktool.builder import RepoBuilder
from forktool.cli import COMMANDS, command_module
from forktool.demo import DemoUpstream

HEAVY = ("forktool.engine", "forktool.report", "forktool.commands.", "rich", "yaml", "docker")


def modules_after(*args: str) -> list[str]:
    """Every module loaded by ``forktool ARGS``, run in a fresh interpreter."""
    code = (
        "import sys\n"
        "from forktool.cli import run\n"
        f"code = run({list(args)!r})\n"
        "sys.stdout.flush()\n"
        "print('\\n'.join(sorted(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return done.stderr.splitlines()


@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_help_and_version_import_no_command_engine_rich_yaml_or_docker(flag: str) -> None:
    loaded = modules_after(flag)
    assert "forktool.cli" in loaded
    assert [m for m in loaded if m.startswith(HEAVY)] == []


def test_a_commands_own_help_imports_only_that_command() -> None:
    loaded = modules_after("status", "--help")
    commands = [m for m in loaded if m.startswith("forktool.commands.")]
    assert commands == ["forktool.commands.status"]


def test_a_commands_own_help_names_the_config_types_without_pyyaml() -> None:
    """verify's engine names the config's types; PyYAML loads only to parse a file."""
    loaded = modules_after("verify", "--help")
    assert [m for m in loaded if m == "yaml" or m.startswith("yaml.")] == []
    assert "forktool.config.settings" in loaded
    assert "forktool.config.sections" not in loaded


def _first_paragraph(command: click.Command) -> str:
    return " ".join((command.help or "").split("\n\n")[0].split())


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_command_table_matches_the_command_it_names(name: str) -> None:
    command = import_module(command_module(name)).command
    assert command.name == name
    assert _first_paragraph(command) == COMMANDS[name]


def test_every_command_module_is_in_the_table() -> None:
    folder = Path(forktool.commands.__file__).parent
    modules = {f"forktool.commands.{p.stem}" for p in folder.glob("*.py") if p.stem != "__init__"}
    assert modules == {command_module(name) for name in COMMANDS}


def test_help_lists_every_command_with_its_summary() -> None:
    result = run_cli("--help")
    assert result.code == 0
    listed = result.out.split("Commands:\n", 1)[1].splitlines()
    assert [line.split()[0] for line in listed if line.strip()] == sorted(COMMANDS)
    assert "  init           Scaffold a fork's files here, pinned to TAG." in listed


def test_unknown_command_is_a_usage_error() -> None:
    result = run_cli("frobnicate")
    assert result.code == 2
    assert result.error_lines == [
        "error: No such command 'frobnicate'.",
        "hint: run 'forktool --help' for usage",
    ]


def test_relative_paths_resolve_against_dash_c(
    example_fork: RepoBuilder, demo_upstream: DemoUpstream
) -> None:
    site = site_with(demo_upstream, example_fork.path, example_fork)  # inside the fork
    relative = site.relative_to(example_fork.path).as_posix()
    assert not Path(relative).exists()  # not from the working directory of the test
    result = run_cli(
        "-C", example_fork.path, "apply", "--target", relative, "--verify", "--format", "json"
    )
    assert result.code == 0, result.err
    assert result.json()["target"] == str(site)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["sync", "--continue", "--abort"], "error: --continue and --abort are mutually exclusive"),
        (
            ["sync", "v2", "--abort", "--dry-run"],
            "error: --abort and --dry-run are mutually exclusive",
        ),
        (["fmt", "--check", "--dry-run"], "error: --check and --dry-run are mutually exclusive"),
        (
            ["refresh", "--continue", "--abort"],
            "error: --continue and --abort are mutually exclusive",
        ),
        (
            ["refresh", "--continue", "--worktree", "x"],
            "error: --worktree and --continue are mutually exclusive",
        ),
        (
            ["refresh", "--abort", "--tarball", "x.tar.gz"],
            "error: --tarball and --abort are mutually exclusive",
        ),
        (["arms", "--results", "r.json"], "error: --results FILE goes with --check"),
    ],
)
def test_options_that_exclude_each_other_are_one_usage_error(
    example_fork: RepoBuilder, argv: list[str], message: str
) -> None:
    result = run_cli("-C", example_fork.path, *argv)
    assert result.code == 2
    assert result.error_lines[0] == message
    assert result.out == ""


def test_a_command_reads_the_fork_once_and_again_under_the_lock(
    example_fork: RepoBuilder,
) -> None:
    from forktool.app import App
    from forktool.output import Output

    app = App(cwd=example_fork.path, config_file=None, output=Output(quiet=True, verbose=False))
    first = app.fork()
    assert app.fork() is first
    assert app.fork(strict=False) is not first
    with app.lock():
        under_lock = app.fork()
    assert under_lock is not first
    assert under_lock.patches == first.patches
