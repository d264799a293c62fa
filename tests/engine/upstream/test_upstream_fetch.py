"""One rule for reaching upstream, on forks shaped like real ones.

A real fork often has no ``upstream`` remote at all: forktool.yaml's ``upstream.url``
names where upstream lives (here a bare repository on disk, by path and by file URL).
Every command that fetches (poll, sync, absorbed --fetch, pin bump --fetch) goes
through ``forktool.engine.upstream.fetch.fetch_upstream``: the remote, else the URL, else
the local tags with a notice; a tag already here that upstream has at the same commit
is not fetched again; a failure names git's cause and carries a hint.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from testing.helpers import run_cli
from testing.sync_fork import IDENTITY, build_sync_fork

from forktool.builder import RepoBuilder
from forktool.errors import FatalError
from forktool.git import Git


@pytest.fixture
def url_fork(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[RepoBuilder, Path]:
    """The sync fixture fork with no remote; upstream is a bare repository beside it,
    named by ``upstream.url``, and the fork does not have tag v2 yet."""
    for key, value in IDENTITY.items():
        monkeypatch.setenv(key, value)
    fork = build_sync_fork(RepoBuilder.init(tmp_path / "fork"))
    bare = tmp_path / "upstream.git"
    Git(tmp_path).run(
        ["clone", "--quiet", "--bare", "--no-local", str(fork.path), str(bare)], purpose="bare"
    )
    _set_url(fork, str(bare))
    fork.git.run(["tag", "-d", "v2"], purpose="forget v2")
    return fork, bare


def _set_url(fork: RepoBuilder, url: str) -> None:
    lines = (fork.path / "forktool.yaml").read_text().splitlines(keepends=True)
    kept = "".join(line for line in lines if not line.startswith(("upstream:", "  url:")))
    fork.commit(
        "fork: name upstream's URL\n", {"forktool.yaml": f"upstream:\n  url: {url}\n" + kept}
    )


def _git_commands(err: str) -> list[str]:
    """The git commands ``forktool -v`` narrated."""
    return [line for line in err.splitlines() if line.startswith("git ")]


def test_sync_fetches_the_tag_from_upstream_url_when_there_is_no_remote(
    url_fork: tuple[RepoBuilder, Path],
) -> None:
    fork, _ = url_fork
    result = run_cli("-C", fork.path, "sync", "v2", "--format", "json")
    assert result.code == 1, result.err  # stopped on 0004's conflict: it got that far
    assert result.json()["stage"] == "refresh"
    assert fork.git.find_tag_commit("v2") is not None
    assert run_cli("-C", fork.path, "sync", "--abort").code == 0


def test_poll_fetches_from_a_file_url_and_says_where_from(
    url_fork: tuple[RepoBuilder, Path],
) -> None:
    fork, bare = url_fork
    _set_url(fork, bare.as_uri())
    result = run_cli("-C", fork.path, "upstream", "poll", "--format", "json")
    assert result.code == 4, result.err
    data = result.json()
    assert data["fetched"] is True
    assert data["source"] == bare.as_uri()
    assert data["newest"] == "v2"


def test_a_tag_already_here_at_upstreams_commit_is_not_fetched_again(
    url_fork: tuple[RepoBuilder, Path],
) -> None:
    fork, _ = url_fork
    assert run_cli("-C", fork.path, "upstream", "poll").code == 4  # brings v2
    result = run_cli("-C", fork.path, "-v", "sync", "v2", "--dry-run")
    assert result.code == 1  # the plan has a conflict
    commands = _git_commands(result.err)
    assert any(c.startswith("git ls-remote --tags") for c in commands), commands
    assert not any(c.startswith("git fetch") for c in commands), commands


def test_a_local_tag_upstream_does_not_have_is_used_with_a_notice(
    url_fork: tuple[RepoBuilder, Path], tmp_path: Path
) -> None:
    fork, _ = url_fork
    fork.git.run(["tag", "v2", fork.rev("upstream")], purpose="tag v2 here only")
    empty = tmp_path / "empty.git"
    Git(tmp_path).run(["init", "--quiet", "--bare", str(empty)], purpose="an empty upstream")
    _set_url(fork, str(empty))
    result = run_cli("-C", fork.path, "sync", "v2", "--dry-run")
    assert result.code == 1, result.err
    assert f"notice: {empty} has no tag 'v2': using the local one (" in result.err


def test_no_remote_and_no_url_polls_the_local_tags_with_a_notice(
    builder: RepoBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in IDENTITY.items():
        monkeypatch.setenv(key, value)
    fork = build_sync_fork(builder)
    result = run_cli("-C", fork.path, "upstream", "poll", "--format", "json")
    assert result.code == 4
    assert result.json()["fetched"] is False
    assert result.err == (
        "notice: no remote 'upstream' and no upstream.url: using the tags already here\n"
    )


def test_an_unknown_tag_with_nowhere_to_fetch_it_from_says_how_to_add_one(
    builder: RepoBuilder,
) -> None:
    fork = build_sync_fork(builder)
    result = run_cli("-C", fork.path, "pin", "bump", "v9", "--fetch")
    assert result.code == 2
    assert result.error_lines == [
        "error: unknown tag 'v9'",
        "hint: there is no upstream to fetch it from (no remote 'upstream', no upstream.url): "
        "add the remote (git remote add upstream <url>) or set upstream.url in forktool.yaml",
    ]


def test_a_failed_fetch_names_gits_cause_and_hints(
    url_fork: tuple[RepoBuilder, Path], tmp_path: Path
) -> None:
    fork, _ = url_fork
    gone = tmp_path / "gone.git"
    _set_url(fork, str(gone))
    result = run_cli("-C", fork.path, "sync", "v2")
    assert result.code == 2
    assert result.error_lines[0].startswith(f"error: git could not fetch from {gone}: fatal:")
    assert result.error_lines[1] == (
        f"hint: check that {gone} is reachable (git ls-remote {gone}), "
        "or pass --no-fetch to use what is here"
    )
    missing = run_cli("-C", fork.path, "pin", "bump", "v9", "--fetch")
    assert missing.code == 2


def test_a_tag_upstream_does_not_have_says_so(url_fork: tuple[RepoBuilder, Path]) -> None:
    fork, bare = url_fork
    result = run_cli("-C", fork.path, "pin", "bump", "v9", "--fetch")
    assert result.code == 2
    assert result.error_lines == [
        f"error: git could not fetch from {bare}: fatal: couldn't find remote ref refs/tags/v9",
        f"hint: {bare} does not have it: check the name (git ls-remote --tags {bare}), "
        "or drop --fetch to use what is here",
    ]


def test_a_tag_that_moved_upstream_is_refused(url_fork: tuple[RepoBuilder, Path]) -> None:
    fork, _ = url_fork
    fork.git.run(["tag", "v2", "v1"], purpose="a local v2 elsewhere")
    result = run_cli("-C", fork.path, "sync", "v2", "--dry-run")
    assert result.code == 2
    assert result.error_lines[0].startswith("error: tag 'v2' moved upstream: here it is ")
    assert result.error_lines[1].startswith("hint: a moved release tag is never taken silently")


def test_pin_bump_and_absorbed_fetch_through_upstream_url(
    url_fork: tuple[RepoBuilder, Path],
) -> None:
    fork, _ = url_fork
    absorbed = run_cli("-C", fork.path, "absorbed", "--tag", "v2", "--fetch", "--format", "json")
    assert absorbed.code == 0, absorbed.err
    fork.git.run(["tag", "-d", "v2"], purpose="forget v2 again")
    bumped = run_cli("-C", fork.path, "pin", "bump", "v2", "--fetch", "--format", "json")
    assert bumped.code == 0, bumped.err
    assert bumped.json()["fetched"] is True
    assert "tag: v2" in (fork.path / "forktool.yaml").read_text()


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("--upload-pack=touch pwned", "starts with '-', so git would read it as an option"),
        ("-uploadpack", "starts with '-', so git would read it as an option"),
        ("ext::sh -c touch% pwned", "uses the ext:: transport, which runs a command"),
        ("EXT::sh -c id", "uses the EXT:: transport, which runs a command"),
        ("fd::3", "uses the fd:: transport, which runs a command"),
    ],
)
def test_a_url_that_runs_things_is_refused_when_the_config_is_read(
    url_fork: tuple[RepoBuilder, Path], url: str, problem: str
) -> None:
    fork, _ = url_fork
    _set_url(fork, f"'{url}'")
    for argv in (("upstream", "poll"), ("status",), ("sync", "v2", "--dry-run")):
        result = run_cli("-C", fork.path, *argv)
        assert result.code == 2, argv
        assert result.error_lines[0].endswith(
            f"forktool.yaml:2: upstream.url {url!r} {problem}; refusing it"
        ), result.err
    assert not (fork.path / "pwned").exists()


def test_a_remote_url_from_gits_config_is_held_to_the_same_rule(
    url_fork: tuple[RepoBuilder, Path],
) -> None:
    fork, _ = url_fork
    fork.git.run(["remote", "add", "upstream", "ext::sh -c touch% pwned"], purpose="remote")
    result = run_cli("-C", fork.path, "upstream", "poll")
    assert result.code == 2
    assert result.error_lines == [
        "error: remote 'upstream' has the URL 'ext::sh -c touch% pwned', which uses the ext:: "
        "transport, which runs a command; refusing to fetch from it",
        "hint: point the remote at the repository: git remote set-url upstream URL",
    ]
    assert not (fork.path / "pwned").exists()


def test_a_remote_name_that_is_an_option_is_refused(url_fork: tuple[RepoBuilder, Path]) -> None:
    fork, _ = url_fork
    text = (fork.path / "forktool.yaml").read_text()
    (fork.path / "forktool.yaml").write_text(
        text.replace("upstream:\n", "upstream:\n  remote: --upload-pack=x\n", 1)
    )
    result = run_cli("-C", fork.path, "upstream", "poll")
    assert result.code == 2
    assert result.error_lines[0].endswith(
        "forktool.yaml:2: upstream.remote '--upload-pack=x' is not a remote name"
    )


def test_every_command_in_a_hint_is_shell_quoted(
    url_fork: tuple[RepoBuilder, Path], tmp_path: Path
) -> None:
    # A local path may hold anything a shell reads: pasted, the hint must run git alone.
    fork, _ = url_fork
    gone = tmp_path / "gone $(touch pwned);x.git"
    _set_url(fork, f"'{gone}'")
    result = run_cli("-C", fork.path, "sync", "v2")
    assert result.code == 2
    assert result.error_lines[1] == (
        f"hint: check that {gone} is reachable (git ls-remote '{gone}'), "
        "or pass --no-fetch to use what is here"
    )
    _set_url(fork, "")
    text = (fork.path / "forktool.yaml").read_text().replace("upstream:\n  url: \n", "")
    (fork.path / "forktool.yaml").write_text("upstream:\n  remote: up;id>pwned\n" + text)
    bump = run_cli("-C", fork.path, "pin", "bump", "v9", "--fetch")
    assert bump.code == 2, bump.err
    assert bump.error_lines[1:] == [
        "hint: there is no upstream to fetch it from (no remote 'up;id>pwned', no "
        "upstream.url): add the remote (git remote add 'up;id>pwned' <url>) "
        "or set upstream.url in forktool.yaml"
    ], bump.err + (fork.path / "forktool.yaml").read_text()


def test_a_moved_non_release_tag_upstream_never_stops_poll_or_forecast(
    url_fork: tuple[RepoBuilder, Path],
) -> None:
    fork, bare = url_fork
    upstream = Git(bare)
    upstream.run(["tag", "nightly", "v1"], purpose="a nightly tag")
    upstream.run(["tag", "build-42", "v1"], purpose="a build tag")
    first = run_cli("-C", fork.path, "upstream", "poll", "--format", "json")
    assert first.code == 4, first.err
    assert fork.git.find_tag_commit("v2") is not None  # release tags are fetched
    upstream.run(["tag", "-f", "nightly", "v2"], purpose="nightly moves")
    for argv in (("upstream", "poll"), ("forecast",)):
        again = run_cli("-C", fork.path, *argv, "--format", "json")
        assert again.code in (0, 1, 4), (argv, again.err)
    # Only the tags release_tags names (and the pin) are fetched: never nightly.
    assert fork.git.find_tag_commit("nightly") is None
    assert fork.git.find_tag_commit("build-42") is None


def test_a_moved_release_tag_is_refused_naming_it(url_fork: tuple[RepoBuilder, Path]) -> None:
    fork, bare = url_fork
    assert run_cli("-C", fork.path, "upstream", "poll").code == 4
    Git(bare).run(["tag", "-f", "v2", "v1"], purpose="v2 moves upstream")
    result = run_cli("-C", fork.path, "upstream", "poll")
    assert result.code == 2
    assert result.error_lines[0].startswith("error: tag 'v2' moved upstream: here it is ")


def test_a_rejected_ref_is_named_in_the_fetch_error(
    url_fork: tuple[RepoBuilder, Path],
) -> None:
    fork, bare = url_fork
    fork.git.run(["tag", "v2", "v1"], purpose="a local v2 elsewhere")
    with pytest.raises(FatalError) as raised:
        fork.git.fetch(str(bare), ["refs/tags/v2:refs/tags/v2"])
    assert raised.value.message == (
        f"git could not fetch from {bare}: rejected v2 (would clobber existing tag)"
    )


def test_a_mapped_commit_upstream_does_not_have_is_named_as_a_map_mistake(
    url_fork: tuple[RepoBuilder, Path],
) -> None:
    """upload-pack refuses an id none of upstream's refs reach ("not our ref"): the
    map names a commit upstream does not have, and upstream itself is reachable."""
    fork, bare = url_fork
    unknown = "0123456789abcdef0123456789abcdef01234567"
    umap = (fork.path / "upstream.map").read_text().splitlines(keepends=True)
    first = umap.index(next(line for line in umap if line.startswith("0001-a.patch ")))
    umap[first] = f"0001-a.patch {unknown}\n"
    fork.commit("fork: a mistyped map entry\n", {"upstream.map": "".join(umap)})
    result = run_cli("-C", fork.path, "absorbed", "--tag", "v1", "--fetch")
    assert result.code == 2
    assert result.error_lines[0].endswith(f"not our ref {unknown}")
    assert result.error_lines[1] == (
        f"hint: {bare} has no commit {unknown[:12]} that its branches or tags reach: check "
        "the id in upstream.map (one from a fork or from a PR upstream never merged is not "
        "upstream's), or drop --fetch to use what is here"
    )
