"""upstream resolve: pending PRs -> the commits that merged them, on a fixture upstream
with the traps (a revert and a follow-up that mention the PR, a merge commit, a GitLab
merge request, a PR landed twice, a PR not merged yet, a custom pattern)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from testing.helpers import make_patch, run_cli

from forktool import regex_safety
from forktool.builder import RepoBuilder
from forktool.engine.upstream.resolve import _MENTION_WORDS, merged_prs, parse_pr, squashed_pr
from forktool.git import Git, LogEntry
from forktool.model.project_url import Project, repository_project, review_project

UPSTREAM_URL = "https://github.com/acme/app.git"  # the project; fetched from remote origin
GH = "https://github.com/acme/app/pull"
GL = "https://gitlab.com/grp/proj/-/merge_requests/21"
REVIEW = "https://review.example.org/c/777"
PATTERN = r"^Reviewed-on: https://review\.example\.org/c/(?P<pr>[0-9]+)$"


def build_upstream(repo: RepoBuilder) -> dict[str, str]:
    repo.commit("import\n", {f"{n}.txt": f"{n}\n" for n in "abcdefg"})
    repo.tag("v1")
    c: dict[str, str] = {}
    c["squash"] = repo.commit("Fix parser crash (#12)\n", {"a.txt": "a fixed\n"})
    repo.branch("retries")
    repo.checkout("retries")
    repo.commit("Add retries\n", {"b.txt": "b retries\n"})
    repo.checkout("main")
    c["merge"] = repo.merge("retries", "Merge pull request #15 from alice/retries\n\nAdd retries")
    c["revert"] = repo.commit('Revert "Fix parser crash (#12)" (#16)\n', {"a.txt": "a\n"})
    c["followup"] = repo.commit("Fix typo from (#12)\n", {"c.txt": "c typo\n"})
    c["gitlab"] = repo.commit(
        "Cache results\n\nLonger text.\n\nSee merge request grp/proj!21\n", {"d.txt": "d cache\n"}
    )
    c["land1"] = repo.commit("Speed up loader (#30)\n", {"e.txt": "e fast\n"})
    repo.commit('Revert "Speed up loader (#30)"\n', {"e.txt": "e\n"})
    c["land2"] = repo.commit("Speed up loader (#30)\n", {"e.txt": "e fast again\n"})
    c["review"] = repo.commit(f"Land change\n\nReviewed-on: {REVIEW}\n", {"g.txt": "g land\n"})
    return c


MAP = {
    "0001-parser.patch": f"pending {GH}/12",
    "0002-retries.patch": f"pending {GH}/15 backported early",
    "0003-cache.patch": f"pending {GL}",
    "0004-loader.patch": f"pending {GH}/30",
    "0005-unmerged.patch": f"pending {GH}/99",
    "0006-no-url.patch": "pending waiting for a PR",
    "0007-review.patch": f"pending {REVIEW}",
}


@pytest.fixture
def resolve_fork(tmp_path: Path) -> tuple[RepoBuilder, dict[str, str]]:
    upstream = RepoBuilder.init(tmp_path / "upstream")
    commits = build_upstream(upstream)
    fork = RepoBuilder.clone(upstream.path, tmp_path / "fork")
    pin = fork.rev("v1")
    patches = {
        name: make_patch(fork, "v1", {"f.txt": f"f {n}\n"}, f"Patch {n}")
        for n, name in enumerate(MAP)
    }
    (fork.path / "patches").mkdir()
    for name, data in patches.items():
        (fork.path / "patches" / name).write_bytes(data)
    (fork.path / "series").write_text("".join(f"{n}\n" for n in MAP))
    (fork.path / "upstream.map").write_text("".join(f"{n} {m}\n" for n, m in MAP.items()))
    (fork.path / "forktool.yaml").write_text(
        f"upstream:\n  remote: origin\n  url: {UPSTREAM_URL}\n  pr_patterns:\n    - '{PATTERN}'\n"
        f"pin:\n  tag: v1\n  commit: {pin}\n"
    )
    return fork, commits


def test_resolve_finds_the_merging_commit_and_skips_mentions(resolve_fork) -> None:
    fork, c = resolve_fork
    res = run_cli("-C", fork.path, "upstream", "resolve", "--format", "json")
    assert res.code == 0, res.err
    found = {
        p["patch"]: (p["commit"], p["how"], p["candidates"])
        for p in res.json()["patches"]  # type: ignore[attr-defined]
    }
    assert found == {
        "0001-parser.patch": (c["squash"], "squash", [c["squash"]]),
        "0002-retries.patch": (c["merge"], "merge", [c["merge"]]),
        "0003-cache.patch": (None, "other-project", []),  # gitlab.com/grp/proj's MR
        "0004-loader.patch": (None, "ambiguous", [c["land1"], c["land2"]]),
        "0005-unmerged.patch": (None, "not-merged", []),
        "0006-no-url.patch": (None, "no-pr", []),
        "0007-review.patch": (c["review"], "pattern", [c["review"]]),
    }
    first = res.json()["patches"][0]  # type: ignore[index]
    assert first["pr"] == f"{GH}/12" and first["subject"] == "Fix parser crash (#12)"


def test_resolve_write_records_commits_and_keeps_the_pr_url(resolve_fork) -> None:
    fork, c = resolve_fork
    res = run_cli("-C", fork.path, "upstream", "resolve", "--no-fetch", "--write")
    assert res.code == 0, res.err
    assert (fork.path / "upstream.map").read_text() == (
        f"0001-parser.patch {c['squash']} {GH}/12\n"
        f"0002-retries.patch {c['merge']} {GH}/15 backported early\n"
        f"0003-cache.patch pending {GL}\n"
        f"0004-loader.patch pending {GH}/30\n"
        f"0005-unmerged.patch pending {GH}/99\n"
        "0006-no-url.patch pending waiting for a PR\n"
        f"0007-review.patch {c['review']} {REVIEW}\n"
    )
    assert f"wrote upstream.map: 0001-parser.patch pending {GH}/12 -> " in res.out
    assert "candidates" in res.out
    again = run_cli("-C", fork.path, "upstream", "resolve", "--no-fetch", "--write")
    assert again.code == 0 and "wrote" not in again.out
    assert run_cli("-C", fork.path, "absorbed", "--tag", "v1").code == 0


def test_resolve_refuses_without_the_upstream_branch(resolve_fork) -> None:
    fork, _ = resolve_fork
    fork.git.run(["update-ref", "-d", "refs/remotes/origin/main"], purpose="drop the ref")
    before = (fork.path / "upstream.map").read_bytes()
    res = run_cli("-C", fork.path, "upstream", "resolve", "--no-fetch", "--write")
    assert res.code == 2
    assert res.error_lines[0] == (
        "error: refs/remotes/origin/main is not in this repository (upstream.branch: main)"
    )
    assert (fork.path / "upstream.map").read_bytes() == before
    fetched = run_cli("-C", fork.path, "upstream", "resolve", "--format", "json")
    assert fetched.code == 0, fetched.err


def test_poll_lists_newly_merged_prs(resolve_fork) -> None:
    fork, c = resolve_fork
    res = run_cli("-C", fork.path, "upstream", "poll", "--no-fetch", "--format", "json")
    assert res.code == 0, res.err
    merged = res.json()["merged_prs"]
    assert [(m["patch"], m["commit"]) for m in merged] == [  # type: ignore[attr-defined]
        ("0001-parser.patch", c["squash"]),
        ("0002-retries.patch", c["merge"]),
        ("0007-review.patch", c["review"]),
    ]
    text = run_cli("-C", fork.path, "upstream", "poll", "--no-fetch")
    assert f"merged : 0001-parser.patch: PR {GH}/12 merged as {c['squash'][:10]}" in text.out


def test_config_refuses_a_pr_pattern_without_its_group(resolve_fork) -> None:
    fork, _ = resolve_fork
    config = fork.path / "forktool.yaml"
    config.write_text(config.read_text().replace("(?P<pr>[0-9]+)", "([0-9]+)"))
    res = run_cli("-C", fork.path, "upstream", "resolve", "--no-fetch")
    assert res.code == 2
    assert res.error_lines[0].endswith(
        "forktool.yaml:5: upstream.pr_patterns pattern has no (?P<pr>...) group"
    )


def _entry(subject: str, parents: int = 1, body: str = "") -> LogEntry:
    return LogEntry("c" * 40, ("p" * 40,) * parents, "A <a@x>", "2024-01-01", subject + body)


@pytest.mark.parametrize(
    ("subject", "parents", "expected"),
    [
        ("Fix parser crash (#12)", 1, {"12": "squash"}),
        ('Revert "Fix parser crash (#12)" (#16)', 1, {"16": "squash"}),
        ('Revert "Fix parser crash (#12)"', 1, {}),
        ("Fix typo from (#12)", 1, {}),
        ("Follow-up for (#12)", 1, {}),
        ("Merge pull request #15 from alice/retries", 2, {"15": "merge"}),
        ("Merge pull request #15 from alice/retries", 1, {}),
        ("Fix X (#12) (#20)", 1, {"20": "squash"}),
        ("Fix parser crash (#12)", 2, {"12": "merge"}),  # a titled merge commit
    ],
)
def test_which_pr_a_subject_merged(subject: str, parents: int, expected: dict[str, str]) -> None:
    found = merged_prs(_entry(subject, parents))
    assert {k: v.how for k, v in found.items()} == expected


@pytest.mark.parametrize(
    ("text", "number", "project"),
    [
        ("https://github.com/acme/app/pull/12", "12", "acme/app"),
        ("https://github.com/acme/app/pull/12/files", "12", "acme/app"),
        ("https://gitlab.com/grp/sub/proj/-/merge_requests/21", "21", "grp/sub/proj"),
        ("https://codeberg.org/o/r/pulls/3", "3", "o/r"),
        ("#7", "7", None),
        ("!8", "8", None),
        ("https://review.example.org/c/777", "777", "c"),
    ],
)
def test_pr_references(text: str, number: str, project: str | None) -> None:
    pr = parse_pr(text)
    assert pr is not None and (pr.number, pr.project) == (number, project)


@given(
    title=st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs")), max_size=40),
    number=st.integers(min_value=0, max_value=10**9),
)
def test_a_squash_subject_names_its_pr_unless_a_linking_word_precedes_it(
    title: str, number: int
) -> None:
    subject = f"{title} (#{number})"
    found = squashed_pr(subject)
    words = title.split()
    if not words or words[-1].lower() in _MENTION_WORDS:
        assert found is None
    else:
        assert found == str(number)


@given(st.text(max_size=200))
def test_pr_parsing_never_fails_on_any_text(text: str) -> None:
    pr = parse_pr(text)
    assert pr is None or pr.number.isdigit()


def test_resolve_write_leaves_a_patch_whose_trailer_disagrees(resolve_fork) -> None:
    fork, c = resolve_fork
    path = fork.path / "patches" / "0001-parser.patch"
    text = path.read_text()
    path.write_text(
        text.replace("Subject: Patch 0\n", "Subject: Patch 0\n\nUpstream-Merge: none\n", 1)
    )
    res = run_cli("-C", fork.path, "upstream", "resolve", "--no-fetch", "--write")
    assert res.code == 0, res.err
    assert "0001-parser.patch pending" in (fork.path / "upstream.map").read_text()
    assert f"0002-retries.patch {c['merge']}" in (fork.path / "upstream.map").read_text()
    assert "warning: patches/0001-parser.patch:" in res.err
    assert "its Upstream-Merge trailer says 'none'" in res.err


def test_resolve_json_keeps_the_documented_shape(resolve_fork) -> None:
    from testing.contract_shapes import assert_contract

    fork, _ = resolve_fork
    res = run_cli("-C", fork.path, "upstream", "resolve", "--format", "json")
    assert res.code == 0, res.err
    assert_contract("upstream resolve", res.json())


def test_resolve_without_the_branch_hints_the_url_when_there_is_no_remote(resolve_fork) -> None:
    """No remote 'origin', only upstream.url: 'git fetch origin main' would fail."""
    fork, _ = resolve_fork
    url = str(fork.path.parent / "upstream")
    fork.git.run(["remote", "remove", "origin"], purpose="no remote, only a URL")
    config = (fork.path / "forktool.yaml").read_text()
    (fork.path / "forktool.yaml").write_text(
        config.replace(f"  url: {UPSTREAM_URL}\n", f"  url: {url}\n")
    )
    res = run_cli("-C", fork.path, "upstream", "resolve", "--no-fetch")
    assert res.code == 2
    assert res.error_lines == [
        "error: refs/remotes/origin/main is not in this repository (upstream.branch: main)",
        f"hint: drop --no-fetch to fetch it from upstream.url ({url}); "
        "set upstream.branch in forktool.yaml if upstream develops on another branch",
    ]
    assert run_cli("-C", fork.path, "upstream", "resolve").code == 0


def test_resolve_on_an_upstream_whose_branch_is_not_main_names_the_setting(
    resolve_fork,
) -> None:
    """Upstream develops on 'trunk' (jq: 'master'); forktool.yaml says nothing, so 'main'."""
    fork, _ = resolve_fork
    upstream = Git(fork.path.parent / "upstream")
    upstream.run(["branch", "-m", "main", "trunk"], purpose="upstream renames its branch")
    fetched = run_cli("-C", fork.path, "upstream", "resolve")
    assert fetched.code == 2
    assert fetched.error_lines[1] == (
        "hint: origin has no branch 'main': set upstream.branch in forktool.yaml to upstream's "
        "development branch (git ls-remote --symref origin HEAD names it)"
    )
    fork.git.run(["fetch", "-q", "origin"], purpose="fetch trunk")
    fork.git.run(["remote", "set-head", "origin", "trunk"], purpose="origin/HEAD -> trunk")
    fork.git.run(["update-ref", "-d", "refs/remotes/origin/main"], purpose="main is gone")
    offline = run_cli("-C", fork.path, "upstream", "resolve", "--no-fetch")
    assert offline.code == 2
    assert offline.error_lines == [
        "error: refs/remotes/origin/main is not in this repository (upstream.branch: main)",
        "hint: upstream's default branch is 'trunk' (refs/remotes/origin/HEAD): "
        "set upstream.branch: trunk in forktool.yaml",
    ]


def _set_upstream_url(fork: RepoBuilder, url: str | None) -> None:
    config = fork.path / "forktool.yaml"
    text = config.read_text().replace(f"  url: {UPSTREAM_URL}\n", f"  url: {url}\n" if url else "")
    config.write_text(text)


def _resolved(fork: RepoBuilder) -> dict[str, tuple[object, ...]]:
    res = run_cli("-C", fork.path, "upstream", "resolve", "--no-fetch", "--format", "json")
    assert res.code == 0, res.err
    return {
        p["patch"]: (p["commit"], p["how"], p["reason"])
        for p in res.json()["patches"]  # type: ignore[attr-defined]
    }


@pytest.mark.parametrize(
    "url",
    [
        "git@gitlab.com:grp/proj.git",
        "ssh://git@gitlab.com:22/grp/proj",
        "https://user@GitLab.com/Grp/Proj.git/",
        "gitlab.com:grp/proj",
    ],
)
def test_a_merge_request_resolves_only_on_its_own_project(resolve_fork, url: str) -> None:
    """Upstream is gitlab.com/grp/proj (any URL form): its MR resolves, and the
    github.com/acme/app PRs, merged there by number, are another project's."""
    fork, c = resolve_fork
    _set_upstream_url(fork, url)
    found = _resolved(fork)
    assert found["0003-cache.patch"][:2] == (c["gitlab"], "gitlab")
    commit, how, reason = found["0001-parser.patch"]
    assert (commit, how) == (None, "other-project")
    assert reason == (
        f"{GH}/12 is a PR of github.com/acme/app, not of upstream (gitlab.com/grp/proj): "
        "upstream's commits with the same number are other PRs; map the patch to upstream's "
        "commit by hand once upstream has the change"
    )
    assert found["0007-review.patch"][:2] == (c["review"], "pattern")  # names the URL


def test_another_projects_pr_of_the_same_number_stays_pending(resolve_fork) -> None:
    fork, _ = resolve_fork
    umap = fork.path / "upstream.map"
    umap.write_text(
        umap.read_text().replace(
            f"pending {GH}/12", "pending https://github.com/someone/lib/pull/12"
        )
    )
    res = run_cli("-C", fork.path, "upstream", "resolve", "--no-fetch", "--write")
    assert res.code == 0, res.err
    assert "0001-parser.patch pending https://github.com/someone/lib/pull/12\n" in umap.read_text()
    assert "is a PR of github.com/someone/lib, not of upstream (github.com/acme/app)" in res.out
    absorbed = run_cli("-C", fork.path, "absorbed", "--tag", "v1", "--format", "json")
    verdicts = {p["patch"]: p["verdict"] for p in absorbed.json()["patches"]}  # type: ignore[attr-defined]
    assert verdicts["0001-parser.patch"] == "pending"


def test_a_pr_named_by_number_only_or_of_an_unknown_upstream_never_resolves(
    resolve_fork,
) -> None:
    fork, c = resolve_fork
    path = fork.path / "patches" / "0002-retries.patch"
    path.write_text(
        path.read_text().replace("Subject: Patch 1\n", "Subject: Patch 1\n\nUpstream-PR: #15\n", 1)
    )
    found = _resolved(fork)
    assert found["0002-retries.patch"][:2] == (None, "unknown-project")
    assert str(found["0002-retries.patch"][2]).startswith("#15 names a PR by its number only")
    _set_upstream_url(fork, None)  # remote origin is a local path: no project
    found = _resolved(fork)
    commit, how, reason = found["0001-parser.patch"]
    assert (commit, how) == (None, "unknown-project")
    assert str(reason).startswith(
        "upstream's host and project cannot be known from remote 'origin' ("
    )
    assert found["0007-review.patch"][:2] == (c["review"], "pattern")  # the URL itself


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/Acme/App.git",
        "https://github.com/acme/app",
        "https://user:secret@www.github.com:443/acme/app/",
        "http://github.com/acme/app.git",
        "git://github.com/acme/app.git",
        "ssh://git@github.com/acme/app.git",
        "ssh://git@github.com:22/acme/app",
        "git@github.com:acme/app.git",
        "github.com:acme/app",
    ],
)
def test_every_form_of_a_repository_url_names_one_project(url: str) -> None:
    assert repository_project(url) == Project("github.com", "acme/app")


@pytest.mark.parametrize(
    "url",
    ["/srv/git/app.git", "./app", "../up", "file:///srv/git/app.git", "~/app", "C:/repo", ""],
)
def test_a_local_path_names_no_project(url: str) -> None:
    assert repository_project(url) is None


@given(st.text(max_size=120))
def test_url_parsing_never_fails_on_any_text(text: str) -> None:
    project = repository_project(text)
    assert project is None or (project.host and project.path)
    review = review_project(text)
    assert review is None or review[1].isdigit()


def test_a_backtracking_pr_pattern_is_stopped_naming_its_line(
    resolve_fork, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Overlapping alternatives under a repeat: not the nested-repeat shape refused when
    # the config is read, so only the time limit every user regex runs under stops it.
    fork, _ = resolve_fork
    monkeypatch.setattr(regex_safety, "TIMEOUT_SECONDS", 1.0)
    tip = fork.commit("Ticket\n\nTicket: " + "1" * 40 + "x\n", {"h.txt": "h\n"})
    fork.git.run(["update-ref", "refs/remotes/origin/main", tip], purpose="move upstream")
    config = (fork.path / "forktool.yaml").read_text()
    (fork.path / "forktool.yaml").write_text(
        config.replace(f"'{PATTERN}'", "'^Ticket: (?P<pr>(?:\\d|\\d)+)$'")
    )
    res = run_cli("-C", fork.path, "upstream", "resolve", "--no-fetch")
    assert res.code == 2, res.out + res.err
    lines = (fork.path / "forktool.yaml").read_text().splitlines()
    line = next(i for i, text in enumerate(lines, 1) if "Ticket:" in text)
    assert res.error_lines == [
        f"error: forktool.yaml:{line}: upstream.pr_patterns pattern '^Ticket: (?P<pr>(?:\\\\d|\\\\d)+)$' "
        f"did not finish within 1 s on the message of {tip} (catastrophic backtracking?)",
        "hint: simplify the pattern: anchor it and avoid repeating overlapping alternatives "
        "like (?:\\d|\\d)+",
    ]
