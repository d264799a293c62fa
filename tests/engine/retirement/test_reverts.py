"""A fix the release later reverted is never retired: every witness of a revert objects,
a re-land cancels the revert, and a forward apply at an offset objects too."""

from __future__ import annotations

from testing.helpers import MiniFork, make_patch, snapshot_tree

from forktool.builder import RepoBuilder
from forktool.engine.retirement.reverts import subject_label
from forktool.model.record import empty_section

APP = "".join(f"line {n}\n" for n in range(1, 21))
FIXED = APP.replace("line 7\n", "line seven\n")
PATCH = "0001-fix.patch"
BY_LINE = "'This reverts commit' line"
BY_TITLE = "'Revert \"...\"' title"
BY_CONTENT = "inverse patch-id"


def _upstream(builder: RepoBuilder, subject: str = "fix line 7") -> str:
    """v1.0.0 (the pin), fix F, v1.1.0 (has F); returns F."""
    builder.commit("import\n", {"app.py": APP})
    builder.tag("v1.0.0")
    fix = builder.commit(f"{subject}\n", {"app.py": FIXED})
    builder.commit("docs\n", {"README": "read me\n"})
    builder.tag("v1.1.0")
    return fix


def _fork(builder: RepoBuilder, fix: str) -> MiniFork:
    patch = make_patch(builder, "v1.0.0", {"app.py": FIXED}, "fix line 7")
    fork = MiniFork(builder, "v1.0.0")
    fork.write(
        {PATCH: patch},
        commits={PATCH: fix},
        extra_config="upstream:\n  remote: origin\nrecord: FORK.md\n",
    )
    (fork.root / "FORK.md").write_text("# Fork\n\n" + empty_section())
    return fork


def _entry(fork: MiniFork, tag: str) -> dict[str, object]:
    result = fork.cli("absorbed", "--tag", tag, "--format", "json")
    assert result.code == 0, result.err
    entry: dict[str, object] = result.json()["patches"][0]  # type: ignore[index]
    return entry


def _kinds(entry: dict[str, object]) -> list[tuple[object, object]]:
    return [(e["kind"], e["commit"]) for e in entry["evidence"]]  # type: ignore[attr-defined, index]


def test_git_revert_with_its_sha_line_makes_the_fix_revisit(builder: RepoBuilder) -> None:
    fix = _upstream(builder)
    revert = builder.commit(f'Revert "fix line 7"\n\nThis reverts commit {fix}.\n', {"app.py": APP})
    builder.tag("v1.2.0")
    fork = _fork(builder, fix)
    assert _entry(fork, "v1.1.0")["verdict"] == "retire"
    entry = _entry(fork, "v1.2.0")
    assert (entry["verdict"], entry["ancestor"]) == ("revisit", True)
    assert entry["evidence"][:1] == [  # type: ignore[index]
        {
            "kind": "still-applies",
            "commit": None,
            "detail": "the patch still applies forward exactly on v1.2.0: its change is not there",
        }
    ]
    revert_detail = (
        f"{revert[:12]} 'Revert \"fix line 7\"' in v1.2.0 reverts {fix[:12]} "
        f"(found by: {BY_LINE}, {BY_TITLE}, {BY_CONTENT})"
    )
    assert entry["evidence"][1:] == [  # type: ignore[index]
        {"kind": "revert", "commit": revert, "detail": revert_detail}
    ]
    assert entry["reason"] == (
        f"{fix[:12]} in v1.2.0 by ancestry, yet {revert_detail}: the fix is not in v1.2.0; "
        "decide by hand (keep it, or retire --force --reason)"
    )


def test_squash_merged_revert_title_without_sha_is_found(builder: RepoBuilder) -> None:
    fix = _upstream(builder, subject="fix line 7 (#10)")
    # A later edit next to the hunk: the patch no longer applies either way, so only
    # the title can tell that the fix went away.
    reverted = APP.replace("line 8\n", "line eight\n")
    revert = builder.commit(
        '[BugFix] Revert "fix line 7" (#12)\n\nIt broke the nightly build.\n',
        {"app.py": reverted},
    )
    builder.tag("v1.2.0")
    fork = _fork(builder, fix)
    entry = _entry(fork, "v1.2.0")
    assert entry["verdict"] == "revisit"
    assert _kinds(entry) == [("no-longer-applies", None), ("revert", revert)]
    assert (
        entry["evidence"][1]["detail"]
        == (  # type: ignore[index]
            f"{revert[:12]} '[BugFix] Revert \"fix line 7\" (#12)' in v1.2.0 reverts "
            f"{fix[:12]} (found by: {BY_TITLE})"
        )
    )


def test_inverse_diff_with_an_unrelated_title_is_found_by_patch_id(builder: RepoBuilder) -> None:
    fix = _upstream(builder)
    builder.commit("touch other file\n", {"other.txt": "x\n"})
    revert = builder.commit("tidy up the app\n", {"app.py": APP})
    builder.commit("unrelated\n", {"other.txt": "y\n"})
    builder.tag("v1.2.0")
    fork = _fork(builder, fix)
    entry = _entry(fork, "v1.2.0")
    assert entry["verdict"] == "revisit"
    assert _kinds(entry) == [("still-applies", None), ("revert", revert)]
    assert (
        entry["evidence"][1]["detail"]
        == (  # type: ignore[index]
            f"{revert[:12]} 'tidy up the app' in v1.2.0 reverts {fix[:12]} (found by: {BY_CONTENT})"
        )
    )


def test_relanded_fix_is_retired_again(builder: RepoBuilder) -> None:
    fix = _upstream(builder)
    revert = builder.commit(f'Revert "fix line 7"\n\nThis reverts commit {fix}.\n', {"app.py": APP})
    builder.tag("v1.2.0")
    builder.commit(
        f'Revert "Revert "fix line 7""\n\nThis reverts commit {revert}.\n', {"app.py": FIXED}
    )
    builder.tag("v1.3.0")
    fork = _fork(builder, fix)
    assert _entry(fork, "v1.2.0")["verdict"] == "revisit"
    entry = _entry(fork, "v1.3.0")
    assert (entry["verdict"], _kinds(entry)) == ("retire", [("content-present", None)])


def test_squash_relanded_fix_is_retired_again(builder: RepoBuilder) -> None:
    fix = _upstream(builder, subject="fix line 7 (#10)")
    builder.commit('Revert "fix line 7 (#10)" (#12)\n', {"app.py": APP})
    builder.commit('Revert "Revert "fix line 7 (#10)" (#12)" (#13)\n', {"app.py": FIXED})
    builder.tag("v1.2.0")
    fork = _fork(builder, fix)
    assert _entry(fork, "v1.2.0")["verdict"] == "retire"


def test_revert_before_the_fix_landed_again_does_not_object(builder: RepoBuilder) -> None:
    """An older landing of the same fix was reverted before the mapped commit re-landed
    it: that revert does not revert the mapped commit (it is not its descendant)."""
    builder.commit("import\n", {"app.py": APP})
    builder.tag("v1.0.0")
    first = builder.commit("fix line 7\n", {"app.py": FIXED})
    builder.commit(f'Revert "fix line 7"\n\nThis reverts commit {first}.\n', {"app.py": APP})
    fix = builder.commit("fix line 7\n", {"app.py": FIXED})
    builder.tag("v1.1.0")
    fork = _fork(builder, fix)
    entry = _entry(fork, "v1.1.0")
    assert (entry["verdict"], _kinds(entry)) == ("retire", [("content-present", None)])


def test_forward_apply_at_an_offset_objects(builder: RepoBuilder) -> None:
    """The change was lost, and an unrelated line shift above the hunk hides the exact
    forward apply: the offset apply still objects."""
    fix = _upstream(builder)
    builder.commit("refactor the app\n", {"app.py": "header 1\nheader 2\n" + APP})
    builder.tag("v1.2.0")
    fork = _fork(builder, fix)
    entry = _entry(fork, "v1.2.0")
    assert (entry["verdict"], entry["ancestor"]) == ("revisit", True)
    assert entry["evidence"] == [
        {
            "kind": "still-applies-at-offset",
            "commit": None,
            "detail": "the patch still applies forward on v1.2.0, at an offset (app.py: hunk 1 "
            "applies only at offset +2 (line 6) on v1.2.0; run 'forktool refresh'): its change "
            "is not there",
        }
    ]
    assert entry["reason"] == (
        f"{fix[:12]} in v1.2.0 by ancestry, yet the patch still applies forward (at an offset) "
        "on v1.2.0: the change is absent there (reverted, or lost in a merge)"
    )


def test_retire_refuses_a_reverted_fix_and_writes_nothing(builder: RepoBuilder) -> None:
    fix = _upstream(builder)
    builder.commit(f'Revert "fix line 7"\n\nThis reverts commit {fix}.\n', {"app.py": APP})
    builder.tag("v1.2.0")
    fork = _fork(builder, fix)
    fork.cli("pin", "bump", "v1.2.0")
    before = snapshot_tree(fork.root)
    result = fork.cli("retire", "--tag", "v1.2.0", PATCH, "--format", "json")
    assert result.code == 1, result.err
    refused = result.json()["refused"]
    assert [(r["patch"], r["verdict"]) for r in refused] == [(PATCH, "revisit")]  # type: ignore[index, union-attr, attr-defined]
    assert snapshot_tree(fork.root) == before
    unattended = fork.cli("retire", "--tag", "v1.2.0", "--format", "json")
    assert unattended.code == 0, unattended.err
    assert unattended.json()["retired"] == []
    assert snapshot_tree(fork.root) == before


def test_poll_needs_hands_for_a_reverted_fix(builder: RepoBuilder) -> None:
    fix = _upstream(builder)
    builder.commit(f'Revert "fix line 7"\n\nThis reverts commit {fix}.\n', {"app.py": APP})
    builder.tag("v1.2.0")
    fork = _fork(builder, fix)
    result = fork.cli("upstream", "poll", "--no-fetch", "--format", "json")
    assert result.code == 4, result.err
    data = result.json()
    plan = data["plan"]
    assert (data["verdict"], data["newest"], plan["retired"]) == ("needs-hands", "v1.2.0", [])  # type: ignore[index]
    assert [p["verdict"] for p in plan["kept"]] == ["revisit"]  # type: ignore[index, union-attr]


def test_a_revert_in_other_words_is_found(builder: RepoBuilder) -> None:
    """CMake's reverts say "Revert commit <sha> (<subject>, <date>, <describe>)" in the
    body under a subject of their own, and often change more (so the change is no
    exact inverse): the words and the commit they name are a witness."""
    fix = _upstream(builder)
    revert = builder.commit(
        "app: revert line seven for now\n\n"
        f"Revert commit {fix[:10]} (fix line 7, 2023-09-21,\nv1.1.0~1) pending further "
        "investigation.\n",
        {"app.py": APP.replace("line 15\n", "line fifteen\n")},
    )
    builder.tag("v1.2.0")
    fork = _fork(builder, fix)
    entry = _entry(fork, "v1.2.0")
    assert entry["verdict"] != "retire"
    detail = (
        f"{revert[:12]} 'app: revert line seven for now' in v1.2.0 reverts {fix[:12]} "
        "(found by: 'Revert commit <sha>' words)"
    )
    assert {"kind": "revert", "commit": revert, "detail": detail} in entry["evidence"]  # type: ignore[operator]


def test_a_partial_revert_in_words_is_found(builder: RepoBuilder) -> None:
    """less writes "Revert part of <sha>: <what>" when it takes back part of a change:
    the fix is no longer whole in the tag, so the patch is not retired."""
    fix = _upstream(builder)
    revert = builder.commit(
        f"Revert part of {fix}: keep line seven as it was.\n",
        {"app.py": APP.replace("line 15\n", "line fifteen\n")},
    )
    builder.tag("v1.2.0")
    entry = _entry(_fork(builder, fix), "v1.2.0")
    assert entry["verdict"] != "retire"
    kinds = {(e["kind"], e["commit"]) for e in entry["evidence"]}  # type: ignore[index, union-attr]
    assert ("revert", revert) in kinds


def test_a_revert_of_what_a_commit_merged_in_words_is_found(builder: RepoBuilder) -> None:
    """CMake's "Revert implementation changes merged by commit <sha> (...), but keep
    test suite updates": a few words between the verb and "commit <sha>"."""
    fix = _upstream(builder)
    revert = builder.commit(
        "Revert use of the new line seven for 1.1\n\n"
        f"Revert implementation changes merged by commit {fix[:10]} (fix line 7,\n"
        "2023-09-06), but keep test suite updates.\n",
        {"app.py": APP.replace("line 15\n", "line fifteen\n")},
    )
    builder.tag("v1.2.0")
    entry = _entry(_fork(builder, fix), "v1.2.0")
    assert entry["verdict"] != "retire"
    assert ("revert", revert) in _kinds(entry)


def test_a_commit_named_later_in_a_revert_sentence_s_next_sentence_is_no_revert(
    builder: RepoBuilder,
) -> None:
    fix = _upstream(builder)
    builder.commit(
        f"Reverted the wording. The docs now say what commit {fix[:10]} did.\n",
        {"notes.txt": "x\n"},
    )
    builder.tag("v1.2.0")
    entry = _entry(_fork(builder, fix), "v1.2.0")
    assert entry["verdict"] == "retire", entry


def test_a_revert_in_content_is_found_whatever_else_the_series_maps(
    builder: RepoBuilder,
) -> None:
    """A commit that takes x/app.py's fix back and also adds y/notes.txt reverts the
    fix within x/ (found by its inverse patch-id alone: its message says nothing). A
    second mapped fix in y/ beside it once widened the comparison and hid the revert."""
    builder.commit("import\n", {"x/app.py": APP, "y/app.py": APP})
    builder.tag("v1.0.0")
    fix_x = builder.commit("fix x\n", {"x/app.py": FIXED})
    fix_y = builder.commit("fix y\n", {"y/app.py": FIXED})
    # y's fix stays, but its context moves: 0002 no longer reverse-applies, so its
    # commit is sought by content too (beside x's, in the same search)
    builder.commit("reword y\n", {"y/app.py": FIXED.replace("line 8\n", "line eight\n")})
    builder.tag("v1.1.0")
    tidy = builder.commit("tidy up\n", {"x/app.py": APP, "y/notes.txt": "notes\n"})
    builder.tag("v1.2.0")
    patches = {
        "0001-x.patch": make_patch(builder, "v1.0.0", {"x/app.py": FIXED}, "fix x"),
        "0002-y.patch": make_patch(builder, "v1.0.0", {"y/app.py": FIXED}, "fix y"),
    }
    commits = {"0001-x.patch": fix_x, "0002-y.patch": fix_y}
    fork = MiniFork(builder, "v1.0.0")
    for names in (["0001-x.patch"], ["0001-x.patch", "0002-y.patch"]):
        for name in patches:
            (fork.root / "patches" / name).unlink(missing_ok=True)
        fork.write({n: patches[n] for n in names}, commits={n: commits[n] for n in names})
        result = fork.cli("absorbed", "--tag", "v1.2.0", "--format", "json")
        assert result.code == 0, result.err
        entry = result.json()["patches"][0]  # type: ignore[index]
        assert entry["verdict"] == "revisit", names
        assert ("revert", tidy) in _kinds(entry), names


def test_a_revert_by_the_reverted_commits_label_is_found(builder: RepoBuilder) -> None:
    """vim names each commit "patch 9.2.0590: ..." and reverts one by that label:
    "patch 9.2.0667: patch 9.2.0590 was wrong" / "Solution: Revert it", with no sha,
    no quoted title, and more changed than the exact inverse."""
    fix = _upstream(builder, "patch 9.2.0590: line 7 reads badly")
    builder.commit(
        "patch 9.2.0600: patch 9.2.05901 is a longer number\n\nRevert nothing here.\n",
        {"README": "still read me\n"},
    )
    revert = builder.commit(
        "patch 9.2.0667: patch 9.2.0590 was wrong\n\n"
        "Problem:  patch 9.2.0590 was wrong\nSolution: Revert it\n",
        {"app.py": APP.replace("line 15\n", "line fifteen\n")},
    )
    builder.tag("v1.2.0")
    entry = _entry(_fork(builder, fix), "v1.2.0")
    assert entry["verdict"] == "revisit"
    reverts = [e for e in entry["evidence"] if e["kind"] == "revert"]  # type: ignore[attr-defined, index]
    assert [(e["commit"], e["detail"]) for e in reverts] == [
        (
            revert,
            f"{revert[:12]} 'patch 9.2.0667: patch 9.2.0590 was wrong' in v1.2.0 reverts "
            f"{fix[:12]} (found by: names its label and a revert)",
        )
    ]


def test_a_topic_before_the_colon_is_no_label() -> None:
    """ "http2: ...", "x86: ..." name a topic many commits share: a revert that mentions
    the topic reverts none of them; a label holds a number of four digits or more."""
    assert subject_label("patch 9.2.0590: fix x") == "patch 9.2.0590"
    assert subject_label("CVE-2023-1234: check the length") == "CVE-2023-1234"
    assert subject_label("Bug 1812345: crash on exit") == "Bug 1812345"
    for topic in ("http2: fix the window", "x86: boot", "s390: fix", "docs: typo", "2024: x"):
        assert subject_label(topic) is None
