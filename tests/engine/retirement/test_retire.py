"""``forktool retire``: only what ancestry retires, all or nothing, recorded, undoable."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from testing.helpers import MiniFork, make_patch, run_cli, snapshot_tree

from forktool import fsutil
from forktool.builder import RepoBuilder
from forktool.demo import DemoUpstream
from forktool.model.record import BEGIN, END, empty_section, parse_record, section_state

P1 = "0001-config-do-not-crash-on-an-empty-config-file.patch"
P2 = "0002-engine-retry-on-timeout.patch"
P3 = "0003-engine-decode-input-as-UTF-8.patch"
P4 = "0004-fork-identify-the-fork-s-builds.patch"
NOTE1 = "patches/notes/0001-config-do-not-crash-on-an-empty-config-file.md"
DATE = "2024-06-01"
FORK_FILES = ("series", "upstream.map", f"patches/{P1}", NOTE1, "FORK.md")


@pytest.fixture(autouse=True)
def fixed_date(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORKTOOL_DATE", DATE)


@pytest.fixture
def example_fork(example_fork: RepoBuilder) -> RepoBuilder:
    """The example fork with its pin moved to v1.2.0 (committed): retire refuses a patch
    whose fix the pin lacks, so a fork retires what v1.2.0 absorbed after the bump."""
    bumped = run_cli("-C", example_fork.path, "pin", "bump", "v1.2.0")
    assert bumped.code == 0, bumped.err
    example_fork.commit("fork: pin v1.2.0\n")
    return example_fork


def _files(root: Path) -> dict[str, bytes | None]:
    return {
        name: (root / name).read_bytes() if (root / name).exists() else None for name in FORK_FILES
    }


def _record_rows(root: Path) -> list[list[str]]:
    record = parse_record((root / "FORK.md").read_text())
    return [entry.cells() for entry in record.entries]


def test_retire_removes_exactly_the_absorbed_patch(
    example_fork: RepoBuilder, demo_upstream: DemoUpstream
) -> None:
    root = example_fork.path
    before = _files(root)
    result = run_cli("-C", root, "retire", "--tag", "v1.2.0", "--format", "json")
    assert result.code == 0, result.err
    witnesses = f"ancestry: {demo_upstream.fix_empty_config[:12]} in v1.2.0; content-present"
    assert result.json() == {
        "tag": "v1.2.0",
        "tag_commit": demo_upstream.tags["v1.2.0"],
        "dry_run": False,
        "ok": True,
        "retired": [
            {
                "patch": P1,
                "verdict": "retire",
                "forced": False,
                "upstream_commits": [demo_upstream.fix_empty_config],
                "first_release": "v1.2.0",
                "witnesses": witnesses,
            }
        ],
        "refused": [],
        "files": [f"patches/{P1}", NOTE1, "series", "upstream.map", "FORK.md"],
        "warnings": [],
    }
    assert not (root / "patches" / P1).exists()
    assert not (root / NOTE1).exists()
    assert (root / "series").read_text() == (
        f"# The example fork's patch series (applied in order, -p1).\n{P2}\n{P3}\n{P4}\n"
    )
    assert (root / "upstream.map").read_bytes() == b"".join(
        line + b"\n"
        for line in before["upstream.map"].splitlines()
        if P1.encode() not in line  # type: ignore[union-attr]
    )
    assert _record_rows(root) == [
        [
            DATE,
            "retired",
            P1,
            "https://git.example.org/pulse/pulls/41",
            demo_upstream.fix_empty_config,
            "v1.2.0",
            "v1.2.0",
            witnesses,
        ]
    ]
    fork_md = (root / "FORK.md").read_text()
    assert (
        fork_md.split("<!-- forktool:retirement-record:begin -->")[0]
        == before["FORK.md"].decode().split("<!-- forktool:retirement-record:begin -->")[0]
    )  # type: ignore[union-attr]
    status = run_cli("-C", root, "status", "--format", "json")
    assert status.code == 0, status.err
    assert status.json()["series_length"] == 3


def test_dry_run_changes_nothing(example_fork: RepoBuilder) -> None:
    before = snapshot_tree(example_fork.path)
    result = run_cli(
        "-C", example_fork.path, "retire", "--tag", "v1.2.0", "--dry-run", "--format", "json"
    )
    assert result.code == 0, result.err
    assert result.json()["dry_run"] is True
    assert [r["patch"] for r in result.json()["retired"]] == [P1]  # type: ignore[attr-defined]
    assert snapshot_tree(example_fork.path) == before


def test_retire_refuses_a_keep_and_changes_nothing(example_fork: RepoBuilder) -> None:
    before = snapshot_tree(example_fork.path)
    result = run_cli(
        "-C", example_fork.path, "retire", P1, P2, "--tag", "v1.2.0", "--format", "json"
    )
    assert result.code == 1
    data = result.json()
    assert data["retired"] == []
    assert data["refused"] == [
        {"patch": P2, "verdict": "keep", "reason": "7c7c98291d2b not an ancestor of v1.2.0"}
    ]
    assert snapshot_tree(example_fork.path) == before
    text = run_cli("-C", example_fork.path, "retire", P2, "--tag", "v1.2.0")
    assert text.code == 1
    assert text.out.splitlines() == [
        f"refused: {P2}: verdict 'keep' at v1.2.0 (7c7c98291d2b not an ancestor of v1.2.0); "
        "to retire it anyway: --force --reason TEXT",
        "nothing was changed",
    ]


def test_force_with_reason_is_recorded(
    example_fork: RepoBuilder, demo_upstream: DemoUpstream
) -> None:
    reason = "v1.2.0 carries it as cherry-pick c349aa4; verified by hand"
    result = run_cli(
        "-C", example_fork.path, "retire", P3, "--tag", "v1.2.0", "--force", "--reason", reason
    )
    assert result.code == 0, result.err
    rows = _record_rows(example_fork.path)
    assert len(rows) == 1
    assert rows[0][:7] == [
        DATE,
        "retired",
        P3,
        "https://git.example.org/pulse/pulls/60",
        demo_upstream.fix_utf8,
        "v1.3.0rc0",
        "v1.2.0",
    ]
    # Pinned at v1.2.0, the cherry-pick is below the pin: ancestry alone says keep.
    assert rows[0][7].startswith("FORCED over verdict 'keep' (")
    assert rows[0][7].endswith(f"): {reason}")
    assert (example_fork.path / "series").read_text().splitlines()[1:] == [P1, P2, P4]


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ([P2, "--force"], "error: --force needs --reason TEXT: the reason is recorded"),
        (["--force", "--reason", "x"], "error: --force needs the names of the patches to force"),
        ([P2, "--reason", "x"], "error: --reason goes with --force or --undo"),
        (["0009-nope.patch"], "error: '0009-nope.patch' is not in the series"),
        ([], "error: unknown tag 'v9'"),
    ],
)
def test_bad_retire_requests_are_exit_2(
    example_fork: RepoBuilder, args: list[str], error: str
) -> None:
    before = snapshot_tree(example_fork.path)
    tag = "v9" if not args else "v1.2.0"
    result = run_cli("-C", example_fork.path, "retire", *args, "--tag", tag)
    assert result.code == 2
    assert result.error_lines[0] == error
    assert snapshot_tree(example_fork.path) == before


def test_tag_is_required_without_undo(example_fork: RepoBuilder) -> None:
    result = run_cli("-C", example_fork.path, "retire")
    assert result.code == 2
    assert result.error_lines[0] == "error: --tag TAG is required (or --undo PATCH)"


def test_failure_mid_retire_leaves_every_file_as_it_was(
    example_fork: RepoBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = snapshot_tree(example_fork.path)
    real_replace = os.replace
    calls: list[Any] = []

    def flaky(src: Any, dst: Any) -> None:
        calls.append(dst)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(fsutil.os, "replace", flaky)
    result = run_cli("-C", example_fork.path, "retire", "--tag", "v1.2.0")
    monkeypatch.setattr(fsutil.os, "replace", real_replace)
    assert result.code == 2
    assert result.error_lines == [
        "error: could not write a file: No space left on device",
        "hint: free some disk space, then run the command again",
    ]
    assert len(calls) > 2  # the rollback ran
    assert snapshot_tree(example_fork.path) == before


# -- undo --------------------------------------------------------------------------------


def test_undo_of_an_uncommitted_retirement_restores_byte_identical(
    example_fork: RepoBuilder,
) -> None:
    root = example_fork.path
    before = _files(root)
    assert run_cli("-C", root, "retire", "--tag", "v1.2.0").code == 0
    head = example_fork.rev("HEAD")
    result = run_cli(
        "-C", root, "retire", "--undo", P1, "--reason", "image crash-looped", "--format", "json"
    )
    assert result.code == 0, result.err
    assert result.json() == {
        "patch": P1,
        "restored_from": head,
        "uncommitted_retirement": True,
        "dry_run": False,
        "files": [f"patches/{P1}", "series", "upstream.map", "FORK.md", NOTE1],
        "reason": f"restored from {head[:12]}: image crash-looped",
    }
    after = _files(root)
    for name in ("series", "upstream.map", f"patches/{P1}", NOTE1):
        assert after[name] == before[name], name
    rows = _record_rows(root)
    assert [row[1] for row in rows] == ["retired", "restored"]
    assert rows[1][:2] == [DATE, "restored"]
    assert rows[1][2:7] == rows[0][2:7]  # patch, PR, commits, first release, tag
    assert rows[1][7] == f"restored from {head[:12]}: image crash-looped"


def test_undo_of_a_committed_retirement_restores_from_the_commit_before_it(
    example_fork: RepoBuilder,
) -> None:
    root = example_fork.path
    # A comment line above the patch's series line stays where it is.
    series = (root / "series").read_text().replace(P2, f"# retries: PR 57\n{P2}")
    original = example_fork.commit("fork: note PR 57 in the series\n", {"series": series})
    before = _files(root)
    forced = ("--force", "--reason", "the pin moves to v1.3.0 next")
    assert run_cli("-C", root, "retire", P2, "--tag", "v1.3.0", *forced).code == 0
    example_fork.commit("fork: retire 0002\n")
    example_fork.commit("fork: unrelated later work\n", {"docs.txt": "x\n"})
    result = run_cli("-C", root, "retire", "--undo", P2, "--format", "json")
    assert result.code == 0, result.err
    data = result.json()
    assert data["restored_from"] == original
    assert data["uncommitted_retirement"] is False
    assert data["reason"] == f"restored from {original[:12]}: no reason given"
    assert (root / "series").read_bytes() == before["series"]
    assert (root / "upstream.map").read_bytes() == before["upstream.map"]
    assert (root / "patches" / P2).read_bytes() == example_fork.git.run(
        ["cat-file", "blob", f"{original}:patches/{P2}"], purpose="read"
    ).stdout
    # The series was written for v1.1.0 (the fixture bumped the pin without refreshing).
    verify = run_cli("-C", root, "verify", "--base", "v1.1.0")
    assert verify.code == 0, verify.out


def test_undo_refuses_a_patch_still_in_the_series_or_never_there(example_fork: RepoBuilder) -> None:
    before = snapshot_tree(example_fork.path)
    listed = run_cli("-C", example_fork.path, "retire", "--undo", P1)
    assert listed.code == 2
    assert listed.error_lines == [f"error: '{P1}' is in the series: there is nothing to undo"]
    never = run_cli("-C", example_fork.path, "retire", "--undo", "0009-never.patch")
    assert never.code == 2
    assert (
        never.error_lines[0]
        == "error: no commit in HEAD's history lists '0009-never.patch' in series"
    )
    assert snapshot_tree(example_fork.path) == before


def test_undo_refuses_to_overwrite_a_file(example_fork: RepoBuilder) -> None:
    root = example_fork.path
    assert run_cli("-C", root, "retire", "--tag", "v1.2.0").code == 0
    (root / NOTE1).write_text("someone else's notes\n")
    result = run_cli("-C", root, "retire", "--undo", P1)
    assert result.code == 2
    assert result.error_lines[0] == f"error: {NOTE1} exists: restoring '{P1}' would overwrite it"
    assert (root / NOTE1).read_text() == "someone else's notes\n"
    assert not (root / "patches" / P1).exists()


def test_bad_record_date_is_exit_2(
    example_fork: RepoBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FORKTOOL_DATE", "June 1st")
    result = run_cli("-C", example_fork.path, "retire", "--tag", "v1.2.0")
    assert result.code == 2
    assert result.error_lines[0] == "error: FORKTOOL_DATE='June 1st' is not a date"


def test_status_shows_what_the_newest_release_would_retire(example_fork: RepoBuilder) -> None:
    result = run_cli("-C", example_fork.path, "status", "--format", "json")
    assert result.code == 0, result.err
    assert result.json()["newest_release"] == {
        "tag": "v1.3.0",
        "tag_commit": example_fork.rev("v1.3.0"),
        "would_retire": [P1, P2, P3],
        "note": None,
    }
    text = run_cli("-C", example_fork.path, "status")
    assert f"newest : v1.3.0 would retire {P1}, {P2}, {P3}" in text.out


def test_status_on_a_long_range_names_ancestry_and_skips_the_verdicts(
    example_fork: RepoBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the preview's size the newest release is judged by ancestry alone, with a
    note naming the command that gives the verdicts: one screen stays fast."""
    from forktool.engine.retirement import release_preview

    monkeypatch.setattr(release_preview, "PREVIEW_MAX_COMMITS", 1)
    result = run_cli("-C", example_fork.path, "status", "--format", "json")
    assert result.code == 0, result.err
    newest = result.json()["newest_release"]
    assert newest["would_retire"] is None  # type: ignore[index]
    note = newest["note"]  # type: ignore[index]
    assert re.fullmatch(
        r"\d+ commits since the pin, more than status reads \(1\); 3 of 3 mapped patches "
        r"have their commits in v1\.3\.0; `forktool absorbed --tag v1\.3\.0` gives the verdicts",
        note,
    ), note


@pytest.mark.parametrize(
    "reason",
    [
        f"see {END} and {BEGIN}",
        END,
        f"x\n{END}\ny",
        f"x\r{END}\ry",
        f"x\u2028{BEGIN}\u2029y",
        f"x\x0b{END}\x0cy\x85z",
    ],
)
def test_record_markers_in_a_reason_never_break_the_record(
    example_fork: RepoBuilder, reason: str
) -> None:
    root = example_fork.path
    result = run_cli("-C", root, "retire", P3, "--tag", "v1.2.0", "--force", "--reason", reason)
    assert result.code == 0, result.err
    text = (root / "FORK.md").read_text()
    assert [line for line in text.split("\n") if line.strip() in (BEGIN, END)] == [BEGIN, END]
    assert _record_rows(root)[0][7].endswith(": " + " ".join(reason.replace("\r", "\n").split()))
    check = run_cli("-C", root, "check", "--only", "record", "--only", "files")
    assert check.code == 0, check.out
    undo = run_cli("-C", root, "retire", "--undo", P3, "--reason", reason)
    assert undo.code == 0, undo.err
    assert [e.action for e in parse_record((root / "FORK.md").read_text()).entries] == [
        "retired",
        "restored",
    ]


def test_a_marker_quoted_in_prose_is_no_marker() -> None:
    text = f"# Notes\n\nThe record sits between `{BEGIN}` and `{END}` lines.\n\n" + empty_section()
    assert section_state(text) == "ok"
    assert parse_record(text).entries == ()
    assert section_state(f"# Notes\n  {BEGIN}  \nrow\n\t{END}\n") == "ok"
    assert section_state(f"see {BEGIN}\n") == "missing"


def test_a_revert_subject_quoting_a_marker_stays_inside_its_cell() -> None:
    from forktool.model.record import RecordEntry

    entry = RecordEntry(
        "2024-01-02",
        "retired",
        "0001-x.patch",
        "",
        ("a" * 40,),
        "v2",
        "v2",
        f"revert: 'Revert \"{END}\"'\u2028{BEGIN}\r{END}",
    )
    record = parse_record(empty_section()).with_entry(entry)
    text = record.render()
    assert section_state(text) == "ok"
    assert parse_record(text).entries[0].witnesses.count(END) == 2


def test_a_forced_retire_is_not_stopped_by_another_patchs_missing_commit(
    builder: RepoBuilder,
) -> None:
    """A Debian tarball fork: ``init --from-quilt`` mapped a DEP-3 commit that this
    repository has no history for. Forcing out another patch still works; the patch
    whose commit is missing, and any retire by verdict, are still refused (exit 2)."""
    from testing.helpers import make_patch, mini_fork

    fork = mini_fork(builder, {"a.txt": "a\n", "b.txt": "b\n"})
    absent = "c846986356fc149915a74972bf198abc266bc2c0"
    fork.write(
        {
            "cve-a.patch": make_patch(builder, "v1", {"a.txt": "A\n"}, "a"),
            "local-b.patch": make_patch(builder, "v1", {"b.txt": "B\n"}, "b"),
        },
        commits={"cve-a.patch": absent, "local-b.patch": "pending"},
    )
    (fork.root / "FORK.md").write_text("# notes\n\n" + empty_section())
    forced = fork.cli(
        "retire", "local-b.patch", "--tag", "v1", "--force", "--reason", "fixed in 2.12",
        "--format", "json",
    )  # fmt: skip
    assert forced.code == 0, forced.err
    assert (fork.root / "series").read_text() == "cve-a.patch\n"
    by_verdict = fork.cli("retire", "--tag", "v1")
    assert by_verdict.code == 2
    assert f"cve-a.patch: commit {absent} is not in this repository" in by_verdict.err
    own = fork.cli("retire", "cve-a.patch", "--tag", "v1", "--force", "--reason", "gone")
    assert own.code == 2 and absent in own.err


def test_a_tag_that_retires_nothing_touches_no_file_and_names_the_revisits(
    builder: RepoBuilder,
) -> None:
    """A release branch's tag holds the fix as a cherry-pick only: ancestry retires
    nothing, no file is rewritten (a FORK.md without its record section does not get
    one), and the patch whose witnesses disagree with ancestry is named for a human."""
    app = "".join(f"line {n}\n" for n in range(1, 21))
    builder.commit("import\n", {"app.py": app})
    builder.tag("v1.0.0")
    builder.branch("release-1.0")
    fixed = app.replace("line 9\n", "line nine\n")
    fix = builder.commit("fix line 9\n", {"app.py": fixed})
    builder.checkout("release-1.0")
    builder.cherry_pick(fix, x=True)
    builder.tag("v1.0.1")
    builder.checkout("main")
    fork = MiniFork(builder, "v1.0.0")
    patch = make_patch(builder, "v1.0.0", {"app.py": fixed}, "fix line 9")
    fork.write({"0001-fix.patch": patch}, commits={"0001-fix.patch": fix})
    (fork.root / "FORK.md").write_text("# the fork\n")  # no record section
    before = snapshot_tree(fork.root)
    result = fork.cli("retire", "--tag", "v1.0.1", "--format", "json")
    assert result.code == 0, result.err
    data = result.json()
    assert (data["retired"], data["refused"], data["files"]) == ([], [], [])
    assert data["warnings"] == [
        "1 patch(es) left to decide by hand at v1.0.1 (0001-fix.patch): verdict 'revisit', "
        "the witnesses disagree with ancestry; see 'forktool absorbed --tag v1.0.1', then "
        "keep each or retire it with --force --reason TEXT"
    ]
    assert snapshot_tree(fork.root) == before
    text = fork.cli("retire", "--tag", "v1.0.1", "--dry-run")
    assert text.code == 0, text.err
    assert text.out == "v1.0.1 absorbed no patch: nothing to retire\n"
    assert text.err == f"warning: {data['warnings'][0]}\n"
    assert snapshot_tree(fork.root) == before
