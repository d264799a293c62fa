"""The example fork at the repository root stays exactly what the demo upstream implies."""

from __future__ import annotations

from pathlib import Path

from testing.helpers import run_cli

from forktool.builder import RepoBuilder
from forktool.demo import DemoUpstream
from forktool.demo.example import example_root, make_example_patches, upstream_map_text

ROOT = Path(__file__).resolve().parents[2]


def test_example_root_is_this_checkout() -> None:
    assert example_root() == ROOT


def test_example_patches_regenerate_byte_identical(
    tmp_path: Path, demo_upstream: DemoUpstream
) -> None:
    names = make_example_patches(demo_upstream, tmp_path / "patches")
    assert names == [
        line for line in (ROOT / "series").read_text().splitlines() if not line.startswith("#")
    ]
    for name in names:
        assert (tmp_path / "patches" / name).read_bytes() == (
            ROOT / "patches" / name
        ).read_bytes(), name
    assert (ROOT / "upstream.map").read_text() == upstream_map_text(demo_upstream, names)


def test_example_fork_status_and_verify(example_fork: RepoBuilder) -> None:
    status = run_cli("-C", example_fork.path, "status", "--format", "json")
    assert status.code == 0, status.err
    data = status.json()
    assert data["pin"] == {
        "tag": "v1.1.0",
        "commit": "b444e8a60cf8ba740d4bf36bdbc98ce348ff5066",
        "tag_commit": "b444e8a60cf8ba740d4bf36bdbc98ce348ff5066",
        "ok": True,
    }
    assert data["series_length"] == 4
    verify = run_cli("-C", example_fork.path, "verify", "--format", "json")
    assert verify.code == 0
    assert verify.json()["ok"] is True
    assert [p["status"] for p in verify.json()["patches"]] == ["exact"] * 4  # type: ignore[index]


def test_init_then_status_shows_the_fork(tmp_path: Path, demo_upstream: DemoUpstream) -> None:
    fork = RepoBuilder.clone(demo_upstream.path, tmp_path / "newfork")
    result = run_cli("-C", fork.path, "init", "--pin", "v1.2.0", "--upstream-remote", "origin")
    assert result.code == 0, result.err
    for name in ("forktool.yaml", "series", "upstream.map", "alignment.ledger", "FORK.md"):
        assert (fork.path / name).is_file(), name
    config = (fork.path / "forktool.yaml").read_text()
    assert f"commit: {demo_upstream.tags['v1.2.0']}" in config
    status = run_cli("-C", fork.path, "status", "--format", "json")
    assert status.code == 0, status.err
    assert status.json()["series_length"] == 0
    before = {name: (fork.path / name).read_bytes() for name in ("forktool.yaml", "FORK.md")}
    again = run_cli("-C", fork.path, "init", "--pin", "v1.2.0")
    assert again.code == 0, again.err
    assert again.out.splitlines()[-1] == "Nothing to do: the fork's files are all here."
    assert {name: (fork.path / name).read_bytes() for name in before} == before


def test_init_refuses_an_unknown_tag_and_writes_nothing(
    tmp_path: Path, demo_upstream: DemoUpstream
) -> None:
    fork = RepoBuilder.clone(demo_upstream.path, tmp_path / "newfork")
    result = run_cli("-C", fork.path, "init", "--pin", "v9.9.9")
    assert result.code == 2
    assert result.error_lines[0] == "error: unknown tag 'v9.9.9'"
    assert not (fork.path / "forktool.yaml").exists()
    assert not (fork.path / "series").exists()


def test_verbose_explains_every_git_command_on_stderr_only(example_fork: RepoBuilder) -> None:
    quiet = run_cli("-C", example_fork.path, "verify", "--format", "json")
    loud = run_cli("-C", example_fork.path, "-v", "verify", "--format", "json")
    assert loud.code == quiet.code == 0
    assert loud.out == quiet.out  # stdout stays one JSON object
    assert quiet.err == ""
    lines = loud.err.splitlines()
    assert "git apply --cached -v --whitespace=nowarn --allow-empty -p1 " in loud.err
    assert all(line.startswith("git ") and line.endswith(")") for line in lines), lines
    assert any(line.endswith("# apply the series (exit 0)") for line in lines)
