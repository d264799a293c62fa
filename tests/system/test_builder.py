"""RepoBuilder makes the same commits everywhere; the demo upstream has the release shape."""

from __future__ import annotations

from pathlib import Path

import pytest
from testing.helpers import snapshot_tree

from forktool.builder import EPOCH, TICK, RepoBuilder
from forktool.demo import DemoUpstream, build_demo_upstream
from forktool.demo.pulse_changes import F1_SUBJECT, F2_SUBJECT, F3_SUBJECT
from forktool.git import Git

# The demo's commit ids. They depend on nothing but the builder's calls: if one
# changes, every machine must see the same new value (and the demo's docs may
# quote it), so a change here is a deliberate, reviewed step.
DEMO_IDS = {
    "fix_empty_config": "5b0817d52277e23f33db6615a89bbe5b8aef0028",
    "fix_retry_timeout": "7c7c98291d2b95c93d4eeba42be81d110c881fd7",
    "fix_utf8": "3439b4ea41eae58556a8a31396a05bb3eb0db870",
    "fix_utf8_cherry": "c349aa4df857242e412c9aed16ef814789ee93b1",
    "release_1_2_base": "d9ffd1cdacad6f5b568e8f7555ac0c747d3d07fa",
}
DEMO_TAGS = {
    "v1.0.0": "5c7e97cfaf4f9316d72bdf88f9e9b336fe11e9d5",
    "v1.1.0": "b444e8a60cf8ba740d4bf36bdbc98ce348ff5066",
    "v1.1.1rc0": "31cc32d3b54b3b0b143803cb9b52aad3e7725b0f",
    "v1.2.0": "2926ad0f4853ce8af34efadf27860471ba58bbb3",
    "v1.3.0rc0": "547f9cf1c5060e92abc71ab71af9960cbdd0c3a5",
    "v1.3.0": "5b14da2f6e18085eed592351a5fc577a7a1f6b7f",
}


def git(path: Path, *args: str, stdin: bytes | None = None) -> str:
    return Git(path).run(list(args), purpose="run a test query", input=stdin).out.strip()


def diff(path: Path, old: str, new: str) -> str:
    return Git(path).run(["diff", "--no-ext-diff", old, new], purpose="diff in a test").out


def refs(path: Path) -> str:
    return git(path, "for-each-ref", "--format=%(refname) %(objectname) %(*objectname)")


def patch_id(path: Path, patch: str) -> str:
    return git(path, "patch-id", "--stable", stdin=patch.encode()).split()[0]


def apply_to(path: Path, treeish: str, patch: str) -> tuple[str, str]:
    """``patch`` applied to ``treeish`` in a temporary index: (git apply -v output, new tree)."""
    with Git(path).temp_index(treeish, keep_objects=True) as index:
        res = index.run(
            ["apply", "--cached", "-v", "-"], purpose="apply a test patch", input=patch.encode()
        )
        return res.err, index.write_tree()


def reverse_applies(path: Path, treeish: str, patch: str) -> bool:
    with Git(path).temp_index(treeish) as index:
        args = ["apply", "--cached", "--check", "-R", "-"]
        return index.run(args, purpose="reverse a test patch", input=patch.encode(), check=False).ok


def made_on(path: Path, treeish: str, commit: str) -> str:
    """The patch a fork would carry on ``treeish`` for the change ``commit`` makes."""
    _, tree = apply_to(path, treeish, diff(path, f"{commit}^", commit))
    return diff(path, f"{treeish}^{{tree}}", tree)


# -- determinism ------------------------------------------------------------------


def test_demo_upstream_has_the_same_ids_in_two_directories(tmp_path: Path) -> None:
    first = build_demo_upstream(tmp_path / "one")
    second = build_demo_upstream(tmp_path / "two")
    assert refs(first.path) == refs(second.path)
    assert {**vars(first), "path": None} == {**vars(second), "path": None}


def test_demo_upstream_ids_are_the_pinned_ones(demo_upstream: DemoUpstream) -> None:
    assert {name: getattr(demo_upstream, name) for name in DEMO_IDS} == DEMO_IDS
    assert demo_upstream.tags == DEMO_TAGS


def test_same_calls_give_same_ids_whatever_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def build(path: Path) -> str:
        repo = RepoBuilder.init(path)
        repo.commit("one", {"a.txt": "a\n"})
        repo.tag("v1")
        return refs(path)

    plain = build(tmp_path / "plain")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Someone Else")
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2001-01-01T00:00:00Z")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / ".gitconfig").write_text("[user]\n\tname = Home Config\n")
    assert build(tmp_path / "noisy") == plain


def test_builder_writes_no_config_outside_the_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    RepoBuilder.init(tmp_path / "repo").commit("one", {"a": "a"})
    assert snapshot_tree(home) == {}


def test_clock_starts_at_the_epoch_and_ticks_an_hour(builder: RepoBuilder) -> None:
    builder.commit("one", {"a": "1"})
    builder.tag("t1")
    builder.commit("two", {"a": "2"}, author="Ben Okafor <ben@pulse.example>")
    log = git(builder.path, "log", "--format=%at %ct %an <%ae> %cn <%ce>")
    assert log.splitlines() == [
        f"{EPOCH + 2 * TICK} {EPOCH + 2 * TICK} Ben Okafor <ben@pulse.example> "
        "C O Mitter <committer@example.com>",
        f"{EPOCH} {EPOCH} A U Thor <author@example.com> C O Mitter <committer@example.com>",
    ]
    assert git(builder.path, "for-each-ref", "--format=%(taggerdate:unix)", "refs/tags/t1") == str(
        EPOCH + TICK
    )


# -- the builder's operations -----------------------------------------------------


def test_commit_writes_deletes_and_returns_head(builder: RepoBuilder) -> None:
    first = builder.commit("add", {"dir/a.txt": "a\n", "b.bin": b"\x00\x01"})
    second = builder.commit("drop a", {"dir/a.txt": None})
    assert builder.rev("HEAD") == second
    assert git(builder.path, "rev-parse", f"{second}^") == first
    assert git(builder.path, "ls-tree", "-r", "--name-only", second) == "b.bin"
    assert Git(builder.path).blob(first, "b.bin") == b"\x00\x01"
    assert not (builder.path / "dir/a.txt").exists()


def test_commit_keeps_message_lines_that_start_with_hash(builder: RepoBuilder) -> None:
    commit = builder.commit("fix: crash\n\n#42 was the report\n")
    assert (
        git(builder.path, "log", "-1", "--format=%B", commit) == "fix: crash\n\n#42 was the report"
    )


@pytest.mark.parametrize("name", ["../out.txt", "/abs.txt", ".git/config", "a/../../b"])
def test_commit_refuses_paths_outside_the_work_tree(builder: RepoBuilder, name: str) -> None:
    with pytest.raises(ValueError, match="not a work-tree path"):
        builder.commit("bad", {name: "x"})


def test_branch_checkout_and_merge_make_a_two_parent_commit(builder: RepoBuilder) -> None:
    base = builder.commit("base", {"a": "a\n"})
    assert builder.branch("topic") == base
    builder.checkout("topic")
    topic = builder.commit("topic", {"b": "b\n"})
    builder.checkout("main")
    main = builder.commit("main", {"c": "c\n"})
    merge = builder.merge("topic", "Merge branch 'topic'")
    assert git(builder.path, "rev-parse", f"{merge}^1", f"{merge}^2").split() == [main, topic]
    assert git(builder.path, "log", "-1", "--format=%s", merge) == "Merge branch 'topic'"
    assert builder.read("b") == "b\n"


def test_cherry_pick_x_records_the_source(builder: RepoBuilder) -> None:
    builder.commit("base", {"a": "a\n"})
    builder.branch("release")
    fix = builder.commit("fix", {"b": "b\n"})
    other = builder.commit("other fix", {"c": "c\n"})
    builder.checkout("release")
    picked = builder.cherry_pick(fix)
    plain = builder.cherry_pick(other, x=False)
    assert picked != fix
    assert git(builder.path, "log", "-1", "--format=%B", picked) == (
        f"fix\n\n(cherry picked from commit {fix})"
    )
    assert git(builder.path, "log", "-1", "--format=%B", plain) == "other fix"
    assert git(builder.path, "log", "-1", "--format=%an %at", picked) == (
        git(builder.path, "log", "-1", "--format=%an %at", fix)
    )


def test_tag_returns_the_peeled_commit(builder: RepoBuilder) -> None:
    first = builder.commit("one", {"a": "1"})
    builder.commit("two", {"a": "2"})
    assert builder.tag("v1", first, message="release 1") == first
    assert builder.tag("light", annotated=False) == builder.rev("HEAD")
    assert git(builder.path, "cat-file", "-t", "refs/tags/v1") == "tag"
    assert git(builder.path, "cat-file", "-t", "refs/tags/light") == "commit"
    assert git(builder.path, "tag", "-l", "--format=%(contents:subject)", "v1") == "release 1"


def test_move_tag_points_the_tag_elsewhere(builder: RepoBuilder) -> None:
    first = builder.commit("one", {"a": "1"})
    second = builder.commit("two", {"a": "2"})
    builder.tag("v1", first)
    assert builder.move_tag("v1", second) == second
    assert Git(builder.path).find_tag_commit("v1") == second
    assert git(builder.path, "cat-file", "-t", "refs/tags/v1") == "tag"


def test_shallow_clone_is_really_shallow(builder: RepoBuilder, tmp_path: Path) -> None:
    for n in range(4):
        builder.commit(f"c{n}", {"a": str(n)})
    clone = RepoBuilder.shallow_clone(builder.path, tmp_path / "shallow", 2)
    assert Git(clone.path).is_shallow()
    assert git(clone.path, "rev-list", "--count", "HEAD") == "2"
    assert clone.rev("HEAD") == builder.rev("HEAD")


def test_clone_is_full_and_its_clock_continues(builder: RepoBuilder, tmp_path: Path) -> None:
    builder.commit("one", {"a": "1"})
    builder.tag("v1")
    clone = RepoBuilder.clone(builder.path, tmp_path / "clone")
    assert not Git(clone.path).is_shallow()
    assert clone.rev("v1") == builder.rev("v1")
    clone.commit("two", {"a": "2"})
    assert git(clone.path, "log", "-1", "--format=%ct") == str(EPOCH + 2 * TICK)


def test_reading_changes_nothing_and_committing_does(builder: RepoBuilder) -> None:
    builder.commit("one", {"a": "1"})
    before = snapshot_tree(builder.path)
    builder.rev("HEAD")
    builder.read("a")
    assert snapshot_tree(builder.path) == before
    builder.commit("two", {"a": "2"})
    assert snapshot_tree(builder.path) != before


# -- the demo upstream's shape --------------------------------------------------------


def test_demo_has_the_release_tags_all_annotated(demo_upstream: DemoUpstream) -> None:
    tags = git(
        demo_upstream.path, "for-each-ref", "--format=%(refname:strip=2) %(objecttype)", "refs/tags"
    )
    assert sorted(tags.splitlines()) == sorted(f"{t} tag" for t in DEMO_TAGS)
    assert Git(demo_upstream.path).tag_commits() == demo_upstream.tags


def test_demo_fix_subjects(demo_upstream: DemoUpstream) -> None:
    subjects = [
        git(demo_upstream.path, "log", "-1", "--format=%s", c)
        for c in (
            demo_upstream.fix_empty_config,
            demo_upstream.fix_retry_timeout,
            demo_upstream.fix_utf8,
        )
    ]
    assert subjects == [F1_SUBJECT, F2_SUBJECT, F3_SUBJECT]


def test_v1_2_0_holds_f1_by_ancestry_but_not_f2_nor_f3(demo_upstream: DemoUpstream) -> None:
    repo = Git(demo_upstream.path)
    v120 = demo_upstream.tags["v1.2.0"]
    assert repo.is_ancestor(demo_upstream.fix_empty_config, v120)
    assert not repo.is_ancestor(demo_upstream.fix_retry_timeout, v120)
    assert not repo.is_ancestor(demo_upstream.fix_utf8, v120)
    assert repo.is_ancestor(demo_upstream.fix_utf8_cherry, v120)


def test_v1_2_0_carries_f3_as_a_cherry_pick(demo_upstream: DemoUpstream) -> None:
    message = git(demo_upstream.path, "log", "-1", "--format=%B", demo_upstream.fix_utf8_cherry)
    assert message.startswith(F3_SUBJECT + "\n")
    assert message.endswith(f"(cherry picked from commit {demo_upstream.fix_utf8})")


def test_f2_landed_one_commit_after_the_release_1_2_branch_point(
    demo_upstream: DemoUpstream,
) -> None:
    path = demo_upstream.path
    base = git(path, "merge-base", "main", "release-1.2")
    assert base == demo_upstream.release_1_2_base
    assert git(path, "rev-parse", f"{demo_upstream.fix_retry_timeout}^") == base


def test_v1_3_0rc0_holds_f2_and_f3(demo_upstream: DemoUpstream) -> None:
    repo = Git(demo_upstream.path)
    for tag in ("v1.3.0rc0", "v1.3.0"):
        assert (
            repo.not_ancestors([demo_upstream.fix_retry_timeout, demo_upstream.fix_utf8], tag)
            == set()
        )


def test_v1_1_1rc0_carries_a_backport_and_no_fix(demo_upstream: DemoUpstream) -> None:
    path = demo_upstream.path
    log = git(path, "log", "--format=%B", "v1.1.0..v1.1.1rc0")
    assert "(cherry picked from commit " in log
    fixes = [
        demo_upstream.fix_empty_config,
        demo_upstream.fix_retry_timeout,
        demo_upstream.fix_utf8,
    ]
    assert Git(path).not_ancestors(fixes, "v1.1.1rc0") == set(fixes)


def test_stale_bot_workflow_arrives_in_v1_2_0(demo_upstream: DemoUpstream) -> None:
    repo = Git(demo_upstream.path)
    assert repo.blob("v1.1.0", ".github/workflows/stale-bot.yml") is None
    assert repo.blob("v1.2.0", ".github/workflows/stale-bot.yml") is not None


def test_demo_package_versions_match_their_tags(demo_upstream: DemoUpstream) -> None:
    repo = Git(demo_upstream.path)
    for tag in DEMO_TAGS:
        init = repo.blob(tag, "pulse/__init__.py") or b""
        assert f'__version__ = "{tag[1:]}"'.encode() in init


def test_each_fix_is_the_change_a_fork_carries_on_v1_1_0(demo_upstream: DemoUpstream) -> None:
    path = demo_upstream.path
    for fix in (
        demo_upstream.fix_empty_config,
        demo_upstream.fix_retry_timeout,
        demo_upstream.fix_utf8,
    ):
        upstream_diff = diff(path, f"{fix}^", fix)
        assert patch_id(path, made_on(path, "v1.1.0", fix)) == patch_id(path, upstream_diff)


def test_f1_patch_applies_to_v1_1_0_at_its_own_lines(demo_upstream: DemoUpstream) -> None:
    path = demo_upstream.path
    fix = demo_upstream.fix_empty_config
    report, _ = apply_to(path, "v1.1.0", diff(path, f"{fix}^", fix))
    assert "offset" not in report
    assert "Applied patch pulse/config.py cleanly." in report


def test_f2_patch_made_on_v1_1_0_applies_to_v1_2_0_only_at_an_offset(
    demo_upstream: DemoUpstream,
) -> None:
    path = demo_upstream.path
    patch = made_on(path, "v1.1.0", demo_upstream.fix_retry_timeout)
    exact, _ = apply_to(path, "v1.1.0", patch)
    shifted, _ = apply_to(path, "v1.2.0", patch)
    assert "offset" not in exact
    assert "Hunk #1 succeeded at 99 (offset 3 lines)." in shifted


def test_fork_patches_are_present_in_the_releases_that_hold_the_fixes(
    demo_upstream: DemoUpstream,
) -> None:
    path = demo_upstream.path
    fixes = {
        "F1": demo_upstream.fix_empty_config,
        "F2": demo_upstream.fix_retry_timeout,
        "F3": demo_upstream.fix_utf8,
    }
    patches = {name: made_on(path, "v1.1.0", fix) for name, fix in fixes.items()}
    present = {
        tag: sorted(name for name, patch in patches.items() if reverse_applies(path, tag, patch))
        for tag in ("v1.1.0", "v1.1.1rc0", "v1.2.0", "v1.3.0rc0")
    }
    assert present == {
        "v1.1.0": [],
        "v1.1.1rc0": [],
        "v1.2.0": ["F1", "F3"],
        "v1.3.0rc0": ["F1", "F2", "F3"],
    }
