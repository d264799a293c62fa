"""The JSON contract: every command's ``--format json`` carries the keys docs/contract.md shows.

docs/contract.md gives, per command, a line "`<command>`:" and a JSON block with an
example. Each test here runs that command on a fixture fork and checks that, at every
level the document shows, the documented keys are among the actual ones: a renamed or
removed field fails, an added one passes. Lists are checked element by element against
the documented first element; a null where the document shows an object is not
descended into.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from importlib import import_module
from pathlib import Path

import click
import pytest
from testing.contract_shapes import assert_contract, documented, missing_keys
from testing.helpers import run_cli
from testing.image_fakes import FakeEngine, identity, site_with

from forktool.builder import RepoBuilder
from forktool.cli import COMMANDS, command_module
from forktool.demo import DemoUpstream


def json_of(*args: str | Path, codes: tuple[int, ...] = (0,)) -> dict[str, object]:
    result = run_cli(*args, "--format", "json")
    assert result.code in codes, result.err
    return result.json()


def _json_commands() -> Iterator[str]:
    """Every command and subcommand that has ``--format json``."""

    def walk(command: click.Command, path: str) -> Iterator[str]:
        if isinstance(command, click.Group):
            for name, sub in command.commands.items():
                yield from walk(sub, f"{path} {name}")
            return
        for param in command.params:
            if param.name == "fmt" and isinstance(param.type, click.Choice):
                if "json" in param.type.choices:
                    yield path

    for name in COMMANDS:
        yield from walk(import_module(command_module(name)).command, name)


# -- the document ---------------------------------------------------------------------


def test_every_command_with_json_output_has_a_documented_shape() -> None:
    assert set(_json_commands()) <= set(documented())


def test_the_checker_names_a_removed_key_at_any_depth() -> None:
    shape = {"ok": True, "patches": [{"patch": "x", "hunks": [{"line": 1}]}], "pin": {"tag": ""}}
    actual = {"ok": 1, "extra": 2, "patches": [{"patch": "a", "hunks": [{"line": 1}, {}]}]}
    assert missing_keys(shape, actual) == ["$.pin", "$.patches[0].hunks[1].line"]
    assert missing_keys(shape, {**actual, "pin": None, "patches": []}) == []


# -- the commands ---------------------------------------------------------------------


def test_init_json(tmp_path: Path, demo_upstream: DemoUpstream) -> None:
    fork = RepoBuilder.clone(demo_upstream.path, tmp_path / "newfork")
    assert_contract("init", json_of("-C", fork.path, "init", "--pin", "v1.2.0"))


def test_status_json(example_fork: RepoBuilder) -> None:
    assert_contract("status", json_of("-C", example_fork.path, "status"))


def test_verify_json(example_fork: RepoBuilder) -> None:
    assert_contract("verify", json_of("-C", example_fork.path, "verify"))


def test_apply_json(example_fork: RepoBuilder, demo_upstream: DemoUpstream, tmp_path: Path) -> None:
    site = site_with(demo_upstream, tmp_path, example_fork)
    verified = json_of("-C", example_fork.path, "apply", "--target", site, "--verify")
    assert_contract("apply", verified)


def test_check_json(example_fork: RepoBuilder) -> None:
    assert_contract("check", json_of("-C", example_fork.path, "check", codes=(0, 1)))


def test_fmt_json(example_fork: RepoBuilder) -> None:
    assert_contract("fmt", json_of("-C", example_fork.path, "fmt", "--check"))


def test_import_export_and_check_history_json(example_fork: RepoBuilder) -> None:
    root = example_fork.path
    assert_contract("import", json_of("-C", root, "import", "--branch", "p"))
    assert_contract("check-history", json_of("-C", root, "check-history", "p"))
    assert_contract("export", json_of("-C", root, "export", "--from", "p"))


def test_refresh_json(sync_fork: RepoBuilder) -> None:
    stopped = json_of("-C", sync_fork.path, "refresh", "--onto", "v2", codes=(1,))
    assert_contract("refresh", stopped)


def test_pin_json(example_fork: RepoBuilder) -> None:
    root = example_fork.path
    assert_contract("pin show", json_of("-C", root, "pin", "show"))
    assert_contract("pin check", json_of("-C", root, "pin", "check", codes=(0, 1)))
    assert_contract("pin bump", json_of("-C", root, "pin", "bump", "v1.2.0", "--dry-run"))


def test_align_json(example_fork: RepoBuilder) -> None:
    assert_contract("align", json_of("-C", example_fork.path, "align", codes=(0, 1)))


def test_arms_json(example_fork: RepoBuilder, tmp_path: Path) -> None:
    results = tmp_path / "arms.json"
    results.write_text(json.dumps({"full": "pass", "arms": {}, "patchless": "fail"}))
    root = example_fork.path
    assert_contract("arms", json_of("-C", root, "arms"))
    checked = json_of("-C", root, "arms", "--check", "--results", results, codes=(1,))
    assert_contract("arms --check", checked)


def test_absorbed_json(example_fork: RepoBuilder) -> None:
    assert_contract("absorbed", json_of("-C", example_fork.path, "absorbed", "--tag", "v1.2.0"))


def test_retire_and_undo_json(example_fork: RepoBuilder) -> None:
    root = example_fork.path
    assert run_cli("-C", root, "pin", "bump", "v1.2.0").code == 0  # retire needs the fix pinned
    example_fork.commit("fork: pin v1.2.0\n")
    retired = json_of("-C", root, "retire", "--tag", "v1.2.0")
    assert_contract("retire", retired)
    patch = retired["retired"][0]["patch"]  # type: ignore[index]
    undo = json_of("-C", root, "retire", "--undo", patch, "--reason", "r", "--dry-run")
    assert_contract("retire --undo", undo)


def test_sync_json(sync_fork: RepoBuilder) -> None:
    root = sync_fork.path
    assert_contract(
        "sync", json_of("-C", root, "sync", "v2", "--no-fetch", "--dry-run", codes=(0, 1))
    )
    assert_contract("sync", json_of("-C", root, "sync", "v2", "--no-fetch", codes=(1,)))


def test_upstream_poll_json(sync_fork: RepoBuilder) -> None:
    poll = json_of("-C", sync_fork.path, "upstream", "poll", "--no-fetch", codes=(0, 3, 4))
    assert_contract("upstream poll", poll)


def test_image_json(
    example_fork: RepoBuilder,
    demo_upstream: DemoUpstream,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = FakeEngine()
    monkeypatch.setattr(import_module("forktool.commands.image"), "docker_engine", lambda: fake)
    identity(monkeypatch)
    fake.site = site_with(demo_upstream, tmp_path, example_fork)
    root = example_fork.path
    build = json_of("-C", root, "image", "build")
    assert_contract("image build", build)
    candidate = str(build["candidate"])
    assert_contract("image gate", json_of("-C", root, "image", "gate", candidate))
    promote = json_of("-C", root, "image", "promote", candidate, "--tag", "v1.1.0")
    assert_contract("image promote", promote)
    assert_contract("image freeze", json_of("-C", root, "image", "freeze"))
