"""``verify`` applies the whole series in one git call and reads every verdict from
that call's output; the verdicts are the ones a patch-by-patch run reaches.

Each test compares ``verify_series`` with :func:`patch_by_patch`, a reference that
applies the patches one at a time (the way verify named culprits before), up to the
first patch that does not apply; every patch after it is ``not-tried``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from testing.apply_support import edit_line, numbered, side_commit, writes
from testing.helpers import MiniFork, mini_fork

from forktool.builder import RepoBuilder
from forktool.config import load_config
from forktool.engine.apply import series_run
from forktool.engine.apply import verify as verify_engine
from forktool.engine.apply.precheck import precheck
from forktool.engine.apply.verdict import PatchVerdict
from forktool.engine.apply.verify import VerifyResult, verify_series
from forktool.errors import InputError
from forktool.fork import Fork, load_fork

APP = "src/app.py"
LIB = "src/lib.py"
NOTES = "notes.txt"
APP_TEXT = numbered(40)
LIB_TEXT = numbered(40, "lib")


@pytest.fixture(params=["one call", "one call per patch"])
def fork(
    builder: RepoBuilder, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> MiniFork:
    """Every test runs twice: the series in one git call, and (as a long series is)
    in several calls, here one per patch."""
    if request.param == "one call per patch":
        monkeypatch.setattr(series_run, "ONE_CALL_BYTES", 1)
        monkeypatch.setattr(series_run, "CHUNK_BYTES", 1)
    return mini_fork(builder, {APP: APP_TEXT, LIB: LIB_TEXT})


def chain(fork: MiniFork, edits: list[tuple[str, str, str]]) -> dict[str, bytes]:
    """One patch per (file, old line, new line), each made on top of the ones before."""
    texts = {APP: APP_TEXT, LIB: LIB_TEXT}
    base = fork.pin
    patches = {}
    for number, (path, old, new) in enumerate(edits, start=1):
        texts[path] = edit_line(texts[path], old, new)
        base = side_commit(fork.repo, base, writes({path: texts[path]}))
        patches[f"{number:04d}-edit.patch"] = export_commit(fork, base)
    return patches


def export_commit(fork: MiniFork, commit: str) -> bytes:
    from testing.apply_support import export

    return export(fork.repo, commit)


def load(fork: MiniFork) -> Fork:
    return load_fork(load_config(fork.root / "forktool.yaml"), strict=False)


def verify(fork: MiniFork) -> VerifyResult:
    loaded = load(fork)
    return verify_series(loaded, fork.repo.git, base=fork.pin, base_commit=fork.repo.rev(fork.pin))


def patch_by_patch(fork: MiniFork) -> list[dict[str, object]]:
    """The reference: each patch tried on the result of the ones before, stopping at
    the first that does not apply."""
    loaded = load(fork)
    git = fork.repo.git
    verdicts: list[PatchVerdict] = []
    culprit: str | None = None  # the first patch that did not apply
    with git.temp_index(f"{fork.pin}^{{tree}}") as index:
        for patch in loaded.patches:
            early = precheck(patch, "git")
            if culprit is not None:
                message = f"not tried: {culprit} does not apply before it"
                verdicts.append(early or PatchVerdict(patch.name, "not-tried", message))
                continue
            # A patch on its own: strict, then reversed and with less context if it fails.
            verdict = early or verify_engine._culprit(index, patch, fork.pin)
            verdicts.append(verdict)
            if verdict.status not in ("exact", "offset"):
                culprit = patch.name
    return [v.to_json() for v in verdicts]


def statuses(result: VerifyResult) -> list[str]:
    return [v.status for v in result.patches]


EDITS = [
    (APP, "line 5", "line 5 fixed"),
    (LIB, "lib 10", "lib 10 fixed"),
    (APP, "line 30", "line 30 fixed"),
    (LIB, "lib 30", "lib 30 fixed"),
]


def test_passing_series_has_the_verdicts_of_a_patch_by_patch_run(fork: MiniFork) -> None:
    fork.write(chain(fork, EDITS))
    result = verify(fork)
    assert result.ok and result.round_trip
    assert [v.to_json() for v in result.patches] == patch_by_patch(fork)
    assert result.patches[2].to_json() == {
        "patch": "0003-edit.patch",
        "status": "exact",
        "message": "",
        "hunks": [{"file": APP, "line": 27, "offset": 0}],
    }


def test_offset_in_one_patch_is_found_in_the_one_call_output(fork: MiniFork) -> None:
    patches = chain(fork, EDITS)
    # Patch 2 made against a lib.py with two more lines at the top: on the pin it
    # applies 2 lines higher; the patches after it still apply exactly.
    shifted = "new a\nnew b\n" + LIB_TEXT
    base = side_commit(fork.repo, fork.pin, writes({LIB: shifted}))
    fixed = side_commit(fork.repo, base, writes({LIB: edit_line(shifted, "lib 10", "lib 10 x")}))
    patches["0002-edit.patch"] = export_commit(fork, fixed)
    fork.write(patches)
    result = verify(fork)
    assert statuses(result) == ["exact", "offset", "exact", "exact"]
    assert [v.to_json() for v in result.patches] == patch_by_patch(fork)
    assert result.patches[1].message == (
        f"{LIB}: hunk 1 applies only at offset -2 (line 7) on v1; run 'forktool refresh'"
    )
    assert not result.ok and result.round_trip


def test_first_failing_patch_is_named_and_the_rest_are_not_tried(fork: MiniFork) -> None:
    patches = chain(fork, EDITS)
    # Patch 3 made against an app.py whose line 29 differs: its context is not on v1.
    changed = edit_line(edit_line(APP_TEXT, "line 5", "line 5 fixed"), "line 29", "line 29 x")
    base = side_commit(fork.repo, fork.pin, writes({APP: changed}))
    fixed = side_commit(fork.repo, base, writes({APP: edit_line(changed, "line 30", "line 30 y")}))
    patches["0003-edit.patch"] = export_commit(fork, fixed)
    fork.write(patches)
    result = verify(fork)
    assert statuses(result) == ["exact", "exact", "fails", "not-tried"]
    assert [v.to_json() for v in result.patches] == patch_by_patch(fork)
    assert result.patches[2].message == (
        f"{APP}: hunk 1 does not apply at line 27 on v1: its lines are not there"
    )
    assert result.patches[3].to_json() == {
        "patch": "0004-edit.patch",
        "status": "not-tried",
        "message": "not tried: 0003-edit.patch does not apply before it",
        "hunks": [],
    }
    assert not result.ok and not result.round_trip


def test_failing_first_patch_leaves_every_other_not_tried(fork: MiniFork) -> None:
    patches = chain(fork, EDITS)
    patches["0001-edit.patch"] = patches["0002-edit.patch"].replace(b"lib 9", b"lib 9 x")
    fork.write(patches)
    result = verify(fork)
    assert statuses(result) == ["fails", "not-tried", "not-tried", "not-tried"]
    assert [v.to_json() for v in result.patches] == patch_by_patch(fork)


def test_already_applied_patch_in_the_series_is_named(fork: MiniFork) -> None:
    patches = chain(fork, EDITS)
    patches["0003-edit.patch"] = patches["0001-edit.patch"]  # the same change twice
    fork.write(patches)
    result = verify(fork)
    assert statuses(result) == ["exact", "exact", "fails", "not-tried"]
    assert result.patches[2].message.startswith("already applied:")
    assert [v.to_json() for v in result.patches] == patch_by_patch(fork)


def test_patch_refused_on_its_text_is_named_before_git_is_asked(fork: MiniFork) -> None:
    patches = chain(fork, EDITS)
    # Text after the last hunk: git applies it, forktool refuses it as malformed.
    patches["0002-edit.patch"] += b"stray text\n"
    patches["0004-edit.patch"] += b"more stray text\n"
    fork.write(patches)
    result = verify(fork)
    # A later patch condemned by its text alone still says so.
    assert statuses(result) == ["exact", "malformed", "not-tried", "malformed"]
    assert [v.to_json() for v in result.patches] == patch_by_patch(fork)


def test_output_that_mimics_git_falls_back_to_bisection(builder: RepoBuilder) -> None:
    # A failing hunk's context is printed by git ("while searching for:"); here that
    # context reads like git's own "Applied patch" line, so the one call's output
    # counts one patch too many. The re-apply catches it and bisection finds the truth.
    notes = "".join(f"note {n}\n" for n in range(1, 11)) + "Applied patch notes.txt cleanly.\n"
    notes += "".join(f"note {n}\n" for n in range(11, 21))
    fork = mini_fork(builder, {APP: APP_TEXT, NOTES: notes})
    first = side_commit(fork.repo, fork.pin, writes({APP: edit_line(APP_TEXT, "line 5", "x")}))
    stale = edit_line(notes, "note 9", "note 9 elsewhere")
    base = side_commit(fork.repo, fork.pin, writes({NOTES: stale}))
    failing = side_commit(fork.repo, base, writes({NOTES: edit_line(stale, "note 10", "n")}))
    after = side_commit(fork.repo, first, writes({APP: edit_line(APP_TEXT, "line 30", "y")}))
    fork.write(
        {
            "0001-a.patch": export_commit(fork, first),
            "0002-notes.patch": export_commit(fork, failing),
            "0003-b.patch": export_commit(fork, after),
        }
    )
    result = verify(fork)
    assert statuses(result) == ["exact", "fails", "not-tried"]
    assert [v.to_json() for v in result.patches] == patch_by_patch(fork)


def test_cli_json_shows_not_tried_and_check_reports_only_the_culprit(fork: MiniFork) -> None:
    patches = chain(fork, EDITS)
    patches["0002-edit.patch"] = patches["0001-edit.patch"]
    fork.write(patches)
    out = fork.cli("verify", "--format", "json")
    assert out.code == 1
    shown = [p["status"] for p in out.json()["patches"]]  # type: ignore[union-attr]
    assert shown == ["exact", "fails", "not-tried", "not-tried"]
    assert out.json()["round_trip"] is False
    assert out.json()["message"] == (
        "the round trip was not tried: 1 patch(es) did not apply (the first: 0002-edit.patch)"
    )
    check = fork.cli("check", "--only", "apply", "--format", "json")
    findings = check.json()["checks"][0]["findings"]  # type: ignore[index]
    assert [f["path"] for f in findings] == ["patches/0002-edit.patch"]  # type: ignore[index]
    text = fork.cli("verify")
    assert "2 later patch(es) not tried" in text.out + text.err


def test_patches_are_parsed_only_when_asked(fork: MiniFork, tmp_path: Path) -> None:
    fork.write(chain(fork, EDITS[:2]))
    loaded = load(fork)
    assert all("parsed" not in patch.__dict__ for patch in loaded.patches)
    verify_series(loaded, fork.repo.git, base="v1", base_commit=fork.repo.rev("v1"))
    # verify reads each parse once and keeps none of them (memory stays flat).
    assert all("parsed" not in patch.__dict__ for patch in loaded.patches)
    assert loaded.patches[0].header == loaded.patches[0].parsed.header


def test_status_refuses_a_patch_problem_as_a_strict_load_does(fork: MiniFork) -> None:
    patches = chain(fork, EDITS)
    patches["0002-edit.patch"] += b"stray text\n"
    patches["0004-edit.patch"] = patches["0004-edit.patch"].replace(b"src/lib.py", b"../lib.py")
    fork.write(patches)
    with pytest.raises(InputError) as strict:
        load_fork(load_config(fork.root / "forktool.yaml"), strict=True)
    out = fork.cli("status")
    assert out.code == 2
    assert out.error_lines[0] == f"error: {strict.value.message}"
    assert out.error_lines[0].endswith("(and 2 more)")  # the patch after the culprit too


def test_a_commented_out_patch_is_disabled_not_forgotten(fork: MiniFork) -> None:
    # quilt and Debian maintainers switch a patch off by commenting its series line
    # and keep its file: verify applies the rest, check says which file is off.
    patches = chain(fork, EDITS[:2])
    fork.write(patches, series="0001-edit.patch\n#0002-edit.patch\n")
    loaded = load(fork)
    assert [p.name for p in loaded.patches] == ["0001-edit.patch"]
    assert [(f.severity, f.line) for f in loaded.findings] == [("info", 2)]
    assert "patches/0002-edit.patch is disabled" in loaded.findings[0].message
    assert statuses(verify(fork)) == ["exact"]
    result = fork.cli("check", "--only", "files", "--format", "json")
    assert result.code == 0, result.out
    assert [f["severity"] for f in result.json()["checks"][0]["findings"]] == ["info"]
    # Without its "#" line, the same file (and its map line) are errors again: a
    # patch nobody listed.
    fork.write(patches, series="0001-edit.patch\n# 0002-edit.patch is off for now\n")
    assert [(f.severity, f.message) for f in load(fork).findings] == [
        ("error", "patches/0002-edit.patch is not listed in the series"),
        ("error", "maps '0002-edit.patch', which the series does not list"),
    ]


def test_a_disabled_patch_without_a_suffix_is_told_too(fork: MiniFork) -> None:
    """shadow's series switches off ``#900_testsuite_groupmems``, a file with no
    ``.patch``: the line names it, so it is the same disabled notice."""
    patches = chain(fork, EDITS[:2])
    patches["900_testsuite"] = patches.pop("0002-edit.patch")
    fork.write(patches, series="0001-edit.patch\n#900_testsuite\n")
    notices = [(f.severity, f.message) for f in load(fork).findings]
    assert notices == [
        (
            "info",
            "patches/900_testsuite is disabled (commented out in the series): it is "
            "neither applied nor checked",
        )
    ]


def test_a_patch_another_series_lists_is_not_applied_here(fork: MiniFork) -> None:
    # glibc keeps series.hurd-i386 beside its series (dpkg-source: ubuntu.series): a
    # patch only such a file lists is that series', not a forgotten one of this fork.
    patches = chain(fork, EDITS[:2])
    fork.write(patches, series="0001-edit.patch\n")
    (fork.root / "series.hurd-i386").write_text("# hurd only\n0002-edit.patch\n")
    loaded = load(fork)
    notice = [f for f in loaded.findings if f.severity == "info"]
    assert [(f.path, f.line) for f in notice] == [("series.hurd-i386", 2)]
    assert [f for f in loaded.findings if f.severity == "error"] == []  # its map line may stay
    assert "listed by series.hurd-i386, another series, not by series" in notice[0].message
    assert statuses(verify(fork)) == ["exact"]


def test_an_unlisted_patch_in_a_maintainers_quilt_directory_is_a_warning(fork: MiniFork) -> None:
    # dpkg-source applies only what the series lists (apache2's rules apply
    # suexec-custom.patch by hand; python3.11 keeps old ones): a warning, as lintian's
    # patch-file-present-but-not-mentioned-in-series; forktool's own form keeps an error.
    patches = chain(fork, EDITS[:2])
    fork.write(patches, series="0001-edit.patch\n", extra_config="patch_form: maintainers\n")
    found = [
        (f.severity, f.message) for f in load(fork).findings if f.path == "patches/0002-edit.patch"
    ]
    assert found == [
        (
            "warning",
            "patches/0002-edit.patch is not listed in the series: it is neither applied nor checked",
        )
    ]
    assert statuses(verify(fork)) == ["exact"]
    fork.write(patches, series="0001-edit.patch\n")
    errors = [f.message for f in load(fork).findings if f.severity == "error"]
    assert "patches/0002-edit.patch is not listed in the series" in errors


def test_an_unlisted_file_without_a_suffix_that_holds_a_diff_is_a_warning(
    fork: MiniFork,
) -> None:
    """Debian names patches without a suffix (``CVE-2023-1234``, ``fix-ftbfs``): a file
    of any name whose start holds a diff and that no series line names is told, as a
    warning in either form (a file named as no patch may be kept for reference). A
    file that holds no diff (a README, a second series) is not a patch."""
    patches = chain(fork, EDITS[:2])
    patches["CVE-2023-1234"] = patches.pop("0002-edit.patch")
    fork.write(patches, series="0001-edit.patch\n")
    (fork.root / "patches" / "README").write_text("how these patches are kept\n--- and why\n")
    (fork.root / "patches" / "old").mkdir()
    (fork.root / "patches" / "old" / "notes.txt").write_bytes(b"nothing\n\x00binary\n")
    found = [
        (f.severity, f.path, f.message) for f in load(fork).findings if f.path != "upstream.map"
    ]
    assert found == [
        (
            "warning",
            "patches/CVE-2023-1234",
            "patches/CVE-2023-1234 holds a diff but is not listed in the series: it is "
            "neither applied nor checked",
        )
    ]
    assert statuses(verify(fork)) == ["exact"]
    # Listed, the same file is a patch like any other.
    fork.write(patches, series="0001-edit.patch\nCVE-2023-1234\n")
    assert [f for f in load(fork).findings if f.severity != "info"] == []
    assert statuses(verify(fork)) == ["exact", "exact"]


def test_a_binary_stanza_without_data_fails_saying_what_each_tool_does(fork: MiniFork) -> None:
    """qemu's stable diffs carry ``Binary files a/X and b/X differ`` with an abbreviated
    index line: nothing says what X becomes. git refuses it ("without full index
    line"), GNU patch skips it; every engine says so in the same words, with the two
    ways out, instead of git's message (or, with --engine patch, "use --engine git")."""
    patches = chain(fork, EDITS[:1])
    patches["0002-bin.patch"] = (
        b"diff --git a/data.bin b/data.bin\n"
        b"index 1234567..89abcde 100644\n"
        b"Binary files a/data.bin and b/data.bin differ\n"
    )
    fork.write(patches)
    result = verify(fork)
    assert statuses(result) == ["exact", "fails"]
    message = result.patches[1].message
    assert message.startswith("data.bin: the patch says only 'Binary files ... differ'")
    assert "GNU patch (so quilt and dpkg-source) skips it" in message
    for engine in ("git", "patch"):
        target = fork.root.parent / f"target-{engine}"
        fork.repo.git.run(["worktree", "add", "-q", "--detach", str(target), fork.pin], purpose="t")
        out = fork.cli("apply", "--target", str(target), "--engine", engine, "--format", "json")
        assert out.code == 1, out.out
        verdicts = {p["patch"]: p for p in out.json()["patches"]}  # type: ignore[index, union-attr]
        assert verdicts["0002-bin.patch"]["message"] == message, engine
