"""The release sync and the scheduled poll, on a fixture history with every kind of patch.

Upstream ``v1`` is pinned; ``v2`` absorbs fix F (patch 0001 retires), leaves b.py
alone (0002 unchanged), inserts lines above 0003's hunk (rebased at an offset) and
rewrites the lines 0004 changes (a conflict a human must resolve).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from testing.helpers import run_cli, snapshot_tree
from testing.sync_fork import (
    IDENTITY,
    V1,
    _drop,
    _drop_conflicting_patch,
    _edit,
    v3_with_0002_cherry_picked,
)

from forktool.builder import RepoBuilder
from forktool.git import Git


def _worktree_snapshot(root: Path) -> dict[str, bytes]:
    return {k: v for k, v in snapshot_tree(root).items() if not k.startswith(".git")}


def test_poll_reports_the_plan_and_exit_code(sync_fork: RepoBuilder) -> None:
    result = run_cli("-C", sync_fork.path, "upstream", "poll", "--no-fetch", "--format", "json")
    assert result.code == 4, result.out  # 0004 conflicts: needs hands
    data = result.json()
    assert data["verdict"] == "needs-hands"
    assert [r["tag"] for r in data["newer"]] == ["v2"]  # type: ignore[union-attr,index]
    plan = data["plan"]
    assert [r["patch"] for r in plan["retired"]] == ["0001-a.patch"]  # type: ignore[index]
    assert {e["patch"]: e["status"] for e in plan["refreshed"]} == {  # type: ignore[index]
        "0002-b.patch": "unchanged",
        "0003-c.patch": "rebased",
        "0004-d.patch": "conflict",
    }


def test_poll_says_nothing_new_at_the_newest_release(sync_fork: RepoBuilder) -> None:
    config = sync_fork.path / "forktool.yaml"
    config.write_text(
        config.read_text()
        .replace("tag: v1", "tag: v2")
        .replace(sync_fork.rev("v1"), sync_fork.rev("v2"))
    )
    result = run_cli("-C", sync_fork.path, "upstream", "poll", "--no-fetch", "--format", "json")
    assert result.code == 0
    assert result.json()["verdict"] == "nothing-new"


def test_full_sync_with_a_conflict_resolved_by_hand(sync_fork: RepoBuilder) -> None:
    root = sync_fork.path
    head = sync_fork.rev("HEAD")
    before = _worktree_snapshot(root)

    stopped = run_cli("-C", root, "sync", "v2", "--no-fetch", "--format", "json")
    assert stopped.code == 1
    data = stopped.json()
    assert data["stage"] == "refresh"
    assert [c.split(":")[0] for c in data["conflicts"]] == ["0004-d.patch"]  # type: ignore[union-attr]
    assert _worktree_snapshot(root) == before  # the user's checkout is untouched
    assert sync_fork.rev("HEAD") == head

    resolve = Path(str(data["message"]).split(" in ", 1)[1].split(", then")[0])
    assert (resolve / "d.py").is_file()
    v2_d = _edit(V1["d.py"], "d.py line 6\n", "d.py line 6 rewritten upstream\n")
    (resolve / "d.py").write_text(
        _edit(v2_d, "d.py line 6 rewritten upstream\n", "d.py line 6 forked\n")
    )
    for leftover in resolve.rglob("*.rej"):
        leftover.unlink()

    done = run_cli("-C", root, "sync", "--continue", "--format", "json")
    assert done.code == 0, done.out
    report = done.json()
    assert report["stage"] == "done"
    assert [r["patch"] for r in report["retired"]] == ["0001-a.patch"]  # type: ignore[index]
    assert report["check"]["ok"] is True  # type: ignore[index]
    assert {p["file"] for p in report["pins"]} == {"forktool.yaml"}  # type: ignore[union-attr]
    assert _worktree_snapshot(root) == before
    assert sync_fork.rev("HEAD") == head

    branch = "forktool/sync-v2"
    tip = sync_fork.rev(branch)
    parents = sync_fork.git.out(["rev-list", "--parents", "-n1", tip], purpose="parents").split()[
        1:
    ]
    assert parents[1] == sync_fork.rev("v2")  # the release TAG was merged, not upstream's branch
    series = sync_fork.git.out(["show", f"{branch}:series"], purpose="series")
    assert series.split() == ["0002-b.patch", "0003-c.patch", "0004-d.patch"]
    assert "tag: v2" in sync_fork.git.out(["show", f"{branch}:forktool.yaml"], purpose="config")
    record = sync_fork.git.out(["show", f"{branch}:FORK.md"], purpose="record")
    assert "| retired | 0001-a.patch |" in record
    reports = sync_fork.git.git_dir() / "forktool" / "sync" / "v2"
    markdown = (reports / "forktool" / "sync-v2" / "report.md").read_text()
    assert markdown.startswith("# Sync: v1 → v2\n")
    assert "| `0003-c.patch` | rebased |" in markdown
    assert not (sync_fork.git.git_dir() / "forktool" / "sync" / "state.json").exists()
    worktrees = sync_fork.git.out(["worktree", "list"], purpose="worktrees").splitlines()
    assert len(worktrees) == 1

    again = run_cli("-C", root, "sync", "v2", "--no-fetch", "--format", "json")
    assert again.code == 0
    assert "already synced" in str(again.json()["message"])
    assert sync_fork.rev(branch) == tip


def test_abort_restores_everything(sync_fork: RepoBuilder) -> None:
    root = sync_fork.path
    before = _worktree_snapshot(root)
    branches = sync_fork.git.out(["branch", "--list"], purpose="branches")
    assert run_cli("-C", root, "sync", "v2", "--no-fetch").code == 1
    in_progress = run_cli("-C", root, "sync", "v2", "--no-fetch")
    assert in_progress.code == 2
    assert in_progress.error_lines[0].startswith("error: a sync to v2 is in progress")
    aborted = run_cli("-C", root, "sync", "--abort")
    assert aborted.code == 0
    assert aborted.out.startswith("sync to v2 aborted")
    assert _worktree_snapshot(root) == before
    assert sync_fork.git.out(["branch", "--list"], purpose="branches") == branches
    assert len(sync_fork.git.out(["worktree", "list"], purpose="wt").splitlines()) == 1
    assert not (sync_fork.git.git_dir() / "forktool" / "sync").exists()  # nor an empty dir


def test_dry_run_writes_nothing(sync_fork: RepoBuilder) -> None:
    before = snapshot_tree(sync_fork.path)
    result = run_cli(
        "-C", sync_fork.path, "sync", "v2", "--no-fetch", "--dry-run", "--format", "json"
    )
    assert result.code == 1  # the plan has a conflict
    assert json.loads(result.out)["dry_run"] is True
    assert snapshot_tree(sync_fork.path) == before


def without_identity(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    """No identity in the environment, and a home without git config of its own."""
    for key in IDENTITY:
        monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)


def test_sync_refuses_an_unknown_tag_and_a_missing_identity(
    sync_fork: RepoBuilder, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    unknown = run_cli("-C", sync_fork.path, "sync", "v9", "--no-fetch")
    assert unknown.code == 2
    assert unknown.error_lines[0] == "error: unknown tag 'v9'"
    without_identity(monkeypatch, tmp_path)
    anonymous = run_cli("-C", sync_fork.path, "sync", "v2", "--no-fetch")
    assert anonymous.code == 2
    assert anonymous.error_lines[0] == "error: sync commits on a new branch and needs an identity"
    assert sync_fork.git.branch_commit("forktool/sync-v2") is None


def test_sync_takes_the_identity_from_the_users_own_git_config(
    sync_fork: RepoBuilder, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # As git does: the user's ~/.gitconfig (or the XDG one) when neither the environment
    # nor the repository names anyone (only user.* is read from them).
    _drop_conflicting_patch(sync_fork)
    without_identity(monkeypatch, tmp_path)
    xdg = tmp_path / "xdg"
    (xdg / "git").mkdir(parents=True)
    (xdg / "git" / "config").write_text("[user]\n\tname = Xdg Person\n\temail = xdg@example.org\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    (tmp_path / ".gitconfig").write_text("[user]\n\tname = Release Engineer\n")
    code, data = _poll(sync_fork)
    assert (code, data["blockers"]) == (3, [])
    result = run_cli("-C", sync_fork.path, "sync", "v2", "--no-fetch", "--format", "json")
    assert result.code == 0, result.err
    author = sync_fork.git.run(
        ["log", "-1", "--format=%an <%ae>", "forktool/sync-v2"], purpose="the sync's author"
    )
    # ~/.gitconfig wins over the XDG file for the name, as in git; the email is the XDG one.
    assert author.out.strip() == "Release Engineer <xdg@example.org>"


def test_merge_takes_the_tag_for_upstream_files_and_reports_in_place_edits(
    sync_fork: RepoBuilder,
) -> None:
    root = sync_fork.path
    # Drop the conflicting patch, then break the charter: edit an upstream file in place.
    series = (root / "series").read_text().replace("0004-d.patch\n", "")
    umap = (root / "upstream.map").read_text().replace("0004-d.patch none\n", "")
    sync_fork.commit(
        "fork: drop 0004; hot-fix b.py in place\n",
        {
            "series": series,
            "upstream.map": umap,
            "patches/0004-d.patch": None,
            "b.py": _edit(V1["b.py"], "b.py line 9\n", "b.py line 9 hot-fixed\n"),
        },
    )
    result = run_cli("-C", root, "sync", "v2", "--no-fetch", "--format", "json")
    data = result.json()
    assert data["notes"] == [
        "b.py: was edited in place on the fork; the merge takes v2's version"
    ], data
    merged_b = sync_fork.git.out(["show", "forktool/sync-v2:b.py"], purpose="b.py")
    assert "hot-fixed" not in merged_b
    assert "b.py line 3 forked" not in merged_b  # patches stay patches; the tree is v2's
    assert result.code == 0, result.out


def test_sync_refuses_uncommitted_changes_to_the_fork_files(sync_fork: RepoBuilder) -> None:
    series = sync_fork.path / "series"
    series.write_text("# a comment not yet committed\n" + series.read_text())
    before = snapshot_tree(sync_fork.path)
    result = run_cli("-C", sync_fork.path, "sync", "v2", "--no-fetch")
    assert result.code == 2
    assert result.error_lines == [
        "error: uncommitted changes to the fork's files: series",
        "hint: commit or stash them first: the sync branch starts from HEAD",
    ]
    assert snapshot_tree(sync_fork.path) == before


def test_sync_refuses_to_drop_a_file_the_ledger_does_not_declare(
    sync_fork: RepoBuilder,
) -> None:
    """The merge keeps the tag's tree and the fork's declared files: a committed
    packaging directory the ledger does not declare (a Debian fork's debian/) would
    vanish from the sync branch, and its check would pass. sync refuses first, naming
    the files; poll says the same; nothing changes."""
    sync_fork.commit(
        "packaging\n", {"debian/control": "Source: app\n", "debian/rules": "#!/usr/bin/make -f\n"}
    )
    before = snapshot_tree(sync_fork.path)
    result = run_cli("-C", sync_fork.path, "sync", "v2", "--no-fetch")
    assert result.code == 2
    assert result.error_lines == [
        "error: 2 file(s) the fork adds are not declared in alignment.ledger: debian/control, "
        "debian/rules; the merge keeps only the fork's declared files, so the sync would "
        "drop them",
        "hint: declare them ('forktool check --only align' gives the line to add, e.g. "
        "'add debian/** permanent <why>'), commit, then sync again",
    ]
    assert snapshot_tree(sync_fork.path) == before
    _drop_conflicting_patch(sync_fork)
    code, data = _poll(sync_fork)
    assert code == 4
    assert (
        [b for b in data["blockers"] if "not declared" in b]
        == [  # type: ignore[union-attr]
            result.error_lines[0][len("error: ") :] + ": " + result.error_lines[1][len("hint: ") :]
        ]
    )


# -- poll says "needs hands" whenever 'sync' would not run unattended ---------------------


def _poll(fork: RepoBuilder) -> tuple[int, dict[str, object]]:
    result = run_cli("-C", fork.path, "upstream", "poll", "--no-fetch", "--format", "json")
    return result.code, result.json()


def test_poll_is_clean_when_sync_can_run(sync_fork: RepoBuilder) -> None:
    _drop_conflicting_patch(sync_fork)
    code, data = _poll(sync_fork)
    assert (code, data["verdict"], data["blockers"]) == (3, "clean-plan", [])


def test_poll_needs_hands_without_a_commit_identity(
    sync_fork: RepoBuilder, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _drop_conflicting_patch(sync_fork)
    without_identity(monkeypatch, tmp_path)
    code, data = _poll(sync_fork)
    assert (code, data["verdict"]) == (4, "needs-hands")
    assert data["blockers"] == [
        "sync commits on a new branch and needs an identity: set user.name and user.email "
        "in this repository (git config user.name ...) or in your own git config "
        "(git config --global ...), or GIT_AUTHOR_NAME and GIT_AUTHOR_EMAIL"
    ]
    text = run_cli("-C", sync_fork.path, "upstream", "poll", "--no-fetch")
    assert "sync cannot start: sync commits on a new branch and needs an identity" in text.out
    assert text.out.splitlines()[-1] == "v2: a sync needs hands (exit 4)"


def test_poll_needs_hands_with_uncommitted_fork_files(sync_fork: RepoBuilder) -> None:
    _drop_conflicting_patch(sync_fork)
    (sync_fork.path / "upstream.map").write_text(
        "# edited, not committed\n" + (sync_fork.path / "upstream.map").read_text()
    )
    code, data = _poll(sync_fork)
    assert code == 4
    assert data["blockers"] == [
        "uncommitted changes to the fork's files: upstream.map: commit or stash them first: "
        "the sync branch starts from HEAD"
    ]


def test_poll_needs_hands_while_a_sync_is_stopped_or_the_record_is_broken(
    sync_fork: RepoBuilder,
) -> None:
    assert run_cli("-C", sync_fork.path, "sync", "v2", "--no-fetch").code == 1  # stops on 0004
    code, data = _poll(sync_fork)
    assert code == 4
    assert data["blockers"] == [
        "a sync to v2 is in progress on forktool/sync-v2 (stopped at refresh): finish it with "
        "'forktool sync --continue' or drop it with 'forktool sync --abort'",
        "branch 'forktool/sync-v2' already exists and is not a finished sync to v2: "
        "delete it (git branch -D forktool/sync-v2)",
    ]
    assert run_cli("-C", sync_fork.path, "sync", "--abort").code == 0
    _drop_conflicting_patch(sync_fork)
    record = (sync_fork.path / "FORK.md").read_text()
    sync_fork.commit(
        "fork: break the record\n",
        {"FORK.md": record.split("<!-- forktool:retirement-record:end")[0]},
    )
    code, data = _poll(sync_fork)
    assert code == 4
    assert data["blockers"] == [
        "FORK.md: one record marker without the other ('<!-- forktool:retirement-record:end -->' "
        "is missing): FORK.md needs exactly one '<!-- forktool:retirement-record:begin -->' line followed by one "
        "'<!-- forktool:retirement-record:end -->' line"
    ]


def test_poll_needs_hands_for_a_patch_waiting_for_upstream(sync_fork: RepoBuilder) -> None:
    _drop_conflicting_patch(sync_fork)
    umap = (sync_fork.path / "upstream.map").read_text()
    sync_fork.commit(
        "fork: 0002 waits for a PR\n",
        {
            "upstream.map": umap.replace(
                "0002-b.patch none", "0002-b.patch pending https://forge.example/up/pull/7"
            )
        },
    )
    code, data = _poll(sync_fork)
    assert code == 4
    assert data["plan"]["notes"] == [  # type: ignore[index]
        "0002-b.patch: pending: waiting for PR https://forge.example/up/pull/7: never retired "
        "until its commit is in upstream.map (forktool upstream resolve)"
    ]


# -- failure paths: exit 2 changes nothing; no dead ends --------------------------------


def _state_left(fork: RepoBuilder) -> tuple[object, ...]:
    git_dir = fork.git.git_dir()
    return (
        fork.git.out(["branch", "--list"], purpose="branches"),
        len(fork.git.out(["worktree", "list"], purpose="worktrees").splitlines()),
        (git_dir / "forktool" / "sync" / "state.json").exists(),
        (git_dir / "forktool" / "refresh").exists(),
    )


def test_a_patch_already_on_the_tag_is_flagged_before_the_refresh(
    sync_fork: RepoBuilder,
) -> None:
    v3_with_0002_cherry_picked(sync_fork)
    plan = run_cli(
        "-C", sync_fork.path, "sync", "v3", "--no-fetch", "--dry-run", "--format", "json"
    )
    data = plan.json()
    assert data["decisions"] == ["0002-b.patch"]
    assert data["decide"] == "forktool retire 0002-b.patch --tag v3 --force --reason '...'"
    assert "1 patch(es) already on v3 (each change is there: it reverse-applies, " in str(
        data["notes"]
    )
    assert not any(str(c).startswith("0002-b.patch") for c in data["conflicts"])  # type: ignore[union-attr]
    poll = run_cli("-C", sync_fork.path, "upstream", "poll", "--no-fetch", "--format", "json")
    assert poll.code == 4
    before = _state_left(sync_fork)
    result = run_cli("-C", sync_fork.path, "sync", "v3", "--no-fetch")
    assert result.code == 2
    assert result.error_lines == [
        "error: 1 patch(es) already on v3: 0002-b.patch; the sync was rolled back: no branch, "
        "worktree or state is left",
        "hint: record every decision at once: forktool retire 0002-b.patch --tag v3 --force "
        "--reason '...'; commit, and run 'forktool sync v3' again",
    ]
    assert _state_left(sync_fork) == before


def test_every_patch_already_on_the_tag_is_decided_in_one_round(sync_fork: RepoBuilder) -> None:
    """Two backports on v3: the plan and the sync name both, with one command for both."""
    sync_fork.checkout("upstream")
    sync_fork.commit(
        "b and d: the fork's changes, backported\n",
        {
            "b.py": _edit(V1["b.py"], "b.py line 3\n", "b.py line 3 forked\n"),
            "d.py": _edit(V1["d.py"], "d.py line 6\n", "d.py line 6 forked\n"),
        },
    )
    sync_fork.tag("v3")
    sync_fork.checkout("main")
    plan = run_cli("-C", sync_fork.path, "sync", "v3", "--no-fetch", "--dry-run")
    decide = "forktool retire 0002-b.patch 0004-d.patch --tag v3 --force --reason '...'"
    assert "2 patch(es) already on v3" in " ".join(plan.out.split())
    assert decide in " ".join(plan.out.split())
    result = run_cli("-C", sync_fork.path, "sync", "v3", "--no-fetch")
    assert result.code == 2
    assert result.error_lines[0].startswith(
        "error: 2 patch(es) already on v3: 0002-b.patch, 0004-d.patch;"
    )
    assert decide in result.error_lines[1]
    retire = run_cli("-C", sync_fork.path, *decide.replace("'...'", "backported").split()[1:])
    assert retire.code == 0, retire.out
    assert sync_fork.read("series").split() == ["0001-a.patch", "0003-c.patch"]


def test_a_pending_patch_already_on_the_tag_is_told_to_record_its_commit_not_forced(
    sync_fork: RepoBuilder,
) -> None:
    """The PR merged (the change is on v3): resolve --write lets ancestry retire it."""
    v3_with_0002_cherry_picked(sync_fork)
    umap = sync_fork.read("upstream.map")
    sync_fork.commit(
        "fork: 0002 waits for a PR\n",
        {"upstream.map": umap.replace("0002-b.patch none", "0002-b.patch pending #7")},
    )
    plan = run_cli(
        "-C", sync_fork.path, "sync", "v3", "--no-fetch", "--dry-run", "--format", "json"
    )
    assert plan.json()["notes"][-1] == (  # type: ignore[index]
        "1 patch(es) already on v3 (each change is there: it reverse-applies, or a 3-way merge "
        "of it changes nothing; but no mapped commit proves it): 0002-b.patch; record every "
        "decision at once, before the sync: forktool "
        "retire 0002-b.patch --tag v3 --force --reason '...' (or map their upstream commits: "
        "forktool upstream resolve --write, forktool map suggest --write)"
    )


def test_refresh_says_retire_it_first_and_opens_no_worktree(
    sync_fork: RepoBuilder, tmp_path: Path
) -> None:
    v3_with_0002_cherry_picked(sync_fork)
    wt = tmp_path / "resolve"
    result = run_cli(
        "-C", sync_fork.path, "refresh", "--onto", "v3", "--worktree", wt, "--format", "json"
    )
    assert result.code == 1
    data = result.json()
    assert data["message"] == (  # 0001's fix is in v3 (absorbed): retire it first
        "2 patches are already on v3 (0001-a.patch, 0002-b.patch): retire them first "
        "(forktool retire PATCH... --tag v3 --force --reason '...') or drop them; "
        "0004-d.patch also conflicts on v3: rerun with --worktree DIR to resolve it by hand "
        "once those are retired; nothing was written"
    )
    assert data["in_progress"] is False
    assert not wt.exists()


def _failing_post_checkout_hook(fork: RepoBuilder) -> None:
    hook = fork.git.git_dir() / "hooks" / "post-checkout"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(
        "#!/bin/sh\necho 'fatal: the checkout hook refused' >&2\necho 'more noise' >&2\nexit 1\n"
    )
    hook.chmod(0o755)


def test_sync_whose_worktree_cannot_be_made_leaves_nothing(sync_fork: RepoBuilder) -> None:
    before = _state_left(sync_fork)
    _failing_post_checkout_hook(sync_fork)
    result = run_cli("-C", sync_fork.path, "sync", "v2", "--no-fetch")
    assert result.code == 2
    assert result.error_lines[0] == (
        "error: git could not create a worktree for forktool/sync-v2: fatal: the checkout hook "
        "refused; the sync was rolled back: no branch, worktree or state is left"
    )
    assert _state_left(sync_fork) == before


def test_refresh_whose_worktree_cannot_be_made_leaves_nothing(
    sync_fork: RepoBuilder, tmp_path: Path
) -> None:
    _drop(sync_fork, "0001-a.patch")  # retired: the refresh now stops on 0004's conflict
    before = _state_left(sync_fork)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory\n")
    result = run_cli("-C", sync_fork.path, "refresh", "--onto", "v2", "--worktree", blocker / "wt")
    assert result.code == 2
    assert result.error_lines[0].startswith("error: git could not create the worktree ")
    assert result.error_lines[0].endswith("; the refresh was rolled back: nothing changed")
    assert _state_left(sync_fork) == before
    again = run_cli("-C", sync_fork.path, "refresh", "--onto", "v2", "--format", "json")
    assert again.code == 1  # not "already in progress"
    assert blocker.read_text() == "not a directory\n"


def test_a_refused_sync_continue_stages_nothing_and_names_the_sync_steps(
    sync_fork: RepoBuilder,
) -> None:
    stopped = run_cli("-C", sync_fork.path, "sync", "v2", "--no-fetch", "--format", "json")
    assert stopped.code == 1
    resolve = Path(str(stopped.json()["message"]).split(" in ", 1)[1].split(", then")[0])
    assert sorted(p.name for p in resolve.iterdir() if p.name != ".git") == ["d.py"]  # sparse
    (resolve / "new.txt").write_text("a file the user made\n")
    staged = Git(resolve).out(["diff", "--cached", "--name-only"], purpose="staged")
    refused = run_cli("-C", sync_fork.path, "sync", "--continue")
    assert refused.code == 2
    assert "a conflict marker is still there" in refused.error_lines[0]
    assert refused.error_lines[1] == (
        "hint: finish the resolution, then run 'forktool sync --continue' again"
    )
    assert Git(resolve).out(["diff", "--cached", "--name-only"], purpose="staged") == staged
    (resolve / "d.py").write_text(
        _edit(V1["d.py"], "d.py line 6\n", "d.py line 6 rewritten upstream\n")
    )
    (resolve / "new.txt").unlink()
    nothing = run_cli("-C", sync_fork.path, "sync", "--continue")
    assert nothing.code == 2
    assert nothing.error_lines[0].startswith(
        "error: the resolution of 0004-d.patch changes nothing"
    )
    assert nothing.error_lines[1].startswith("hint: run 'forktool sync --abort', then retire")
    assert nothing.error_lines[1].endswith("and run 'forktool sync v2' again")
    assert run_cli("-C", sync_fork.path, "sync", "--abort").code == 0


def test_two_syncs_to_one_tag_on_two_branches_keep_both_reports(sync_fork: RepoBuilder) -> None:
    _drop_conflicting_patch(sync_fork)
    for branch in ("sync/first", "sync/second"):
        result = run_cli("-C", sync_fork.path, "sync", "v2", "--no-fetch", "--branch", branch)
        assert result.code == 0, result.out
    reports = sync_fork.git.git_dir() / "forktool" / "sync" / "v2"
    for branch in ("sync/first", "sync/second"):
        data = json.loads((reports / branch / "report.json").read_text())
        assert data["branch"] == branch
        assert f"Branch `{branch}`" in (reports / branch / "report.md").read_text()


def test_piped_sync_names_each_step_as_it_starts_and_says_what_is_next(
    sync_fork: RepoBuilder,
) -> None:
    _drop_conflicting_patch(sync_fork)
    plan = run_cli("-C", sync_fork.path, "sync", "v2", "--no-fetch", "--dry-run")
    assert "merge: the release tag v2 (" in plan.out
    assert "c.py: hunk 1 applies only at offset +3 (line 8) on v2;" in plan.out
    assert "would be regenerated" in plan.out and "; regenerated" not in plan.out
    assert plan.out.splitlines()[-2:] == ["DRY RUN: nothing was written", "next: forktool sync v2"]
    result = run_cli("-C", sync_fork.path, "sync", "v2", "--no-fetch")
    assert result.code == 0, result.out
    assert result.err.splitlines() == [
        "sync: retire what v2 absorbed (1/5)",
        "sync: refresh the patches onto v2 (2/5)",
        "sync: bump the pins to v2 (3/5)",
        "sync: merge v2 (4/5)",
        "sync: check the result (5/5)",
    ]
    assert "merged: the release tag v2 (" in result.out
    assert result.out.splitlines()[-1] == (
        "next: review branch forktool/sync-v2 and merge it (git merge forktool/sync-v2)"
    )
    quiet = run_cli("-C", sync_fork.path, "-q", "sync", "v2", "--no-fetch", "--branch", "again")
    assert quiet.err == ""


def test_sync_continue_passes_drop_file_to_the_resolution_check(sync_fork: RepoBuilder) -> None:
    root = sync_fork.path
    stopped = run_cli("-C", root, "sync", "v2", "--no-fetch", "--format", "json")
    assert stopped.code == 1
    resolve = Path(str(stopped.json()["message"]).split(" in ", 1)[1].split(", then")[0])
    v2_d = _edit(V1["d.py"], "d.py line 6\n", "d.py line 6 rewritten upstream\n")
    (resolve / "d.py").write_text(
        _edit(v2_d, "d.py line 6 rewritten upstream\n", "d.py line 6 forked\n")
    )
    for leftover in resolve.rglob("*.rej"):
        leftover.unlink()
    typo = run_cli("-C", root, "sync", "--continue", "--drop-file", "a.py")
    assert typo.code == 2
    assert typo.error_lines[0] == (
        "error: --drop-file a.py: the resolution of 0004-d.patch does not drop it "
        "(it drops no file)"
    )
    assert run_cli("-C", root, "sync", "v2", "--drop-file", "d.py").code == 2  # usage
    assert run_cli("-C", root, "sync", "--continue").code == 0


def test_a_sync_that_absorbs_the_whole_series_says_so_and_what_to_do(
    sync_fork: RepoBuilder,
) -> None:
    """v2 absorbs 0001, the only patch left: the branch carries no patches and the gate
    fails closed on an empty series, so the next step is not 'fix what check found'."""
    for name in ("0002-b.patch", "0003-c.patch", "0004-d.patch"):
        _drop(sync_fork, name)
    root = sync_fork.path
    plan = run_cli("-C", root, "sync", "v2", "--no-fetch", "--dry-run")
    assert plan.code == 0, plan.err
    assert plan.out.splitlines()[-1] == (
        "next: forktool sync v2 (it retires every patch: the series will be empty, and check "
        "fails closed on an empty series: there is nothing to verify)"
    )
    done = run_cli("-C", root, "sync", "v2", "--no-fetch")
    assert done.code == 1, done.out
    assert done.out.splitlines()[-1] == (
        "next: v2 absorbed the whole series: branch forktool/sync-v2 carries no patches, and "
        "check fails closed on an empty series: there is nothing to verify; build from v2 "
        "itself, or add the fork's next patch on the branch before merging it"
    )
    report = (root / ".git/forktool/sync/v2/forktool/sync-v2/report.md").read_text()
    assert "absorbed the whole series, and check fails closed on an empty series" in report
    assert sync_fork.git.out(["show", "forktool/sync-v2:series"], purpose="series") == ""
