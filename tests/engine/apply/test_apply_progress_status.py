"""``status`` shows each patch's state at the pin; progress ticks per patch and the bar
shows only on a terminal, only once the work outlasts the delay."""

from __future__ import annotations

import contextlib
import io
import time
from pathlib import Path
from typing import Literal

import pytest
from testing.apply_support import edit_line, numbered, patch_of, pristine, side_commit, writes
from testing.helpers import MiniFork, mini_fork, run_cli

import forktool.output
from forktool.builder import RepoBuilder
from forktool.config import load_config
from forktool.engine.apply.target import apply_to_directory, progress_steps
from forktool.engine.apply.verify import verify_series
from forktool.fork import Fork, load_fork
from forktool.git import Git
from forktool.output import Output, _console

APP = "src/app.py"
BASE = numbered(40)


@pytest.fixture
def fork(builder: RepoBuilder) -> MiniFork:
    fork = mini_fork(builder, {APP: BASE})
    stale_base = side_commit(builder, "v1", writes({APP: "top\n" + BASE}))
    fork.write(
        {
            "0001-a.patch": patch_of(builder, "v1", writes({APP: edit_line(BASE, "line 5", "5")})),
            "0002-shifted.patch": patch_of(
                builder, stale_base, writes({APP: "top\n" + edit_line(BASE, "line 30", "30")})
            ),
            "0003-c.patch": patch_of(
                builder, "v1", writes({APP: edit_line(BASE, "line 20", "20")})
            ),
        }
    )
    return fork


def test_status_shows_each_patch_state_at_the_pin(fork: MiniFork) -> None:
    result = fork.cli("status", "--format", "json")
    assert result.code == 0, result.err
    patches = result.json()["patches"]
    assert [(p["patch"], p["apply"]) for p in patches] == [  # type: ignore[union-attr,index]
        ("0001-a.patch", "exact"),
        ("0002-shifted.patch", "offset"),
        ("0003-c.patch", "exact"),
    ]
    assert patches[1]["apply_message"] == (  # type: ignore[index]
        f"{APP}: hunk 1 applies only at offset -1 (line 27) on v1; run 'forktool refresh'"
    )
    text = fork.cli("status")
    assert "0002-shifted.patch: src/app.py: hunk 1 applies only at offset -1" in text.out


def test_status_shows_the_pr_a_map_note_names(fork: MiniFork) -> None:
    """One rule for a patch's PR (as retire records it): the Upstream-PR trailer, else the
    URL in the upstream.map note."""
    umap = fork.root / "upstream.map"
    umap.write_text(
        umap.read_text().replace(
            "0001-a.patch none", "0001-a.patch none https://forge.example/up/pull/12"
        )
    )
    result = fork.cli("status", "--format", "json")
    assert result.code == 0, result.err
    prs = {p["patch"]: p["upstream_pr"] for p in result.json()["patches"]}  # type: ignore[union-attr,index]
    assert prs == {
        "0001-a.patch": "https://forge.example/up/pull/12",
        "0002-shifted.patch": None,
        "0003-c.patch": None,
    }
    assert "https://forge.example/up/pull/12" in fork.cli("status").out


def _engine_inputs(fork: MiniFork) -> tuple[Fork, Git, str]:
    loaded = load_fork(load_config(fork.root / "forktool.yaml"), strict=False)
    return loaded, Git(fork.root), fork.repo.rev("v1")


def test_verify_ticks_once_per_patch_on_the_slow_path(fork: MiniFork) -> None:
    loaded, git, commit = _engine_inputs(fork)
    ticks: list[int] = []
    verify_series(loaded, git, base="v1", base_commit=commit, progress=ticks.append)
    assert ticks == [1, 1, 1]


def test_verify_ticks_the_whole_series_at_once_on_the_fast_path(builder: RepoBuilder) -> None:
    fork = mini_fork(builder, {APP: BASE})
    fork.write({"0001-a.patch": patch_of(builder, "v1", writes({APP: BASE + "end\n"}))})
    loaded, git, commit = _engine_inputs(fork)
    ticks: list[int] = []
    verify_series(loaded, git, base="v1", base_commit=commit, progress=ticks.append)
    assert ticks == [1]


@pytest.mark.parametrize("mode", ["apply", "verify", "except"])
def test_apply_ticks_per_patch_within_the_announced_total(
    builder: RepoBuilder, tmp_path: Path, mode: Literal["apply", "verify", "except"]
) -> None:
    fork = mini_fork(builder, {APP: BASE})
    fork.write(
        {
            "0001-a.patch": patch_of(builder, "v1", writes({APP: edit_line(BASE, "line 5", "5")})),
            "0002-b.patch": patch_of(builder, "v1", writes({APP: edit_line(BASE, "line 30", "3")})),
        }
    )
    loaded, _git, _commit = _engine_inputs(fork)
    target = pristine(fork, tmp_path / "target")
    if mode == "verify":
        apply_to_directory(loaded, target)
    ticks: list[int] = []
    exclude = ("0001-a.patch",) if mode == "except" else ()
    result = apply_to_directory(
        loaded,
        target,
        mode=mode,
        exclude=exclude,
        progress=ticks.append,
    )
    assert result.ok, result.message
    assert ticks == [1] * progress_steps(mode, 2)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_is_silent_when_stderr_is_not_a_terminal(
    fork: MiniFork, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(forktool.output, "PROGRESS_DELAY_SECONDS", 0.0)
    result = run_cli("-C", fork.root, "verify")
    assert result.code == 1
    assert result.err == ""


def test_progress_bar_appears_on_a_terminal_once_work_outlasts_the_delay(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(forktool.output, "PROGRESS_DELAY_SECONDS", 0.05)
    monkeypatch.delenv("NO_COLOR", raising=False)
    stream = _Terminal()
    output = Output(err=_console(stream))
    with output.progress(3, "verifying on v1") as tick:
        time.sleep(0.4)
        tick()
    assert "verifying on v1" in stream.getvalue()


def test_progress_bar_stays_hidden_for_quick_work(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    stream = _Terminal()
    output = Output(err=_console(stream))
    with output.progress(3, "verifying on v1") as tick:
        tick(3)
    assert "verifying" not in stream.getvalue()


def test_verify_on_a_terminal_prints_no_progress_on_stdout(
    fork: MiniFork, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(forktool.output, "PROGRESS_DELAY_SECONDS", 0.0)
    from forktool.cli import run

    out, err = io.StringIO(), _Terminal()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run(["-C", str(fork.root), "verify", "--format", "json"])
    assert code == 1
    assert out.getvalue().startswith("{")
