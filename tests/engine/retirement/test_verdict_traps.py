"""Verdicts forktool must not give, and messages that must not mislead: a tag of a
tag, a resolved commit the pin already has, a change only partly in a release, a
stable branch's ``cherry-pick -x -m1`` of a merge, a PR of another project."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from testing.helpers import make_patch, mini_fork, run_cli

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


# -- an upstream with PR merges, a stable branch, and a fork of it -----------------------

GH = "https://github.com/acme/app/pull"


def _lines(name: str, count: int = 40) -> str:
    return "".join(f"{name} line {i}\n" for i in range(1, count + 1))


def _edit(text: str, *lines: int, word: str = "fixed") -> str:
    out = text.splitlines(keepends=True)
    for number in lines:
        out[number - 1] = out[number - 1].replace("\n", f" {word}\n")
    return "".join(out)


A, B, T = _lines("a.c"), _lines("b.c"), _lines("t.c")


def _pr(repo: RepoBuilder, number: int, files: dict[str, str | bytes | None]) -> tuple[str, str]:
    """A PR branch with one commit, merged into main as GitHub does: (commit, merge)."""
    repo.branch(f"pr{number}")
    repo.checkout(f"pr{number}")
    commit = repo.commit(f"change of PR {number}\n", files)
    repo.checkout("main")
    merge = repo.merge(f"pr{number}", f"Merge pull request #{number} from someone/pr{number}\n")
    return commit, merge


def _upstream(repo: RepoBuilder) -> dict[str, str]:
    c: dict[str, str] = {}
    repo.commit("import\n", {"a.c": A, "b.c": B, "t.c": T})
    c["typos"], c["typos_merge"] = _pr(repo, 7, {"b.c": _edit(B, 3)})
    repo.tag("v1")
    c["fix"], c["fix_merge"] = _pr(repo, 9, {"a.c": _edit(A, 10)})
    c["follow"] = repo.commit("follow-up of the overflow fix\n", {"b.c": _edit(B, 3, 30)})
    # Upstream's version of the t.c change takes one of the fork's four hunks.
    c["partial"] = repo.commit("rework t.c (#11)\n", {"t.c": _edit(T, 5)})
    repo.tag("v2")
    repo.branch("patch/1", "v1")
    repo.checkout("patch/1")
    c["pick"] = repo.cherry_pick(c["fix_merge"], mainline=1)
    repo.tag("v1.0.1")
    repo.checkout("main")
    return c


def _fork(tmp_path: Path, maps: dict[str, str], patches: dict[str, dict[str, str]]) -> RepoBuilder:
    upstream = RepoBuilder.init(tmp_path / "upstream")
    commits = _upstream(upstream)
    fork = RepoBuilder.clone(upstream.path, tmp_path / "fork")
    made = {  # all made first: making one commits and drops what the work tree holds
        name: make_patch(fork, "v1", dict(files), name.removesuffix(".patch"))
        for name, files in patches.items()
    }
    (fork.path / "patches").mkdir()
    for name, data in made.items():
        (fork.path / "patches" / name).write_bytes(data)
    (fork.path / "series").write_text("".join(f"{n}\n" for n in patches))
    (fork.path / "upstream.map").write_text(
        "".join(f"{n} {maps[n].format(**commits)}\n" for n in patches)
    )
    (fork.path / "forktool.yaml").write_text(
        "upstream:\n  remote: origin\n  url: https://github.com/acme/app.git\n"
        f"pin:\n  tag: v1\n  commit: {fork.rev('v1')}\n"
    )
    (fork.path / "commits.json").write_text(json.dumps(commits))
    return fork


def _commits(fork: RepoBuilder) -> dict[str, str]:
    data: dict[str, str] = json.loads((fork.path / "commits.json").read_text())
    return data


def _absorbed(fork: RepoBuilder, tag: str) -> dict[str, dict[str, object]]:
    res = run_cli("-C", fork.path, "absorbed", "--tag", tag, "--format", "json")
    assert res.code == 0, res.err
    return {p["patch"]: p for p in res.json()["patches"]}  # type: ignore[attr-defined]


def test_a_resolved_commit_the_pin_has_while_the_patch_applies_there_is_not_written(
    tmp_path: Path,
) -> None:
    # The fork's typo fix (a.c) is not what PR 7 merged (b.c), which v1 already has.
    fork = _fork(
        tmp_path,
        {"0001-typos.patch": f"pending {GH}/7"},
        {"0001-typos.patch": {"a.c": _edit(A, 30)}},
    )
    c = _commits(fork)
    before = (fork.path / "upstream.map").read_bytes()
    res = run_cli(
        "-C", fork.path, "upstream", "resolve", "--no-fetch", "--write", "--format", "json"
    )
    assert res.code == 0, res.err
    (entry,) = res.json()["patches"]  # type: ignore[misc]
    assert (entry["commit"], entry["how"], entry["candidates"]) == (
        None,
        "in-pin",
        [c["typos_merge"]],
    )
    assert entry["reason"].startswith(
        f"{c['typos_merge'][:12]} 'Merge pull request #7 from someone/pr7' is already in the "
        "pin v1, yet the patch still applies exactly on v1"
    )
    assert (fork.path / "upstream.map").read_bytes() == before
    text = run_cli("-C", fork.path, "upstream", "resolve", "--no-fetch")
    assert "0001-typos.patch: candidates " + c["typos_merge"][:12] in text.out
    assert "is already in the pin v1" in text.out


def test_a_change_mostly_absent_hunk_by_hunk_is_revisit_not_retire(tmp_path: Path) -> None:
    # Four hunks; upstream's mapped commit made only the first: three still apply.
    fork = _fork(
        tmp_path,
        {"0001-t.patch": "{partial}"},
        {"0001-t.patch": {"t.c": _edit(T, 5, 15, 25, 35)}},
    )
    entry = _absorbed(fork, "v2")["0001-t.patch"]
    assert (entry["verdict"], entry["ancestor"]) == ("revisit", True)
    hunks = [e for e in entry["evidence"] if e["kind"] == "hunks-still-apply"]  # type: ignore[attr-defined]
    assert hunks == [
        {
            "kind": "hunks-still-apply",
            "commit": None,
            "detail": "3 of 4 hunks still apply forward on v2 and do not reverse-apply there",
            "hunks": {"still_apply": 3, "total": 4},
        }
    ]
    assert "3 of its 4 hunks still apply forward on v2" in str(entry["reason"])
    # retire, forecast and the sync plan follow the same verdict.
    poll = run_cli("-C", fork.path, "upstream", "poll", "--no-fetch", "--format", "json")
    plan = poll.json()["plan"]
    assert plan["retired"] == []  # type: ignore[index]
    assert [k["verdict"] for k in plan["kept"]] == ["revisit"]  # type: ignore[index]
    cast = run_cli("-C", fork.path, "forecast", "--no-fetch", "--tags", "v2", "--format", "json")
    assert cast.json()["patches"][0]["cells"][0]["verdict"] == "revisit"  # type: ignore[index]


def test_a_change_upstream_took_whole_hunk_by_hunk_still_retires(tmp_path: Path) -> None:
    fork = _fork(tmp_path, {"0001-t.patch": "{partial}"}, {"0001-t.patch": {"t.c": _edit(T, 5)}})
    entry = _absorbed(fork, "v2")["0001-t.patch"]
    assert entry["verdict"] == "retire"


@pytest.mark.parametrize(
    ("mapped", "why"),
    [
        ("{fix}", "whose merged side contains {fix:.12}"),
        (f"{{follow}} {GH}/9", f"which merged PR {GH}/9"),
    ],
)
def test_a_cherry_pick_of_a_pr_merge_on_a_release_branch_is_evidence(
    tmp_path: Path, mapped: str, why: str
) -> None:
    fork = _fork(tmp_path, {"0001-fix.patch": mapped}, {"0001-fix.patch": {"a.c": _edit(A, 10)}})
    c = _commits(fork)
    entry = _absorbed(fork, "v1.0.1")["0001-fix.patch"]
    assert (entry["verdict"], entry["ancestor"]) == ("revisit", False)
    picks = [e for e in entry["evidence"] if e["kind"] == "cherry-pick"]  # type: ignore[attr-defined]
    assert picks == [
        {
            "kind": "cherry-pick",
            "commit": c["pick"],
            "detail": f"{c['pick'][:12]} 'Merge pull request #9 from someone/pr9' in v1.0.1 was "
            f"cherry-picked from merge {c['fix_merge'][:12]} 'Merge pull request #9 from "
            f"someone/pr9', {why.format(**c)}",
        }
    ]


def test_a_pick_of_a_merge_another_patch_maps_is_evidence_for_its_merged_side_too(
    tmp_path: Path,
) -> None:
    """One patch maps PR 9's commit, another the merge itself (a fork that carries the
    PR as merged, say): the release branch's pick of the merge is evidence for both,
    the first because the merge's merged side holds its commit."""
    fork = _fork(
        tmp_path,
        {"0001-fix.patch": "{fix}", "0002-merge.patch": "{fix_merge}"},
        {"0001-fix.patch": {"a.c": _edit(A, 10)}, "0002-merge.patch": {"t.c": _edit(T, 30)}},
    )
    c = _commits(fork)
    entries = _absorbed(fork, "v1.0.1")
    for name in ("0001-fix.patch", "0002-merge.patch"):
        picks = [e for e in entries[name]["evidence"] if e["kind"] == "cherry-pick"]  # type: ignore[attr-defined]
        assert [e["commit"] for e in picks] == [c["pick"]], name
        assert entries[name]["verdict"] == "revisit"
    (first,) = [e for e in entries["0001-fix.patch"]["evidence"] if e["kind"] == "cherry-pick"]  # type: ignore[attr-defined]
    assert first["detail"].endswith(f"whose merged side contains {c['fix'][:12]}")


def test_a_patch_id_match_does_not_depend_on_the_other_patches_of_the_series(
    tmp_path: Path,
) -> None:
    """Upstream makes the fork's a.c change in a commit that also changes b.c: the
    patch-id witness compares that commit within a.c's directory, whatever else the
    series patches (a patch of b.c beside it once hid the match)."""
    alone = {"0001-a.patch": {"a.c": _edit(A, 20)}}
    beside = {**alone, "0002-b.patch": {"b.c": _edit(B, 35)}}
    found = []
    for number, patches in enumerate((alone, beside)):
        # mapped to a commit v3 lacks (the release branch's pick), so witnesses are read
        fork = _fork(tmp_path / str(number), dict.fromkeys(patches, "{pick}"), patches)
        upstream = RepoBuilder(tmp_path / str(number) / "upstream")
        both = {name: _edit(upstream.read(name), 20) for name in ("a.c", "b.c")}
        took = upstream.commit("take the a.c fix, tidy b.c\n", both)
        upstream.tag("v3")
        fork.git.run(["fetch", "-q", "origin", "--tags"], purpose="fetch v3")
        entry = _absorbed(fork, "v3")["0001-a.patch"]
        found.append([e["commit"] for e in entry["evidence"] if e["kind"] == "patch-id"])  # type: ignore[attr-defined]
    assert found == [[took], [took]]


def test_a_cherry_pick_of_another_projects_pr_number_is_no_evidence(tmp_path: Path) -> None:
    fork = _fork(
        tmp_path,
        {"0001-fix.patch": "{follow} https://github.com/other/lib/pull/9"},
        {"0001-fix.patch": {"a.c": _edit(A, 10)}},
    )
    entry = _absorbed(fork, "v1.0.1")["0001-fix.patch"]
    kinds = [e["kind"] for e in entry["evidence"]]  # type: ignore[attr-defined]
    assert "cherry-pick" not in kinds  # the same number, another project: no evidence


# -- messages that must not mislead ------------------------------------------------------


def test_a_hand_resolution_that_changes_nothing_says_the_change_is_already_there(
    builder: RepoBuilder, tmp_path: Path
) -> None:
    # v2 made the fork's change to line 5 and also changed line 7, inside the hunk's
    # context: the patch applies neither way, and a 3-way merge leaves nothing to do.
    fork = mini_fork(builder, {"app.c": A})
    patch = make_patch(builder, "v1", {"app.c": _edit(A, 5)}, "app: five")
    builder.commit("upstream: five and seven\n", {"app.c": _edit(_edit(A, 5), 7, word="up")})
    builder.tag("v2")
    fork.write({"0001-five.patch": patch})
    res = fork.cli("refresh", "--onto", "v2", "--worktree", tmp_path / "wt", "--format", "json")
    assert res.code == 1, res.err
    (entry,) = res.json()["patches"]  # type: ignore[misc]
    assert entry["status"] == "conflict"
    assert "conflict markers" not in entry["message"]
    # The refresh's own 3-way merge from the pre-image finds it: no worktree is opened.
    assert entry["message"] == (
        "already applied: v2 has the whole change (a 3-way merge of it from its pre-image on "
        "v1 changes nothing); retire it first, or drop it"
    )
    assert res.json()["worktree"] is None and not (tmp_path / "wt").exists()
    assert str(res.json()["message"]).startswith(
        "0001-five.patch is already on v2 (a 3-way merge of it changes nothing): retire it first"
    )


def test_a_sync_whose_check_failed_says_why_in_text(sync_fork: RepoBuilder) -> None:
    from testing.sync_fork import _drop_conflicting_patch

    _drop_conflicting_patch(sync_fork)
    sync_fork.branch("hist", "v1")  # a patch branch with no commit on the pin: a failure
    config = (sync_fork.path / "forktool.yaml").read_text() + "history:\n  branch: hist\n"
    sync_fork.commit("fork: check the patch branch\n", {"forktool.yaml": config})
    res = run_cli("-C", sync_fork.path, "sync", "v2")
    assert res.code == 1, res.out + res.err
    lines = res.out.splitlines()
    at = lines.index("check  : FAILED")
    assert lines[at + 1].startswith("  history: "), lines[at + 1]


def test_quiet_check_prints_no_notice(builder: RepoBuilder) -> None:
    fork = mini_fork(builder, {"app.c": A})
    fork.write({"0001-five.patch": make_patch(builder, "v1", {"app.c": _edit(A, 5)}, "five")})
    (fork.root / "FORK.md").write_text("# Fork\n")  # no record section: a notice
    loud = fork.cli("check", "--only", "record")
    assert "notice: [record] FORK.md: has no retirement record section yet" in loud.out
    quiet = fork.cli("-q", "check", "--only", "record")
    assert quiet.code == 0
    assert quiet.out == "OK: all checks passed\n"


def test_verify_allow_offset_does_not_count_a_shifted_patch_as_exact(builder: RepoBuilder) -> None:
    fork = mini_fork(builder, {"app.c": A, "b.c": B})
    exact = make_patch(builder, "v1", {"b.c": _edit(B, 5)}, "b: five")
    moved = "new 1\nnew 2\n" + A
    builder.commit("side\n", {"app.c": moved})
    shifted = make_patch(builder, "HEAD", {"app.c": _edit(moved, 12)}, "app: ten")
    fork.write({"0001-b.patch": exact, "0002-app.patch": shifted})
    res = fork.cli("verify", "--allow-offset")
    assert res.code == 0, res.out
    assert res.out.splitlines()[-1] == (
        "OK: 1 patch(es) apply exactly, 1 only at an offset (--allow-offset), and the round "
        "trip restores v1 exactly."
    )


def test_the_in_pin_contradiction_holds_hunk_by_hunk(tmp_path: Path) -> None:
    # A Debian-style patch: three hunks of a.c, one of a generated file the tag lacks.
    fork = _fork(
        tmp_path,
        {"0001-typos.patch": f"pending {GH}/7"},
        {"0001-typos.patch": {"a.c": _edit(A, 5, 15, 25)}},
    )
    path = fork.path / "patches" / "0001-typos.patch"
    generated = (
        b"diff --git a/doc/a.3 b/doc/a.3\n--- a/doc/a.3\n+++ b/doc/a.3\n"
        b"@@ -1,3 +1,3 @@\n one\n-teh\n+the\n three\n"
    )
    path.write_bytes(path.read_bytes() + generated)
    res = run_cli("-C", fork.path, "upstream", "resolve", "--no-fetch", "--format", "json")
    (entry,) = res.json()["patches"]  # type: ignore[misc]
    assert entry["how"] == "in-pin"
    assert (
        "still applies hunk by hunk (3 of its 4 hunks, not reverse-applying) on v1"
        in (entry["reason"])
    )
