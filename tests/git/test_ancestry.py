"""Ancestry is exactly ``git merge-base --is-ancestor``: on random histories with merges,
criss-cross merges, topic branches and clock skew, and on a history shaped like git.git's
(long-lived topic branches merged into maint and master), where reading ancestry from
``rev-list --no-walk ^tip`` was wrong."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from testing.helpers import run_cli

from forktool.builder import EPOCH, RepoBuilder
from forktool.errors import GitError
from forktool.git import Git

# One commit: (parent indexes, commit date offset in hours).
Spec = tuple[tuple[int, ...], int]


def build_dag(path: Path, specs: Sequence[Spec]) -> list[str]:
    """A repository whose commits have exactly ``specs``' parents and dates (one
    ``git fast-import``); returns the commit ids in order. Each commit changes its
    own file, so no two are the same."""
    path.mkdir(parents=True)
    git = Git(path)
    git.run(["init", "--quiet", "--template=", "."], purpose="create a repository")
    stream = bytearray()
    for index, (parents, hours) in enumerate(specs):
        when = EPOCH + hours * 3600
        stream += b"commit refs/heads/c%d\nmark :%d\n" % (index, index + 1)
        stream += b"author A <a@example.com> %d +0000\n" % when
        stream += b"committer C <c@example.com> %d +0000\n" % when
        message = b"commit %d\n" % index
        stream += b"data %d\n%s" % (len(message), message)
        if parents:
            stream += b"from :%d\n" % (parents[0] + 1)
            for parent in parents[1:]:
                stream += b"merge :%d\n" % (parent + 1)
        content = b"%d\n" % index
        stream += b"M 100644 inline f%d\ndata %d\n%s\n" % (index, len(content), content)
    marks = path / ".git" / "marks"
    git.run(
        ["fast-import", "--quiet", f"--export-marks={marks}"],
        purpose="import the history",
        input=bytes(stream),
    )
    by_mark = dict(line.split() for line in marks.read_text().splitlines())
    return [by_mark[f":{i + 1}"] for i in range(len(specs))]


def reachable(specs: Sequence[Spec]) -> list[set[int]]:
    """For each commit, every commit it reaches (itself included)."""
    found: list[set[int]] = []
    for index, (parents, _) in enumerate(specs):
        mine = {index}
        for parent in parents:
            mine |= found[parent]
        found.append(mine)
    return found


def merge_base_says(git: Git, commit: str, tip: str) -> bool:
    """The rule itself, asked of git directly."""
    res = git.run(["merge-base", "--is-ancestor", commit, tip], purpose="ask git", check=False)
    assert res.returncode in (0, 1), res.err
    return res.returncode == 0


def old_not_in(git: Git, commits: Sequence[str], tip: str) -> set[str]:
    """The construction ancestry used to be read from: ``--no-walk`` with ``^tip``."""
    stdin = "\n".join([*commits, f"^{tip}"]) + "\n"
    out = git.run(
        ["rev-list", "--no-walk=unsorted", "--stdin"], purpose="old", input=stdin.encode()
    ).out
    return set(out.split()) & set(commits)


@st.composite
def histories(draw: st.DrawFn) -> list[Spec]:
    """Branches that fork, merge each other (criss-cross too) and run on; dates
    mostly advance, but some commits are dated far in the past or future."""
    size = draw(st.integers(min_value=2, max_value=12))
    specs: list[Spec] = [((), 0)]
    heads = [0]  # the newest commit of each branch
    for index in range(1, size):
        branch = draw(st.integers(min_value=0, max_value=len(heads)))
        if branch == len(heads):  # a new topic branch from any earlier commit
            parents: tuple[int, ...] = (draw(st.integers(min_value=0, max_value=index - 1)),)
            heads.append(index)
        else:
            parents = (heads[branch],)
            heads[branch] = index
        if draw(st.integers(min_value=0, max_value=2)) == 0:  # a merge
            other = draw(st.integers(min_value=0, max_value=index - 1))
            if other not in parents:
                parents = (*parents, other)
        skew = draw(st.sampled_from([0, 0, 0, -1000, -50, 50, 1000]))
        specs.append((parents, index + skew))
    return specs


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs=histories())
def test_every_pair_is_merge_base_is_ancestor(
    tmp_path_factory: pytest.TempPathFactory, specs: list[Spec]
) -> None:
    path = tmp_path_factory.mktemp("dag") / "repo"
    commits = build_dag(path, specs)
    git = Git(path)
    truth = reachable(specs)
    for t, tip in enumerate(commits):
        got = git.ancestors(commits, tip)
        for c, commit in enumerate(commits):
            said = merge_base_says(git, commit, tip)
            assert said == (c in truth[t])  # the model agrees with git
            assert (commit in got) == said, (c, t, specs)
        assert git.not_ancestors(commits, tip) == set(commits) - got
    for c, commit in enumerate(commits):  # one commit against every tip at once
        holding = git.tips_containing(commit, commits)
        assert holding == {tip for t, tip in enumerate(commits) if c in truth[t]}, (c, specs)
    # Which commits some tip of a set contains: a few (one per commit) or many (one walk).
    for tips in (commits[-1:], commits[-3:], commits[::2]):
        want = {c for c in commits if any(merge_base_says(git, c, t) for t in tips)}
        assert git.in_any(commits, tips) == want, specs
        assert git.in_any(commits[:2], tips) == want & set(commits[:2]), specs
    # The tags that contain a commit: a tag on every commit (annotated on every other),
    # walked by git tag's shared cache, with and then without a commit-graph.
    for t, tip in enumerate(commits):
        annotated = ["-a", "-m", f"t{t}"] if t % 2 else []
        tagger = ["-c", "user.name=Tagger", "-c", "user.email=tagger@example.org"]
        git.run([*tagger, "tag", *annotated, f"t{t}", tip], purpose="tag every commit")
    for graph in (False, True):
        if graph:
            git.write_commit_graph()
        asked = Git(path)
        for c, commit in enumerate(commits):
            want = {f"t{t}" for t in range(len(commits)) if c in truth[t]}
            assert asked.tags_containing(commit) == want, (c, graph, specs)


def skewed_roots(roots: int) -> list[Spec]:
    """``roots`` root commits dated new, each under a chain of commits dated years
    before it (clock skew), all merged by the tip."""
    specs: list[Spec] = []
    heads = []
    for _ in range(roots):
        specs.append(((), 10_000))  # a root, dated new
        for step in range(9):
            specs.append(((len(specs) - 1,), step))  # dated long before their parent
        heads.append(len(specs) - 1)
    specs.append((tuple(heads), 20_000))  # the tip
    return specs


@pytest.mark.parametrize("roots", [1, 3])
def test_clock_skew_settles_what_the_walk_left_open(tmp_path: Path, roots: int) -> None:
    """git's walking rev-list stops early here and prints ancestors of the tip:
    :meth:`Git.ancestors` settles them (one merge-base each, or with more of them one
    walk of the tip's history), never believes them."""
    commits = build_dag(tmp_path / "repo", skewed_roots(roots))
    git = Git(tmp_path / "repo")
    tip = commits[-1]
    heads = commits[0:-1:10]
    stdin = "".join(f"{c}\n" for c in heads) + f"^{tip}\n"
    printed = git.run(["rev-list", "--stdin"], purpose="walk", input=stdin.encode()).out.split()
    assert set(heads) <= set(printed)  # the walk alone would say "not an ancestor"
    assert all(merge_base_says(git, c, tip) for c in heads)
    assert git.ancestors(heads, tip) == set(heads)
    assert git.ancestors(commits, tip) == set(commits)
    assert git.is_ancestor(heads[0], tip)
    assert not git.is_ancestor(tip, heads[0])
    assert git.not_ancestors([tip], heads[0]) == {tip}
    for head in heads:  # the other direction: which tips contain a commit
        assert git.tips_containing(head, [tip, *heads]) == {tip, head}
    assert git.in_any(commits, [tip]) == set(commits)  # one walk, never stopped early
    assert git.in_any(heads[:2], heads[2:]) == set()


def test_a_missing_commit_is_an_error_never_an_ancestor(tmp_path: Path) -> None:
    commits = build_dag(tmp_path / "repo", [((), 0), ((0,), 1)])
    git = Git(tmp_path / "repo")
    ghost = "0123456789abcdef0123456789abcdef01234567"
    with pytest.raises(GitError, match="not a commit"):
        git.ancestors([commits[0], ghost], commits[1])
    with pytest.raises(GitError, match="not a commit"):
        git.not_ancestors([commits[0]], ghost)
    tree = git.out(["rev-parse", f"{commits[0]}^{{tree}}"], purpose="tree")
    with pytest.raises(GitError, match="tree"):
        git.ancestors([tree], commits[1])


# -- a history shaped like git.git's ----------------------------------------------------


def gitgit_shaped(builder: RepoBuilder, topics: int = 12) -> tuple[list[str], list[str]]:
    """master and maint; each topic branch forks from maint, gets a few commits, is
    merged to master, then (a fix) down to maint, and master merges maint now and
    then; releases are tagged on master. Returns (every topic commit, the tags)."""
    builder.commit("start\n", {"README": "readme\n"})
    builder.tag("v1.0.0")
    builder.git.run(["branch", "-m", "master"], purpose="master")
    builder.git.run(["branch", "maint"], purpose="maint")
    fixes: list[str] = []
    tags = ["v1.0.0"]
    for topic in range(topics):
        name = f"topic{topic}"
        builder.git.run(["checkout", "--quiet", "-b", name, "maint"], purpose="topic")
        for step in range(3):
            fixes.append(builder.commit(f"{name} step {step}\n", {f"{name}/f{step}": f"{step}\n"}))
        builder.git.run(["checkout", "--quiet", "master"], purpose="master")
        builder.merge(name, f"Merge branch '{name}'\n")
        if topic % 2 == 0:
            builder.git.run(["checkout", "--quiet", "maint"], purpose="maint")
            builder.merge(name, f"Merge branch '{name}' into maint\n")
            builder.git.run(["checkout", "--quiet", "master"], purpose="master")
            builder.merge("maint", "Merge branch 'maint'\n")
        builder.commit(f"master work {topic}\n", {"master.txt": f"{topic}\n"})
        if topic % 4 == 3:
            tags.append(f"v1.{topic // 4 + 1}.0")
            builder.tag(tags[-1])
    return fixes, tags


def _new_file_patch(path: str, content: str, subject: str) -> bytes:
    return (
        f"Subject: {subject}\n\n"
        f"diff --git a/{path} b/{path}\nnew file mode 100644\n"
        f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+{content}"
    ).encode()


def test_absorbed_agrees_with_git_on_a_gitgit_shaped_history(builder: RepoBuilder) -> None:
    """One patch per topic commit, pinned at v1.0.0: at every release, `absorbed`
    calls a patch an ancestor exactly when `merge-base --is-ancestor` does (reading it
    from `rev-list --no-walk ^tag` got 27 of these wrong)."""
    fixes, tags = gitgit_shaped(builder)
    root = builder.path
    pin = builder.rev("v1.0.0")
    (root / "patches").mkdir()
    names = []
    for index, fix in enumerate(fixes):
        topic, step = divmod(index, 3)
        name = f"{index + 1:04d}-topic{topic}-step{step}.patch"
        (root / "patches" / name).write_bytes(
            _new_file_patch(f"topic{topic}/f{step}", f"{step}\n", f"topic{topic} step {step}")
        )
        names.append((name, fix))
    (root / "forktool.yaml").write_text(f"pin:\n  tag: v1.0.0\n  commit: {pin}\n")
    (root / "series").write_text("".join(f"{n}\n" for n, _ in names))
    (root / "upstream.map").write_text("".join(f"{n} {c}\n" for n, c in names))
    git = builder.git
    wrong_before = 0
    for tag in tags:
        tip = builder.rev(tag)
        truth = {c: merge_base_says(git, c, tip) for c in fixes}
        wrong_before += len(
            old_not_in(git, fixes, tip) ^ {c for c, yes in truth.items() if not yes}
        )
        result = run_cli("-C", root, "absorbed", "--tag", tag, "--format", "json")
        assert result.code in (0, 1), result.err
        report = json.loads(result.out)
        for patch in report["patches"]:
            (commit,) = patch["upstream_commits"]
            assert patch["ancestor"] is truth[commit], (tag, patch["patch"])
            assert (patch["verdict"] == "retire") is truth[commit], (tag, patch["patch"])
    assert wrong_before > 0  # the fixture tells the two constructions apart


def test_a_slow_walk_without_a_commit_graph_says_so_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a commit-graph, a settling walk that is slow earns one notice naming
    the fix, never a write into the repository; with one, no notice."""
    import forktool.git as git_module

    commits = build_dag(tmp_path / "repo", skewed_roots(3))
    git = Git(tmp_path / "repo")
    heard: list[str] = []
    monkeypatch.setattr(git_module.ancestry, "SLOW_WALK_SECONDS", 0.0)
    git_module.set_graph_notice(heard.append)
    try:
        heads = commits[0:-1:10]
        assert git.ancestors(heads, commits[-1]) == set(heads)  # settled by a full walk
        assert git.ancestors(heads, commits[-1]) == set(heads)
        assert len(heard) == 1
        assert "git commit-graph write --reachable --changed-paths" in heard[0]
        info = tmp_path / "repo" / ".git" / "objects" / "info"
        assert not (info / "commit-graph").exists()  # nothing written unasked
        git.write_commit_graph()
        fresh = Git(tmp_path / "repo")
        git_module.set_graph_notice(heard.append)
        assert fresh.has_commit_graph()
        assert fresh.ancestors(heads, commits[-1]) == set(heads)
        assert len(heard) == 1
    finally:
        git_module.set_graph_notice(None)


def test_a_slow_contains_scan_without_a_commit_graph_says_so_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``git tag --contains`` walks the history as a settling walk does (seconds on a
    history of thousands of tags without a commit-graph): a slow one earns the notice
    too."""
    import forktool.git as git_module

    commits = build_dag(tmp_path / "repo", skewed_roots(3))
    git = Git(tmp_path / "repo")
    git.run(["tag", "t1", commits[-1]], purpose="a tag")
    heard: list[str] = []
    monkeypatch.setattr(git_module.ancestry, "SLOW_WALK_SECONDS", 0.0)
    git_module.set_graph_notice(heard.append)
    try:
        assert git.tags_containing(commits[0]) == {"t1"}
        assert len(heard) == 1 and "commit-graph" in heard[0]
        git.write_commit_graph()
        fresh = Git(tmp_path / "repo")
        git_module.set_graph_notice(heard.append)
        assert fresh.tags_containing(commits[0]) == {"t1"}
        assert len(heard) == 1
    finally:
        git_module.set_graph_notice(None)
