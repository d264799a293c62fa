"""Verdicts forktool must not give, and messages that must not mislead: a tag of a
tag, a resolved commit the pin already has, a change only partly in a release, a
stable branch's ``cherry-pick -x -m1`` of a merge, a PR of another project."""

from __future__ import annotations

from helpers import run_cli

from forktool.builder import RepoBuilder


def _nested_tag(repo: RepoBuilder, name: str) -> str:
    """A new upstream commit tagged ``inner-NAME``, and ``name`` an annotated tag of
    that annotated tag (``git tag -a name inner-NAME``)."""
    repo.checkout("upstream")
    repo.commit(f"{name} work\n", {"e.py": f"{name}\n"})
    repo.tag(f"inner-{name}")
    repo.checkout("main")
    return repo.tag(name, f"refs/tags/inner-{name}")


def test_a_tag_of_a_tag_is_a_release_for_poll_and_forecast(sync_fork: RepoBuilder) -> None:
    commit = _nested_tag(sync_fork, "v3")
    kind = sync_fork.git.out(["cat-file", "-t", "v3^{}"], purpose="t")
    assert kind == "commit"
    outer = sync_fork.git.out(["cat-file", "-p", "refs/tags/v3"], purpose="read the outer tag")
    assert "type tag" in outer  # really a tag of a tag
    polled = run_cli("-C", sync_fork.path, "upstream", "poll", "--no-fetch", "--format", "json")
    newer = polled.json()["newer"]
    assert newer == [{"tag": "v2", "commit": sync_fork.rev("v2")}, {"tag": "v3", "commit": commit}]
    forecast = run_cli("-C", sync_fork.path, "forecast", "--no-fetch", "--format", "json")
    assert forecast.code == 0, forecast.err
    refs = [t["ref"] for t in forecast.json()["targets"]]  # type: ignore[union-attr]
    assert refs == ["v2", "v3"]
