"""forktool align: divergence from the pinned tag, checked against the ledger (real git)."""

from __future__ import annotations

import os
from pathlib import Path

from testing.helpers import CliResult, run_cli

from forktool.builder import RepoBuilder
from forktool.demo import DemoUpstream
from forktool.demo.pulse_changes import STALE_BOT
from forktool.git import Git

LEDGER = "alignment.ledger"


def align(repo: RepoBuilder, *extra: str) -> CliResult:
    return run_cli("-C", repo.path, "align", "--format", "json", *extra)


def add_ledger_lines(repo: RepoBuilder, *lines: str) -> None:
    text = (repo.path / LEDGER).read_text() + "".join(line + "\n" for line in lines)
    repo.commit("ledger: declare\n", {LEDGER: text})


def ledger_line_count(repo: RepoBuilder) -> int:
    return len((repo.path / LEDGER).read_text().splitlines())


# -- the example fork ------------------------------------------------------------------


def test_example_fork_is_aligned_and_its_pin_checks(
    example_fork: RepoBuilder, demo_upstream: DemoUpstream
) -> None:
    result = align(example_fork)
    assert result.code == 0, result.out
    data = result.json()
    assert data["ok"] is True
    assert data["tag"] == "v1.1.0"
    assert data["tag_commit"] == demo_upstream.tags["v1.1.0"]
    assert data["summary"] == {
        "added": {"total": 15, "undeclared": 0},
        "deleted": {"total": 0, "undeclared": 0},
        "modified": {"total": 0, "undeclared": 0},
        "type_changed": {"total": 0, "undeclared": 0},
    }
    assert data["undeclared"] == []
    assert data["stale"] == []
    assert data["findings"] == []
    pins = run_cli("-C", example_fork.path, "pin", "check")
    assert pins.code == 0, pins.out


def test_example_fork_alignment_table(example_fork: RepoBuilder) -> None:
    result = run_cli("-C", example_fork.path, "align")
    assert result.code == 0
    lines = result.out.splitlines()
    assert lines[:6] == [
        "fork alignment",
        "  upstream base : v1.1.0 (b444e8a60c)",
        "  added          15 files, declared         OK",
        "  deleted         0 files, declared         OK",
        "  modified        0 upstream files          OK",
        "  type-changed    0 upstream files          OK",
    ]
    assert lines[-1] == "OK: divergence from v1.1.0 is exactly what the ledger declares."


def test_divergence_is_measured_from_the_tag_not_a_merge_base_with_main(
    example_fork: RepoBuilder,
) -> None:
    git = example_fork.git
    base = git.out(["merge-base", "HEAD", "upstream/main"], purpose="merge-base")
    # Against main's merge-base the release bump of v1.1.0 would look like a fork edit.
    assert "pulse/__init__.py" in git.out(["diff", "--name-only", base, "HEAD"], purpose="diff")
    assert align(example_fork).code == 0


def test_newest_release_is_information_only(
    example_fork: RepoBuilder, demo_upstream: DemoUpstream
) -> None:
    data = align(example_fork).json()
    behind = int(example_fork.git.out(["rev-list", "--count", "v1.3.0", "^HEAD"], purpose="n"))
    assert data["newest_release"] == {
        "tag": "v1.3.0",
        "commit": demo_upstream.tags["v1.3.0"],
        "behind": behind,
    }
    assert behind > 0
    assert data["ok"] is True


# -- undeclared divergence ---------------------------------------------------------------


def test_an_undeclared_added_file_fails_with_its_exact_path(example_fork: RepoBuilder) -> None:
    example_fork.commit("fork: scratch notes\n", {"notes/todo.txt": "later\n"})
    result = align(example_fork)
    assert result.code == 1
    data = result.json()
    assert data["undeclared"] == ["notes/todo.txt"]
    assert data["summary"]["added"] == {"total": 16, "undeclared": 1}  # type: ignore[index]
    assert data["findings"] == [
        {
            "severity": "error",
            "message": "added (not in v1.1.0), but no 'add' entry in alignment.ledger declares it",
            "path": "notes/todo.txt",
            "line": None,
            "hint": "declare it: add notes/todo.txt permanent <why>, or remove it",
        }
    ]
    text = run_cli("-C", example_fork.path, "align")
    assert "  added          16 files, 1 undeclared     FAIL" in text.out
    assert text.out.splitlines()[-1] == (
        "FAILED: 1 path(s) diverge from v1.1.0 other than as declared: notes/todo.txt"
    )


def test_an_upstream_file_modified_in_place_is_always_a_finding(
    example_fork: RepoBuilder,
) -> None:
    text = example_fork.read("pulse/config.py") + "\nDEBUG = True\n"
    example_fork.commit("fork: quick hack\n", {"pulse/config.py": text})
    # Even a ledger line cannot declare an in-place edit of an upstream file.
    add_ledger_lines(example_fork, "add pulse/** permanent we edit pulse directly")
    result = align(example_fork)
    assert result.code == 1
    data = result.json()
    assert data["undeclared"] == ["pulse/config.py"]
    assert data["summary"]["modified"] == {"total": 1, "undeclared": 1}  # type: ignore[index]
    errors = [f for f in data["findings"] if f["severity"] == "error"]  # type: ignore[union-attr, index]
    assert errors == [
        {
            "severity": "error",
            "message": "modifies an upstream file of v1.1.0 in place; changes to upstream "
            "files belong in patches",
            "path": "pulse/config.py",
            "line": None,
            "hint": "move the change into a patch and restore the file: git checkout v1.1.0 "
            "-- pulse/config.py",
        }
    ]


def test_a_type_changed_upstream_file_is_a_finding(example_fork: RepoBuilder) -> None:
    (example_fork.path / "README.md").unlink()
    os.symlink("pulse/config.py", example_fork.path / "README.md")
    example_fork.commit("fork: link the readme\n")
    data = align(example_fork).json()
    assert data["summary"]["type_changed"] == {"total": 1, "undeclared": 1}  # type: ignore[index]
    assert data["undeclared"] == ["README.md"]


def test_a_deleted_upstream_file_needs_a_del_entry(example_fork: RepoBuilder) -> None:
    example_fork.commit("fork: no upstream CI\n", {".github/workflows/ci.yml": None})
    result = align(example_fork)
    assert result.code == 1
    assert result.json()["undeclared"] == [".github/workflows/ci.yml"]
    add_ledger_lines(example_fork, "del .github/workflows/** permanent we run our own CI")
    result = align(example_fork)
    assert result.code == 0, result.out
    assert result.json()["summary"]["deleted"] == {"total": 1, "undeclared": 0}  # type: ignore[index]


def test_a_missing_ledger_fails_closed(example_fork: RepoBuilder) -> None:
    (example_fork.path / LEDGER).unlink()
    result = align(example_fork)
    assert result.code == 1
    data = result.json()
    assert data["ledger"] is None
    # The fork's own files are declared by definition; everything else it adds is not.
    assert data["undeclared"] == ["ci/build.yml", "docker/Dockerfile"]


def test_a_malformed_ledger_is_exit_2(example_fork: RepoBuilder) -> None:
    with (example_fork.path / LEDGER).open("a") as handle:
        handle.write("add docs/** someday because\n")
    result = align(example_fork)
    assert result.code == 2
    assert result.error_lines[0] == (
        f"error: alignment.ledger:{ledger_line_count(example_fork)}: exit criterion "
        "'someday' must be 'permanent' or 'until:<condition>'"
    )


def test_a_moved_pin_tag_is_refused(example_fork: RepoBuilder, demo_upstream: DemoUpstream) -> None:
    example_fork.move_tag("v1.1.0", demo_upstream.tags["v1.0.0"])
    result = align(example_fork)
    assert result.code == 2
    assert result.error_lines[0].startswith("error: pinned tag 'v1.1.0' now peels to")


# -- the ledger's own health ---------------------------------------------------------------


def test_a_ledger_entry_matching_nothing_is_a_warning_to_prune(example_fork: RepoBuilder) -> None:
    add_ledger_lines(example_fork, "add tools/** permanent helper scripts we no longer have")
    line = ledger_line_count(example_fork)
    result = align(example_fork)
    assert result.code == 0
    data = result.json()
    assert data["stale"] == [
        {
            "line": line,
            "entry": "add tools/** permanent helper scripts we no longer have",
            "commit": None,
        }
    ]
    assert data["findings"] == [
        {
            "severity": "warning",
            "message": "'add tools/**' matches nothing any more: prune it",
            "path": "alignment.ledger",
            "line": line,
        }
    ]


def test_an_until_entry_whose_commit_landed_in_the_tag_can_be_retired(
    example_fork: RepoBuilder, demo_upstream: DemoUpstream
) -> None:
    landed = example_fork.rev("v1.1.0~1")  # an ancestor of the pinned v1.1.0
    pending = demo_upstream.fix_retry_timeout  # reaches a release only in v1.3.0rc0
    example_fork.commit("fork: two stopgaps\n", {"hotfix/a.sh": "a\n", "hotfix/b.sh": "b\n"})
    add_ledger_lines(
        example_fork,
        f"add hotfix/a.sh until:{landed} stopgap until upstream ships it",
        f"add hotfix/b.sh until:{pending} stopgap until upstream ships the retry fix",
    )
    line = ledger_line_count(example_fork) - 1
    result = align(example_fork)
    assert result.code == 0, result.out
    data = result.json()
    assert data["retirable"] == [
        {
            "line": line,
            "entry": f"add hotfix/a.sh until:{landed} stopgap until upstream ships it",
            "commit": landed,
        }
    ]
    assert data["findings"] == [
        {
            "severity": "warning",
            "message": f"'add hotfix/a.sh': v1.1.0 contains {landed}, so this divergence "
            "can be retired",
            "path": "alignment.ledger",
            "line": line,
            "hint": "restore upstream's version of the path and remove the ledger line",
        }
    ]


def test_an_until_entry_naming_an_unknown_commit_is_exit_2(example_fork: RepoBuilder) -> None:
    unknown = "0123456789abcdef0123456789abcdef01234567"
    example_fork.commit("fork: stopgap\n", {"hotfix/a.sh": "a\n"})
    add_ledger_lines(example_fork, f"add hotfix/a.sh until:{unknown} stopgap")
    result = align(example_fork)
    assert result.code == 2
    assert result.error_lines == [
        f"error: alignment.ledger:{ledger_line_count(example_fork)}: until:{unknown} is not "
        "a commit in this repository",
        "hint: fetch upstream (git fetch upstream --tags), or fix the commit id",
    ]


# -- merges: the new bot workflow, and a resurrected deletion ------------------------------


def merge_and_pin(repo: RepoBuilder, tag: str) -> None:
    """Merge an upstream tag (upstream wins conflicts: the fork never edits its files)."""
    ident = {
        "GIT_AUTHOR_NAME": "F",
        "GIT_AUTHOR_EMAIL": "f@example.com",
        "GIT_COMMITTER_NAME": "F",
        "GIT_COMMITTER_EMAIL": "f@example.com",
    }
    repo.git.run(
        ["merge", "--quiet", "--no-ff", "--no-commit", "-X", "theirs", tag],
        purpose="merge",
        env=ident,
        check=False,
    )
    repo.commit(f"Merge upstream {tag}\n")
    assert run_cli("-C", repo.path, "pin", "bump", tag).code == 0
    repo.commit(f"fork: pin {tag}\n")


def test_upstream_bot_workflow_deleted_by_the_fork_is_undeclared_until_the_ledger_says_why(
    example_fork: RepoBuilder,
) -> None:
    merge_and_pin(example_fork, "v1.2.0")
    assert align(example_fork).code == 0
    assert run_cli("-C", example_fork.path, "pin", "check").code == 0
    example_fork.commit("fork: no upstream bots\n", {STALE_BOT: None})
    result = align(example_fork)
    assert result.code == 1
    assert result.json()["undeclared"] == [STALE_BOT]
    add_ledger_lines(example_fork, f"del {STALE_BOT} permanent we do not run upstream's bots")
    assert align(example_fork).code == 0


def test_a_declared_deletion_resurrected_by_a_merge_fails(tmp_path: Path) -> None:
    upstream = RepoBuilder.init(tmp_path / "upstream")
    upstream.commit("import\n", {"app.py": "run()\n", "bot.yml": "on: schedule\n"})
    v1 = upstream.tag("v1")
    upstream.commit("bot: run weekly\n", {"bot.yml": "on: schedule  # weekly\n"})
    upstream.tag("v2")
    fork = RepoBuilder.clone(upstream.path, tmp_path / "fork")
    fork.git.run(["checkout", "-q", "-B", "main", "v1"], purpose="start at v1")
    fork.commit(
        "fork: files\n",
        {
            "forktool.yaml": f"pin:\n  tag: v1\n  commit: {v1}\n",
            LEDGER: "add forktool.yaml permanent config\n"
            "add alignment.ledger permanent this ledger\n"
            "del bot.yml permanent we do not run upstream's bots\n",
            "bot.yml": None,
        },
    )
    assert align(fork).code == 0
    # Upstream edits the file the fork deleted; resolving the conflict with upstream's
    # side brings it back.
    merge_and_pin(fork, "v2")
    assert (fork.path / "bot.yml").is_file()
    result = align(fork)
    assert result.code == 1
    data = result.json()
    assert data["resurrected"] == [{"path": "bot.yml", "ledger_line": 3}]
    assert data["undeclared"] == ["bot.yml"]
    assert data["findings"] == [
        {
            "severity": "error",
            "message": "declared deleted (alignment.ledger:3) but present at HEAD again "
            "(resurrected, e.g. by a merge of upstream)",
            "path": "bot.yml",
            "line": None,
            "hint": "delete it again: git rm -- bot.yml",
        }
    ]


# -- overlay layout ------------------------------------------------------------------------


def overlay_fork(tmp_path: Path) -> tuple[RepoBuilder, str]:
    """A fork repository holding only its own files; upstream's tags fetched into it."""
    upstream = RepoBuilder.init(tmp_path / "upstream")
    upstream.commit("import\n", {"app.py": "run()\n", "bot.yml": "on: schedule\n"})
    v1 = upstream.tag("v1.0.0")
    fork = RepoBuilder.init(tmp_path / "fork")
    fork.git.run(
        ["fetch", "--quiet", str(upstream.path), "refs/tags/*:refs/tags/*"], purpose="tags"
    )
    fork.commit(
        "fork: files\n",
        {
            "forktool.yaml": f"pin:\n  tag: v1.0.0\n  commit: {v1}\nlayout: overlay\n",
            LEDGER: "add forktool.yaml permanent config\n"
            "add alignment.ledger permanent this ledger\n"
            "add docker/** permanent the image\n"
            "del bot.yml permanent the image drops upstream's bot config\n",
            "docker/Dockerfile": "FROM app:v1.0.0\n",
        },
    )
    return fork, v1


def test_overlay_fork_needs_an_add_entry_for_every_tracked_path(tmp_path: Path) -> None:
    fork, _ = overlay_fork(tmp_path)
    result = align(fork)
    assert result.code == 0, result.out
    data = result.json()
    assert data["layout"] == "overlay"
    assert data["summary"] == {"tracked": {"total": 3, "undeclared": 0}}
    assert data["stale"] == []
    assert run_cli("-C", fork.path, "pin", "check").code == 0
    fork.commit("fork: stray\n", {"scripts/release.sh": "echo\n"})
    result = align(fork)
    assert result.code == 1
    assert result.json()["undeclared"] == ["scripts/release.sh"]
    text = run_cli("-C", fork.path, "align")
    assert "  fork files      4 files, 1 undeclared     FAIL" in text.out


def test_overlay_del_entry_for_a_path_upstream_no_longer_has_is_stale(tmp_path: Path) -> None:
    fork, _ = overlay_fork(tmp_path)
    add_ledger_lines(fork, "del docs/** permanent upstream has no docs")
    data = align(fork).json()
    assert [e["entry"] for e in data["stale"]] == ["del docs/** permanent upstream has no docs"]  # type: ignore[union-attr, index]
    assert data["ok"] is True


def test_align_leaves_the_repository_byte_identical(example_fork: RepoBuilder) -> None:
    from testing.helpers import snapshot_tree

    before = snapshot_tree(example_fork.path)
    assert align(example_fork).code == 0
    assert run_cli("-C", example_fork.path, "pin", "check").code == 0
    assert snapshot_tree(example_fork.path) == before
    assert Git(example_fork.path).head() == example_fork.rev("HEAD")
