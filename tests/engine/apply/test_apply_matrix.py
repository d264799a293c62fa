"""Both engines agree: ``verify`` (temporary index), ``apply --engine git`` and
``apply --engine patch`` reach the same verdict on every case, down to the file,
hunk and line they name.

Each case builds a real repository whose ``v1`` tag is the pin, writes one or more
patches (exported from real commits, or hand-written where the quirk is in the
patch text itself) and runs all three appliers (``run_all``), which also assert
that a refused apply left the target byte-identical and that nothing left a stray
``.orig``/``.rej`` file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from testing.apply_support import (
    ENGINES,
    Run,
    edit_line,
    export,
    numbered,
    patch_of,
    placement,
    pristine,
    run_all,
    side_commit,
    writes,
)
from testing.helpers import MiniFork, make_patch, mini_fork

from forktool.builder import RepoBuilder
from forktool.git import apply_in_directory, run_gnu_patch

APP = "src/app.py"
BASE = numbered(40)
FIXED = edit_line(BASE, "line 20", "line 20 fixed")
P = "0001-fix.patch"


@pytest.fixture
def fork(builder: RepoBuilder) -> MiniFork:
    return mini_fork(builder, {APP: BASE, "README": "readme\n"})


def neighbour(fork: MiniFork, files: dict[str, str | bytes | None]) -> str:
    """A tree next to the pin (what a stale patch was made against)."""
    return side_commit(fork.repo, "v1", writes(files))


def fix_against(fork: MiniFork, base_text: str) -> bytes:
    """The 'line 20' fix, made on a neighbour whose app.py is ``base_text``."""
    base = neighbour(fork, {APP: base_text})
    return patch_of(
        fork.repo, base, writes({APP: edit_line(base_text, "line 20", "line 20 fixed")})
    )


def agree(runs: dict[str, Run], name: str = P) -> tuple[object, ...]:
    """The one verdict every engine reached on ``name`` (asserting they agree)."""
    seen = {engine: placement(runs[engine].verdict(name)) for engine in ENGINES}
    assert seen["verify"] == seen["git"] == seen["patch"], seen
    return seen["verify"]


def exit_codes(runs: dict[str, Run]) -> set[int]:
    return {run.code for run in runs.values()}


# -- the verdict matrix ---------------------------------------------------------------


def test_exact_patch_is_exact_for_every_engine(fork: MiniFork, tmp_path: Path) -> None:
    fork.write({P: patch_of(fork.repo, "v1", writes({APP: FIXED}))})
    runs = run_all(fork, tmp_path)
    assert agree(runs) == ("exact", None, None, None, [{"file": APP, "line": 17, "offset": 0}])
    assert exit_codes(runs) == {0}
    assert runs["verify"].data["round_trip"] is True


def test_line_shift_is_an_offset_with_the_line_it_needed(fork: MiniFork, tmp_path: Path) -> None:
    # Made against a tree with two more lines at the top: on v1 it lands 2 lines higher.
    fork.write({P: fix_against(fork, "new a\nnew b\n" + BASE)})
    runs = run_all(fork, tmp_path)
    assert agree(runs) == ("offset", APP, 1, 11, [{"file": APP, "line": 17, "offset": -2}])
    assert exit_codes(runs) == {1}
    message = str(runs["verify"].verdict(P)["message"])
    assert message == (
        f"{APP}: hunk 1 applies only at offset -2 (line 17) on v1; run 'forktool refresh'"
    )


def from_the_top(fork: MiniFork) -> bytes:
    """A fix to 'line 5' made on a neighbour without v1's first line: its one hunk
    starts at line 1 with three context lines on each side (Debian's bluez ships one,
    on a Makefile that later gained a licence line at the top)."""
    base_text = BASE.split("\n", 1)[1]
    base = neighbour(fork, {APP: base_text})
    patch = patch_of(fork.repo, base, writes({APP: edit_line(base_text, "line 5", "line 5 x")}))
    assert b"@@ -1,7 +1,7 @@" in patch
    return patch


@pytest.mark.parametrize(("rule", "code"), [("exact", 1), ("dpkg", 0)])
def test_a_hunk_from_the_top_moved_down_is_an_offset_for_every_engine(
    fork: MiniFork, tmp_path: Path, rule: str, code: int
) -> None:
    """git alone holds a hunk starting at line 1 to the top of the file; GNU patch looks
    for one with as much context on each side, and finds it a line lower. Every engine
    gives GNU patch's answer, an offset (never fuzz): refused under the exact rule,
    accepted, applied there and reverted under dpkg-source's."""
    fork.write({P: from_the_top(fork)}, extra_config=f"apply_rule: {rule}\n")
    runs = run_all(fork, tmp_path)
    status, file, hunk, _line, hunks = agree(runs)
    assert (status, file, hunk) == ("offset", APP, 1)
    assert [(h["line"], h["offset"]) for h in hunks] == [(2, 1)]  # type: ignore[index]
    assert exit_codes(runs) == {code}
    if rule == "dpkg":
        assert runs["verify"].data["round_trip"] is True


def test_the_series_goes_on_past_a_hunk_moved_from_the_top(fork: MiniFork) -> None:
    """The series' one git call stops at the patch git holds to the top; verify then
    goes on patch by patch, and still proves the round trip."""
    later = patch_of(fork.repo, "v1", writes({APP: edit_line(BASE, "line 30", "line 30 x")}))
    fork.write(
        {P: from_the_top(fork), "0002-later.patch": later}, extra_config="apply_rule: dpkg\n"
    )
    result = fork.cli("verify", "--format", "json")
    assert result.code == 0, result.out
    data = result.json()
    assert [p["status"] for p in data["patches"]] == ["offset", "exact"]
    assert data["ok"] is True and data["round_trip"] is True


def test_fmt_keeps_a_hunk_moved_from_the_top_as_its_maintainers_wrote_it(
    fork: MiniFork,
) -> None:
    """In the maintainers' form a patch the dpkg rule accepts is kept byte for byte: fmt
    places it as verify does (GNU patch's anchors), and replays the kept bytes so."""
    fork.write({P: from_the_top(fork)}, extra_config="patch_form: maintainers\napply_rule: dpkg\n")
    before = (fork.root / "patches" / P).read_bytes()
    result = fork.cli("fmt", "--check")
    assert result.code == 0, result.out + result.err
    assert fork.cli("fmt").code == 0
    assert (fork.root / "patches" / P).read_bytes() == before


def test_a_hunk_from_the_top_with_less_leading_context_stays_at_the_top(
    fork: MiniFork, tmp_path: Path
) -> None:
    """A hunk changing line 1 (no leading context, three trailing) is held to the top by
    GNU patch too: a line added above it is never taken for an offset."""
    base_text = BASE.split("\n", 1)[1]
    base = neighbour(fork, {APP: base_text})
    fork.write(
        {P: patch_of(fork.repo, base, writes({APP: edit_line(base_text, "line 2", "line 2 x")}))},
        extra_config="apply_rule: dpkg\n",
    )
    result = fork.cli("verify", "--format", "json")
    assert result.code == 1
    assert result.json()["patches"][0]["status"] in ("fuzz", "fails")


def test_a_hunk_ending_a_file_is_held_to_its_end_by_every_engine(
    builder: RepoBuilder, tmp_path: Path
) -> None:
    """A hunk with no trailing context ends where its file ended: git and GNU patch both
    hold it to the file's end. A line added after it is never taken for an offset, not
    even by the try without git's anchors, where its lines are still in place."""
    fork = mini_fork(builder, {APP: numbered(10)})
    patch = patch_of(fork.repo, "v1", writes({APP: edit_line(numbered(10), "line 10", "ten")}))
    assert b"@@ -7,4 +7,4 @@" in patch  # three lines before, none after: the file's end
    builder.commit("upstream: longer\n", {APP: numbered(10) + "extra\n"})
    builder.tag("v2")
    fork.pin = "v2"
    fork.write({P: patch}, extra_config="apply_rule: dpkg\n")
    runs = run_all(fork, tmp_path)
    assert exit_codes(runs) == {1}
    for engine in ENGINES:
        assert runs[engine].verdict(P)["status"] in ("fuzz", "fails"), engine


def test_a_hunk_that_ended_its_file_is_refused_once_the_file_goes_on(
    builder: RepoBuilder, tmp_path: Path
) -> None:
    """A hunk with three lines of context before its change and one after was made at
    the file's end. Upstream then added lines after it: its lines are still where the
    header says, and git would apply it there, but GNU patch -F0 holds it to the file's
    end and refuses it, so dpkg-source fails. Under dpkg-source's rule every engine
    refuses it, naming the hunk."""
    fork = mini_fork(builder, {APP: numbered(10)})
    patch = patch_of(fork.repo, "v1", writes({APP: edit_line(numbered(10), "line 9", "nine")}))
    assert b"@@ -6,5 +6,5 @@" in patch  # three lines before, one after: the file's end
    builder.commit("upstream: longer\n", {APP: numbered(15)})
    builder.tag("v2")
    fork.pin = "v2"
    later = patch_of(fork.repo, "v2", writes({APP: edit_line(numbered(15), "line 2", "two")}))
    fork.write({P: patch, "0002-later.patch": later}, extra_config="apply_rule: dpkg\n")
    runs = run_all(fork, tmp_path)
    status, file, hunk, _line, hunks = agree(runs)
    assert (status, file, hunk, hunks) == ("fuzz", APP, 1, [])
    assert exit_codes(runs) == {1}
    verdicts = runs["verify"].patches
    assert "holds it to the file's end, line 15" in str(verdicts[0]["message"])
    assert verdicts[1]["status"] == "not-tried"


def test_allow_offset_accepts_a_shifted_patch_in_verify(fork: MiniFork) -> None:
    fork.write({P: fix_against(fork, "new a\nnew b\n" + BASE)})
    result = fork.cli("verify", "--allow-offset", "--format", "json")
    assert result.code == 0
    assert result.json()["ok"] is True
    assert result.json()["patches"][0]["status"] == "offset"  # type: ignore[index]


@pytest.mark.parametrize("edited", ["line 17", "line 23"], ids=["first", "last"])
def test_edited_outer_context_line_is_fuzz(fork: MiniFork, tmp_path: Path, edited: str) -> None:
    fork.write({P: fix_against(fork, edit_line(BASE, edited, edited + " (changed)"))})
    runs = run_all(fork, tmp_path)
    assert agree(runs) == ("fuzz", APP, 1, 11, [])
    assert exit_codes(runs) == {1}
    assert str(runs["patch"].verdict(P)["message"]).startswith(
        f"{APP}: hunk 1 applies only with reduced context (fuzz) on the target directory"
    )


def test_edited_inner_context_line_fails(fork: MiniFork, tmp_path: Path) -> None:
    fork.write({P: fix_against(fork, edit_line(BASE, "line 19", "line 19 (changed)"))})
    runs = run_all(fork, tmp_path)
    assert agree(runs) == ("fails", APP, 1, 11, [])
    assert runs["verify"].verdict(P)["message"] == (
        f"{APP}: hunk 1 does not apply at line 17 on v1: its lines are not there"
    )


def _wide_fix_against(fork: MiniFork, edited: list[str]) -> bytes:
    """The 'line 20' fix as a ``diff -U5`` hunk (lines 15-25), made on a neighbour
    whose ``edited`` lines differ from the pin's."""
    text = BASE
    for line in edited:
        text = edit_line(text, line, line + " (theirs)")
    base = neighbour(fork, {APP: text})
    return patch_of(
        fork.repo, base, writes({APP: edit_line(text, "line 20", "line 20 fixed")}), "-U5"
    )


@pytest.mark.parametrize(
    ("edited", "status"),
    [(["line 15", "line 16"], "fuzz"), (["line 15", "line 16", "line 17"], "fails")],
    ids=["two-outer-lines", "three-outer-lines"],
)
def test_a_wide_context_hunk_is_fuzz_as_gnu_patch_fuzz_places_it(
    fork: MiniFork, tmp_path: Path, edited: list[str], status: str
) -> None:
    # GNU patch's default fuzz (2, what quilt push uses) ignores two context lines
    # at each end of a hunk and keeps the rest; git's -C1 keeps one line whatever
    # the hunk's width. On a -U5 hunk with three outer lines changed git -C1 still
    # places it and GNU patch does not: every engine says what GNU patch says.
    fork.write({P: _wide_fix_against(fork, edited)})
    probe = tmp_path / "probe"
    (probe / "src").mkdir(parents=True)
    (probe / APP).write_text(BASE)
    patch_file = fork.root / "patches" / P
    gnu, _out = run_gnu_patch(["-p1", "--fuzz=2", "--dry-run", "--batch"], probe, patch_file)
    git = apply_in_directory(
        probe, patch_file, reverse=False, check_with_context=1, purpose="witness"
    )
    assert (gnu == 0, git.ok) == (status == "fuzz", True)  # the case is the one meant
    runs = run_all(fork, tmp_path / "runs")
    assert agree(runs)[:3] == (status, APP, 1)
    assert exit_codes(runs) == {1}


def test_trailing_whitespace_on_a_context_line_fails(fork: MiniFork, tmp_path: Path) -> None:
    # An editor that adds (or strips) trailing blanks makes the context differ:
    # neither engine is allowed to ignore whitespace.
    fork.write({P: fix_against(fork, edit_line(BASE, "line 21", "line 21  "))})
    runs = run_all(fork, tmp_path)
    assert agree(runs) == ("fails", APP, 1, 11, [])


def test_already_applied_patch_fails_and_is_never_reversed(
    builder: RepoBuilder, tmp_path: Path
) -> None:
    builder.commit("upstream: import\n", {APP: BASE})
    before = builder.rev("HEAD")
    builder.commit("upstream: the same fix\n", {APP: FIXED})
    builder.tag("v1")
    fork = MiniFork(builder, "v1")
    fork.write({P: patch_of(builder, before, writes({APP: FIXED}))})
    runs = run_all(fork, tmp_path)
    assert agree(runs) == ("fails", APP, 1, 11, [])
    for engine in ENGINES:
        assert str(runs[engine].verdict(P)["message"]).startswith("already applied: "), engine


def test_new_file_that_already_exists_fails(fork: MiniFork, tmp_path: Path) -> None:
    fork.write({P: patch_of(fork.repo, "v1", writes({"src/x.py": "x\n"}))})
    # The next release adds its own src/x.py, different from the one the patch creates.
    fork.repo.commit("upstream: add x\n", {"src/x.py": "upstream x\n"})
    fork.repo.tag("v2")
    fork.pin = "v2"
    fork.write(fork.patches)
    runs = run_all(fork, tmp_path)
    assert agree(runs) == ("fails", "src/x.py", None, None, [])
    assert runs["verify"].verdict(P)["message"] == (
        "src/x.py: the patch creates it, but it already exists on v2"
    )


def test_deleting_a_missing_file_fails(fork: MiniFork, tmp_path: Path) -> None:
    base = neighbour(fork, {"src/old.py": "old\n"})
    fork.write({P: patch_of(fork.repo, base, writes({"src/old.py": None}))})
    runs = run_all(fork, tmp_path)
    # Its reverse (creating the file) applies exactly: the deletion is in effect already.
    assert agree(runs) == ("fails", "src/old.py", None, None, [])
    assert runs["git"].verdict(P)["message"] == (
        "already applied: the change is present on the target directory "
        f"{(tmp_path / 'target-git').resolve()} (it reverse-applies exactly)"
    )


def test_changing_a_missing_file_fails(fork: MiniFork, tmp_path: Path) -> None:
    base = neighbour(fork, {"src/old.py": "old\n"})
    fork.write({P: patch_of(fork.repo, base, writes({"src/old.py": "new\n"}))})
    runs = run_all(fork, tmp_path)
    assert agree(runs) == ("fails", "src/old.py", None, None, [])
    assert runs["verify"].verdict(P)["message"] == (
        "src/old.py: the patch changes or deletes it, but it does not exist on v1"
    )


def test_two_patches_on_the_same_lines_apply_in_sequence(fork: MiniFork, tmp_path: Path) -> None:
    first = side_commit(fork.repo, "v1", writes({APP: FIXED}))
    again = edit_line(edit_line(FIXED, "line 20 fixed", "line 20 fixed twice"), "line 21", "21")
    second = side_commit(fork.repo, first, writes({APP: again}))
    fork.write({P: export(fork.repo, first), "0002-again.patch": export(fork.repo, second)})
    runs = run_all(fork, tmp_path)
    assert agree(runs)[0] == "exact"
    assert agree(runs, "0002-again.patch")[0] == "exact"
    assert exit_codes(runs) == {0}
    git_target = tmp_path / "target-git" / APP
    assert git_target.read_text() == again
    assert (tmp_path / "target-patch" / APP).read_text() == again


# -- changes GNU patch cannot represent: the git engine applies them ------------------


def _git_only(fork: MiniFork, tmp_path: Path, patch: bytes, message: str) -> dict[str, Run]:
    fork.write({P: patch})
    runs = run_all(fork, tmp_path)
    assert runs["verify"].statuses == ["exact"]
    assert runs["git"].statuses == ["exact"]
    assert runs["patch"].statuses == ["unsupported"]
    assert runs["patch"].verdict(P)["message"] == message
    assert (runs["verify"].code, runs["git"].code, runs["patch"].code) == (0, 0, 1)
    return runs


def test_rename_works_with_git_and_is_unsupported_by_gnu_patch(
    fork: MiniFork, tmp_path: Path
) -> None:
    def rename(root: Path) -> None:
        (root / "README").rename(root / "README.md")

    patch = patch_of(fork.repo, "v1", rename, "-M")
    assert b"rename from README" in patch
    _git_only(
        fork,
        tmp_path,
        patch,
        "README.md: a rename cannot be applied by GNU patch; use --engine git",
    )
    assert (tmp_path / "target-git" / "README.md").read_text() == "readme\n"
    assert not (tmp_path / "target-git" / "README").exists()


def test_mode_change_works_with_every_engine(fork: MiniFork, tmp_path: Path) -> None:
    patch = patch_of(fork.repo, "v1", lambda root: os.chmod(root / APP, 0o755))
    fork.write({P: patch})
    runs = run_all(fork, tmp_path)
    assert {engine: run.statuses for engine, run in runs.items()} == {
        "verify": ["exact"],
        "git": ["exact"],
        "patch": ["exact"],
    }
    assert os.access(tmp_path / "target-git" / APP, os.X_OK)
    assert os.access(tmp_path / "target-patch" / APP, os.X_OK)


def test_symlink_works_with_git_and_is_unsupported_by_gnu_patch(
    fork: MiniFork, tmp_path: Path
) -> None:
    patch = patch_of(fork.repo, "v1", lambda root: os.symlink("app.py", root / "src/link.py"))
    _git_only(
        fork,
        tmp_path,
        patch,
        "src/link.py: a symlink cannot be applied by GNU patch; use --engine git",
    )
    assert os.readlink(tmp_path / "target-git" / "src/link.py") == "app.py"


def test_binary_diff_works_with_git_and_is_unsupported_by_gnu_patch(
    builder: RepoBuilder, tmp_path: Path
) -> None:
    blob = bytes(range(256)) * 8
    fork = mini_fork(builder, {"data.bin": blob})
    patch = patch_of(builder, "v1", writes({"data.bin": blob[:1000] + b"\0changed" + blob[1000:]}))
    assert b"GIT binary patch" in patch
    _git_only(
        fork,
        tmp_path,
        patch,
        "data.bin: a binary diff cannot be applied by GNU patch; use --engine git",
    )
    assert (tmp_path / "target-git" / "data.bin").read_bytes() == (
        blob[:1000] + b"\0changed" + blob[1000:]
    )


# -- quirks of real-world patches, each with a deliberate answer ------------------------

U0_PATCH = b"""Subject: a -U0 patch

--- a/src/app.py
+++ b/src/app.py
@@ -20 +20 @@
-line 20
+line 20 fixed
"""


def test_zero_context_hunk_fails_for_every_engine(fork: MiniFork, tmp_path: Path) -> None:
    fork.write({P: U0_PATCH})
    runs = run_all(fork, tmp_path)
    assert agree(runs) == ("fails", APP, 1, 5, [])
    assert str(runs["verify"].verdict(P)["message"]).startswith(
        f"{APP}: hunk 1 has no context lines, so where it lands cannot be proven"
    )


def test_zero_context_insertion_fails_rather_than_landing_at_the_end(
    fork: MiniFork, tmp_path: Path
) -> None:
    # git would put this at the end of the file (an offset); GNU patch at line 21.
    fork.write({P: U0_PATCH.replace(b"@@ -20 +20 @@\n-line 20\n", b"@@ -20,0 +21 @@\n")})
    runs = run_all(fork, tmp_path)
    assert agree(runs) == ("fails", APP, 1, 5, [])


def test_whole_file_hunk_without_context_is_anchored_at_both_ends(
    builder: RepoBuilder, tmp_path: Path
) -> None:
    # git diff writes no context when every line of a small file changes.
    fork = mini_fork(builder, {"VERSION": "1.0\n"})
    fork.write({P: patch_of(builder, "v1", writes({"VERSION": "1.1\n"}))})
    runs = run_all(fork, tmp_path)
    assert agree(runs) == ("exact", None, None, None, [{"file": "VERSION", "line": 1, "offset": 0}])
    # The same hunk on a VERSION file with a second line: GNU patch alone would apply
    # it at line 1; both engines hold it to the whole file and refuse.
    builder.commit("upstream: two lines\n", {"VERSION": "1.0\nextra\n"})
    builder.tag("v2")
    fork.pin = "v2"
    fork.write(fork.patches)
    runs = run_all(fork, tmp_path / "v2")
    assert agree(runs) == ("fails", "VERSION", 1, 11, [])
    assert runs["verify"].verdict(P)["message"] == (
        "VERSION: hunk 1 has no context and starts at line 1, so it must match the whole "
        "file (1 line), which differs on v2 (GNU patch, so quilt and dpkg-source, would "
        "change the file's first lines and keep the rest)"
    )


def test_a_file_written_whole_onto_one_that_exists_fails_in_every_engine(
    builder: RepoBuilder, tmp_path: Path
) -> None:
    # A patch that created a file, written without /dev/null (one hunk "-0,0"), on
    # a release that now ships the file (Debian's zsh: completion-dscverify.diff
    # after upstream took it). GNU patch puts the lines above the file's own, so the
    # file ends up twice over; every engine refuses, and says why.
    fork = mini_fork(builder, {"_comp": "#compdef x\nupstream\n"})
    fork.write(
        {
            P: b"Subject: add a completion\n\n--- a/_comp\n+++ b/_comp\n"
            b"@@ -0,0 +1,2 @@\n+#compdef x\n+ours\n"
        }
    )
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "_comp").write_text("#compdef x\nupstream\n")
    gnu, _out = run_gnu_patch(
        ["-p1", "-F0", "--batch", "--forward"], probe, fork.root / "patches" / P
    )
    assert (gnu, (probe / "_comp").read_text()) == (0, "#compdef x\nours\n#compdef x\nupstream\n")
    runs = run_all(fork, tmp_path / "runs")
    assert agree(runs)[:3] == ("fails", "_comp", 1)
    assert runs["verify"].verdict(P)["message"] == (
        "_comp: the patch writes the whole file (2 lines, no context), but it already "
        "exists on v1: drop the patch if the file now comes from upstream, else refresh "
        "it (GNU patch, so quilt and dpkg-source, would put the lines above the file's own)"
    )


def test_hunk_counts_contradicting_the_body_are_malformed(fork: MiniFork, tmp_path: Path) -> None:
    good = patch_of(fork.repo, "v1", writes({APP: FIXED}))
    fork.write({P: good.replace(b"@@ -17,7 +17,7 @@", b"@@ -17,6 +17,7 @@")})
    runs = run_all(fork, tmp_path)
    status, _file, _hunk, line, hunks = agree(runs)
    assert (status, hunks) == ("malformed", [])
    assert runs["verify"].verdict(P)["message"] == (
        "hunk 1 of 'src/app.py': more context lines than the header counts"
    )
    assert line == 19  # the context line the header did not count


def test_hunk_positions_contradicting_each_other_are_malformed(
    fork: MiniFork, tmp_path: Path
) -> None:
    two = edit_line(FIXED, "line 35", "line 35 fixed")
    good = patch_of(fork.repo, "v1", writes({APP: two}))
    assert b"@@ -32,7 +32,7 @@" in good
    fork.write({P: good.replace(b"@@ -32,7 +32,7 @@", b"@@ -32,7 +30,7 @@")})
    runs = run_all(fork, tmp_path)
    assert agree(runs) == ("malformed", APP, 2, 20, [])
    assert runs["verify"].verdict(P)["message"] == (
        f"{APP}: hunk 2 header says -32 +30, but the hunks before it shift lines by +0; "
        "the hunk headers were edited by hand: regenerate the patch"
    )


def test_a_minus_line_naming_another_file_than_diff_git_is_malformed(
    fork: MiniFork, tmp_path: Path
) -> None:
    """Debian's grub2 ships one: 'diff --git a/util/mkimage.c ...' over '--- a/util/mkimage'.
    git reads a rename the patch never states, GNU patch patches whichever name exists:
    the same bytes mean two things, so no engine applies it."""
    good = patch_of(fork.repo, "v1", writes({APP: FIXED}))
    fork.write({P: good.replace(b"--- a/src/app.py", b"--- a/src/app")})
    runs = run_all(fork, tmp_path)
    status, *_ = agree(runs)
    assert status == "malformed"
    assert (
        runs["verify"]
        .verdict(P)["message"]
        .startswith(
            "'src/app.py': its '--- a/src/app' line names another file than its 'diff --git' line"
        )
    )


def test_a_rename_line_naming_another_file_than_diff_git_is_malformed(
    fork: MiniFork, tmp_path: Path
) -> None:
    """qemu's v7.2.13.diff: 'diff --git a/tests/.../fedora-35.yml b/...fedora-37.yml' over
    'rename from lcitool/facts/...' (a path inside a submodule). git refuses the patch
    ("inconsistent old filename"), GNU patch follows the rename line: malformed in every
    engine, naming the line, instead of git's raw message as a hunk failure."""
    fork.write({P: b"diff --git a/src/app.py b/src/moved.py\n"
                   b"similarity index 100%\n"
                   b"rename from lib/app.py\n"
                   b"rename to src/moved.py\n"})  # fmt: skip
    runs = run_all(fork, tmp_path)
    status, *_ = agree(runs)
    assert status == "malformed"
    assert runs["verify"].verdict(P)["message"] == (
        "'src/moved.py': its 'rename from lib/app.py' line names another file than its "
        "'diff --git' line (a/src/app.py): git refuses the patch, GNU patch follows the "
        "rename line; make the names agree"
    )


def test_no_newline_at_end_of_file_is_exact(builder: RepoBuilder, tmp_path: Path) -> None:
    fork = mini_fork(builder, {"tail.txt": "a\nb\nc"})
    patch = patch_of(builder, "v1", writes({"tail.txt": "a\nb\nC"}))
    assert b"\\ No newline at end of file" in patch
    fork.write({P: patch})
    runs = run_all(fork, tmp_path)
    assert agree(runs)[0] == "exact"
    for engine in ("git", "patch"):
        assert (tmp_path / f"target-{engine}" / "tail.txt").read_bytes() == b"a\nb\nC"


def test_crlf_file_is_matched_byte_for_byte(builder: RepoBuilder, tmp_path: Path) -> None:
    crlf = numbered(10).replace("\n", "\r\n")
    fork = mini_fork(builder, {"win.txt": crlf})
    changed = crlf.replace("line 5\r\n", "line five\r\n")
    fork.write({P: patch_of(builder, "v1", writes({"win.txt": changed}))})
    runs = run_all(fork, tmp_path)
    assert agree(runs)[0] == "exact"
    for engine in ("git", "patch"):
        assert (tmp_path / f"target-{engine}" / "win.txt").read_bytes() == changed.encode()


def test_crlf_patch_on_an_lf_file_fails(builder: RepoBuilder, tmp_path: Path) -> None:
    fork = mini_fork(builder, {"win.txt": numbered(10)})
    crlf = numbered(10).replace("\n", "\r\n")
    base = side_commit(builder, "v1", writes({"win.txt": crlf}))
    patch = patch_of(builder, base, writes({"win.txt": crlf.replace("line 5\r", "line five\r")}))
    fork.write({P: patch})
    runs = run_all(fork, tmp_path)
    assert agree(runs) == ("fails", "win.txt", 1, 11, [])


def test_a_patch_file_saved_with_cr_lf_throughout_fails_in_every_engine(
    fork: MiniFork, tmp_path: Path
) -> None:
    """A patch file converted wholesale to CR LF (saved on Windows): GNU patch strips the
    CRs by its own heuristic, git matches them. Every engine refuses it alike (GNU patch
    runs with --binary; it was 'fuzz' in verify and exact with --engine patch) and says
    what to do."""
    patch = fix_against(fork, BASE).replace(b"\n", b"\r\n")
    fork.write({P: patch})
    runs = run_all(fork, tmp_path)
    status, *_ = agree(runs)
    assert status == "fails"
    message = fork.cli("verify", "--format", "json").json()["patches"][0]["message"]  # type: ignore[index]
    assert message.endswith("convert it to LF line endings")
    assert "ends every line with CR LF" in message


QUILT_PATCH = b"""Description: quilt-style plain diff
Author: Someone <someone@example.org>

Index: pkg/src/app.py
===================================================================
--- pkg.orig/src/app.py\t2024-01-01 00:00:00.000000000 +0000
+++ pkg/src/app.py\t2024-01-02 00:00:00.000000000 +0000
@@ -17,7 +17,7 @@
 line 17
 line 18
 line 19
-line 20
+line 20 fixed
 line 21
 line 22
 line 23
"""


def test_quilt_style_prefixes_are_stripped_like_a_and_b(fork: MiniFork, tmp_path: Path) -> None:
    fork.write({P: QUILT_PATCH})
    runs = run_all(fork, tmp_path)
    assert agree(runs) == ("exact", None, None, None, [{"file": APP, "line": 17, "offset": 0}])
    for engine in ("git", "patch"):
        assert (tmp_path / f"target-{engine}" / APP).read_text() == FIXED


def test_patches_in_subdirectories_of_patches_apply(fork: MiniFork, tmp_path: Path) -> None:
    name = "upstream/fixes/0001-fix.patch"
    fork.write({name: patch_of(fork.repo, "v1", writes({APP: FIXED}))})
    runs = run_all(fork, tmp_path)
    assert agree(runs, name)[0] == "exact"
    assert exit_codes(runs) == {0}


def test_pristine_target_is_the_pinned_tree(fork: MiniFork, tmp_path: Path) -> None:
    target = pristine(fork, tmp_path / "t")
    assert (target / APP).read_text() == BASE
    assert not (target / ".git").exists()


# -- two file diffs for one path --------------------------------------------------------


def _diff(path: str, old: str | None, new: str | None) -> bytes:
    """A git diff of ``path`` from ``old`` to ``new`` text (None: absent)."""
    head = f"diff --git a/{path} b/{path}\n"
    if old is None:
        head += "new file mode 100644\n"
    elif new is None:
        head += "deleted file mode 100644\n"
    old_lines = (old or "").splitlines()
    new_lines = (new or "").splitlines()
    head += f"--- {'/dev/null' if old is None else 'a/' + path}\n"
    head += f"+++ {'/dev/null' if new is None else 'b/' + path}\n"
    start_old = 1 if old_lines else 0
    start_new = 1 if new_lines else 0
    head += f"@@ -{start_old},{len(old_lines)} +{start_new},{len(new_lines)} @@\n"
    body = "".join(f"-{line}\n" for line in old_lines) + "".join(f"+{line}\n" for line in new_lines)
    return (head + body).encode()


@pytest.mark.parametrize(
    ("first", "second", "what"),
    [
        ((None, "new\n"), ("new\n", None), "the first created it and the second deleted it"),
        (("readme\n", None), (None, "again\n"), "the first deleted it and the second created it"),
    ],
)
def test_one_path_created_and_deleted_in_one_patch_is_malformed_for_every_engine(
    fork: MiniFork,
    tmp_path: Path,
    first: tuple[str | None, str | None],
    second: tuple[str | None, str | None],
    what: str,
) -> None:
    path = "README" if first[0] is not None else "NEW"
    fork.write({P: _diff(path, *first) + _diff(path, *second)})
    runs = run_all(fork, tmp_path)
    assert agree(runs) == ("malformed", path, None, 7, [])  # the second diff's line
    assert exit_codes(runs) == {1}
    message = str(runs["patch"].verdict(P)["message"])
    assert message.startswith(f"{path}: the patch has two file diffs for it (lines 1 and ")
    assert what in message


def test_one_file_modified_in_two_diffs_gives_one_tree_in_every_engine(
    fork: MiniFork, tmp_path: Path
) -> None:
    # A multi-commit patch (two commits' diffs, one after the other) of one file.
    first = side_commit(fork.repo, "v1", writes({APP: FIXED}))
    again = edit_line(FIXED, "line 30", "line 30 fixed")
    second = side_commit(fork.repo, first, writes({APP: again}))
    one, two = export(fork.repo, first), export(fork.repo, second)
    tail = two[two.index(b"diff --git ") :]
    fork.write({P: one + tail})  # no signature: the second diff follows the first
    runs = run_all(fork, tmp_path)
    assert [r.statuses for r in runs.values()] == [["exact"]] * 3, runs["verify"].patches
    assert exit_codes(runs) == {0}
    for engine in ("git", "patch"):
        assert (tmp_path / f"target-{engine}" / APP).read_text() == again


def test_a_file_created_then_changed_in_one_patch_goes_back_whole(
    fork: MiniFork, tmp_path: Path
) -> None:
    """Two commits in one patch, the first creating a file and the second changing it
    (Debian's samba ships one): ``git apply -R`` of the whole patch leaves the created
    file behind, so such a patch is taken back one file diff at a time, the last first:
    verify's round trip holds, and so does ``apply --verify`` of a directory target
    with either engine."""
    created = "new 1\nnew 2\nnew 3\nnew 4\n"
    first = side_commit(fork.repo, "v1", writes({"src/new.py": created}))
    second = side_commit(fork.repo, first, writes({"src/new.py": created.replace("new 3", "NEW")}))
    one, two = export(fork.repo, first), export(fork.repo, second)
    fork.write({P: one + two[two.index(b"diff --git ") :]})
    runs = run_all(fork, tmp_path)  # each directory target then passes apply --verify
    assert [r.statuses for r in runs.values()] == [["exact"]] * 3
    assert exit_codes(runs) == {0}
    assert runs["verify"].data["round_trip"] is True


PLAIN_DELETE = b"""Description: drop the example script
--- a/run.sh
+++ /dev/null
@@ -1,3 +0,0 @@
-#!/bin/sh
-echo 1
-echo 2
"""


def verified_alone(fork: MiniFork, patch: bytes, rule: str, code: int) -> dict[str, Any]:
    """``verify --format json`` of ``patch`` alone under ``rule``: it exits ``code``, the
    patch itself applies exactly, and the JSON is returned (the round trip is the
    caller's to check)."""
    fork.write({P: patch}, extra_config=f"apply_rule: {rule}\n")
    result = fork.cli("verify", "--format", "json")
    assert result.code == code, result.out
    data = result.json()
    assert data["patches"][0]["status"] == "exact"
    return data


@pytest.mark.parametrize(("rule", "code"), [("exact", 1), ("dpkg", 0)])
def test_a_plain_diff_deleting_an_executable_cannot_give_its_mode_back(
    builder: RepoBuilder, rule: str, code: int
) -> None:
    """A plain diff deleting a file carries no mode, so the revert brings the file back
    as 100644 (Debian's dovecot deletes its decode2text.sh so). The round trip names
    the path and why; under dpkg-source's rule (quilt restores the file from its
    backup, not from the diff) that alone is accepted, and the patch's message says so."""
    fork = mini_fork(builder, {APP: BASE})
    builder.commit("upstream: a script\n", {"run.sh": "#!/bin/sh\necho 1\necho 2\n"})
    os.chmod(fork.root / "run.sh", 0o755)
    builder.commit("upstream: make it executable\n")
    builder.tag("v2")
    fork.pin = "v2"
    data = verified_alone(fork, PLAIN_DELETE, rule, code)
    if rule == "exact":
        assert data["round_trip"] is False
        assert data["message"] == (
            "reverting the series did not restore the base tree exactly: run.sh comes back "
            f"with mode 100644, not 100755 ({P} deletes it with a plain diff, which carries "
            "no mode)"
        )
        text = fork.cli("verify")
        assert "FAILED: reverting the series did not restore the base tree exactly: run.sh" in (
            text.out
        )
    else:
        assert data["round_trip"] is True and "message" not in data
        assert "brings run.sh back without the mode it had" in data["patches"][0]["message"]


PLAIN_CREATE = b"""Create a file with a plain diff (no /dev/null), as some Debian patches do.

--- a/NOTES
+++ b/NOTES
@@ -0,0 +1,2 @@
+first note
+second note
"""


@pytest.mark.parametrize(("rule", "code"), [("exact", 1), ("dpkg", 0)])
def test_a_plain_diff_creating_a_file_leaves_it_empty_when_taken_back(
    builder: RepoBuilder, rule: str, code: int
) -> None:
    """A plain diff from ``-0,0`` onto a path the tree lacks creates the file (GNU patch
    and git alike), but nothing in it says the file did not exist: ``git apply -R``
    leaves it behind empty. dpkg-source unapplies with ``patch -E``, which removes
    it, so under its rule that alone is accepted and the patch's message says so;
    under the exact rule the round trip fails and says why."""
    fork = mini_fork(builder, {APP: BASE})
    data = verified_alone(fork, PLAIN_CREATE, rule, code)
    if rule == "exact":
        assert data["round_trip"] is False
        assert data["message"] == (
            "reverting the series did not restore the base tree exactly: NOTES is left "
            f"behind, empty ({P} creates it with a plain diff, '--- a/...' rather than "
            "'--- /dev/null', so git apply -R empties it but cannot know to remove it)"
        )
    else:
        assert data["round_trip"] is True and "message" not in data
        assert data["patches"][0]["message"] == (
            "its revert leaves NOTES behind empty (a plain diff creates it, not from "
            "/dev/null; dpkg-source unapplies with patch -E, which removes it); accepted "
            "(dpkg rule)"
        )


def test_accepted_offsets_are_not_listed_as_failures(fork: MiniFork) -> None:
    """Under dpkg-source's rule an offset is accepted: the summary of a failing series
    names the patch that fails, not the ones accepted before it."""
    broken = fix_against(fork, edit_line(BASE, "line 21", "line 21 elsewhere"))
    fork.write(
        {P: from_the_top(fork), "0002-broken.patch": broken}, extra_config="apply_rule: dpkg\n"
    )
    result = fork.cli("verify")
    assert result.code == 1
    summary = [line for line in result.out.splitlines() if line.startswith("FAILED")]
    assert summary == ["FAILED: 1 patch(es) do not apply exactly: 0002-broken.patch:11"], summary


def test_a_change_present_at_other_lines_is_said_by_verify_and_forecast(
    builder: RepoBuilder,
) -> None:
    """v2 made the patch's change itself and moved it 20 lines down: the patch fails
    forward (its old lines are gone) and reverse-applies only at an offset. verify
    --base and forecast say the change looks present, moved, as absorbed's evidence
    does and as GNU patch says "Reversed (or previously applied)", not only that its
    lines are not there."""
    fork = mini_fork(builder, {APP: BASE})
    fixed = edit_line(BASE, "line 10", "line 10 fixed")
    patch = make_patch(builder, "v1", {APP: fixed}, "fix ten")
    builder.commit("upstream: a header, and the fix\n", {APP: numbered(20, "head") + fixed})
    builder.tag("v2")
    fork.write({P: patch}, extra_config="release_tags: 'v*'\n")
    moved = "it reverse-applies only at an offset: the change looks present, moved"
    verdict = fork.cli("verify", "--base", "v2", "--format", "json").json()["patches"][0]  # type: ignore[index]
    assert verdict["status"] == "fails"
    assert verdict["message"].endswith(f"its lines are not there; {moved}")
    cast = fork.cli("forecast", "--no-fetch", "--tags", "v2", "--format", "json").json()
    cell = cast["patches"][0]["cells"][0]  # type: ignore[index]
    assert cell["apply"] == "conflict" and cell["message"] == verdict["message"]
