"""GNU patch's anchors, followed along a series (forktool.engine.apply.anchors)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from testing.apply_support import edit_line, numbered, patch_of, side_commit, writes
from testing.helpers import mini_fork

from forktool.builder import RepoBuilder
from forktool.engine.apply.anchors import context_sides, first_past_the_end
from forktool.engine.apply.verdict import HunkPlacement
from forktool.git import run_gnu_patch
from forktool.model.patchfile import Hunk


def hunk(lines: tuple[str, ...]) -> Hunk:
    return Hunk(old_start=1, old_count=0, new_start=1, new_count=0, section="", line=1, lines=lines)


def test_context_sides_count_the_lines_around_the_change() -> None:
    assert context_sides(hunk((" a", " b", "-c", "+d", " e"))) == (2, 1)
    assert context_sides(hunk(("-c", "+d", "\\\\ No newline at end of file"))) == (0, 0)
    assert context_sides(hunk((" a", "", "-c"))) == (2, 0)  # an empty line is context


def test_a_file_is_followed_through_the_series_to_its_end() -> None:
    # f has 10 lines; patch 0 adds two; patch 1's end hunk (lines 8-12) ends it exactly.
    counts = {"f": 10}
    grows = ((), (("f", "f", 2),), ())
    ends_ok = (((0, 1, "f", 8, 5),), (("f", "f", 0),), (HunkPlacement("f", 8, 0, 1),))
    assert first_past_the_end([grows, ends_ok], lambda paths: dict(counts)) is None
    # the same hunk where the file did not grow: it stops two lines short of the end
    assert first_past_the_end([ends_ok], lambda paths: dict(counts)) == (0, "f", 1, 10)
    # an offset counts: lines 10-14 end a file of 14 lines
    moved = (((0, 1, "f", 8, 5),), (("f", "f", 0),), (HunkPlacement("f", 10, 2, 1),))
    assert first_past_the_end([moved], lambda paths: {"f": 14}) is None


def test_created_and_renamed_files_carry_their_counts() -> None:
    created = ((), ((None, "g", 6),), ())
    renamed = ((), (("g", "h", 0),), ())
    ends_h = (((0, 1, "h", 3, 4),), (("h", "h", 0),), ())
    assert first_past_the_end([created, renamed, ends_h], lambda paths: {}) is None
    assert first_past_the_end([created, ends_h], lambda paths: {}) is None  # h unknown: not held


def test_nothing_is_asked_when_no_hunk_is_held_to_an_end() -> None:
    def refuse(paths: list[str]) -> dict[str, int]:
        raise AssertionError("the base tree was read for nothing")

    assert first_past_the_end([((), (("f", "f", 1),), ())], refuse) is None


def test_a_patch_with_two_diffs_of_one_path_is_not_held() -> None:
    # Debian's samba: one patch of several commits changes a file twice; git numbers
    # each diff's hunks from 1, so whose placement is whose cannot be told.
    twice = (((1, 1, "f", 8, 5),), (("f", "f", 0), ("f", "f", 0)), ())
    assert first_past_the_end([twice], lambda paths: {"f": 30}) is None
    # one diff per path: each end hunk is checked when its own diff comes
    once = (((1, 1, "g", 8, 5),), (("f", "f", 3), ("g", "g", 0)), ())
    assert first_past_the_end([once], lambda paths: {"f": 30, "g": 30}) == (0, "g", 1, 30)


# -- against GNU patch itself ---------------------------------------------------------------

EDITS = st.tuples(
    st.sampled_from(["top", "bottom", "middle"]), st.integers(0, 40), st.integers(100, 999)
)


def _shifted(lines: list[str], edits: list[tuple[str, int, int]], mark: str) -> list[str]:
    out = list(lines)
    for where, at, n in edits:
        index = {"top": 0, "bottom": len(out), "middle": at % (len(out) + 1)}[where]
        out.insert(index, f"{mark}{n}")
    return out


def against_gnu_patch(examples: int) -> settings:
    """Hypothesis settings for a test that builds a real fork and runs GNU patch."""
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


@against_gnu_patch(30)
@given(
    size=st.integers(3, 14),
    made_on=st.lists(EDITS, max_size=2),
    pinned=st.lists(EDITS, min_size=1, max_size=2),
    change=st.tuples(st.sampled_from(["edit", "delete", "insert"]), st.integers(0, 40)),
)
def test_verify_under_the_dpkg_rule_answers_as_gnu_patch_does(
    tmp_path_factory: pytest.TempPathFactory,
    size: int,
    made_on: list[tuple[str, int, int]],
    pinned: list[tuple[str, int, int]],
    change: tuple[str, int],
) -> None:
    """A one-line change made on one neighbour of a small file, verified on another
    (lines added at the top, the bottom or in between on either side): verify under
    dpkg-source's rule accepts it exactly when GNU patch -F0 --forward (as dpkg-source
    runs it) does, with the same exact or offset answer. Before GNU patch's anchors
    were followed, 13 of 150 such cases differed (exact where GNU patch refuses, fuzz
    where it finds an offset)."""
    root = tmp_path_factory.mktemp("gnu")
    base = [f"line {n}" for n in range(1, size + 1)]
    target, theirs = _shifted(base, pinned, "pin "), _shifted(base, made_on, "made ")
    repo = RepoBuilder.init(root / "repo")
    fork = mini_fork(repo, {"f": "\n".join(target) + "\n"})
    kind, at = change
    changed = list(theirs)
    at %= len(changed)
    if kind == "edit":
        changed[at] += " changed"
    elif kind == "delete" and len(changed) > 1:
        del changed[at]
    else:
        changed.insert(at, "inserted")
    side = side_commit(repo, "v1", writes({"f": "\n".join(theirs) + "\n"}))
    patch = patch_of(repo, side, writes({"f": "\n".join(changed) + "\n"}))
    fork.write({"0001-x.patch": patch}, extra_config="apply_rule: dpkg\n")
    status = fork.cli("verify", "--format", "json").json()["patches"][0]["status"]
    probe = root / "probe"
    probe.mkdir()
    (probe / "f").write_text("\n".join(target) + "\n")
    code, out = run_gnu_patch(
        ["-p1", "-F0", "--dry-run", "--batch", "--forward"],
        probe,
        fork.root / "patches" / "0001-x.patch",
    )
    gnu = ("offset" if "(offset" in out else "exact") if code == 0 else "refused"
    assert {"exact": "exact", "offset": "offset"}.get(status, "refused") == gnu, (status, out)


@against_gnu_patch(25)
@given(
    size=st.integers(6, 20),
    width=st.integers(3, 6),
    at=st.integers(0, 99),
    edited=st.sets(st.integers(-6, 6), max_size=4),
    above=st.integers(0, 2),
)
def test_fuzz_or_fails_is_what_gnu_patch_at_its_default_fuzz_says(
    tmp_path_factory: pytest.TempPathFactory,
    size: int,
    width: int,
    at: int,
    edited: set[int],
    above: int,
) -> None:
    """One line changed with ``width`` lines of context (``diff -U3`` to ``-U6``),
    verified on a pin where lines near it differ and ``above`` lines were added at
    the top: verify under dpkg-source's rule says ``exact`` or ``offset`` exactly when
    GNU patch -F0 places the patch, ``fuzz`` exactly when only its default fuzz 2
    does (what quilt push accepts), and ``fails`` otherwise. git's -C1, which decided
    ``fuzz`` before, keeps one context line where fuzz 2 keeps ``width`` - 2."""
    root = tmp_path_factory.mktemp("fuzz")
    base = [f"line {n}" for n in range(1, size + 1)]
    at %= size
    pinned = [
        f"{line} (pinned)" if index - at in edited else line for index, line in enumerate(base)
    ]
    pinned = [f"top {n}" for n in range(above)] + pinned
    repo = RepoBuilder.init(root / "repo")
    fork = mini_fork(repo, {"f": "\n".join(pinned) + "\n"})
    changed = list(base)
    changed[at] += " changed"
    side = side_commit(repo, "v1", writes({"f": "\n".join(base) + "\n"}))
    patch = patch_of(repo, side, writes({"f": "\n".join(changed) + "\n"}), f"-U{width}")
    fork.write({"0001-x.patch": patch}, extra_config="apply_rule: dpkg\n")
    status = fork.cli("verify", "--format", "json").json()["patches"][0]["status"]
    probe = root / "probe"
    probe.mkdir()
    (probe / "f").write_text("\n".join(pinned) + "\n")

    def gnu(fuzz: int) -> tuple[int, str]:
        flags = ["-p1", f"-F{fuzz}", "--dry-run", "--batch", "--forward"]
        return run_gnu_patch(flags, probe, fork.root / "patches" / "0001-x.patch")

    code, out = gnu(0)
    if code == 0:
        expected = "offset" if "(offset" in out else "exact"
    else:
        expected = "fuzz" if gnu(2)[0] == 0 else "fails"
    assert status == expected, (status, out)


def test_keep_going_holds_the_end_anchors_after_a_failure_and_goes_on_without(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Under dpkg-source's rule with --keep-going, a patch after a failure whose hunk
    ended its file (GNU patch -F0 holds it there) is refused although git places it,
    and the patches after it are tried again without it: one that builds on its change
    then fails, as GNU patch applied in turn (each failure left out) says."""
    root = tmp_path_factory.mktemp("keep")
    app, ten, fifteen = "app.txt", numbered(10), numbered(15)
    repo = RepoBuilder.init(root / "repo")
    fork = mini_fork(repo, {app: ten, "other.txt": "a\nb\nc\n"})
    broken = patch_of(repo, "v1", writes({"other.txt": "A\nb\nc\n"}))
    at_the_end = patch_of(repo, "v1", writes({app: edit_line(ten, "line 9", "nine")}))
    assert b"@@ -6,5 +6,5 @@" in at_the_end  # three lines before its change, one after
    repo.commit("upstream: longer\n", {app: fifteen, "other.txt": "x\ny\nz\n"})
    repo.tag("v2")
    nine = side_commit(repo, "v2", writes({app: edit_line(fifteen, "line 9", "nine")}))
    builds_on = patch_of(repo, nine, writes({app: edit_line(fifteen, "line 9", "NINE")}))
    apart = patch_of(repo, "v2", writes({app: edit_line(fifteen, "line 2", "two")}))
    fork.pin = "v2"
    names = ["0001-broken.patch", "0002-end.patch", "0003-builds-on.patch", "0004-apart.patch"]
    fork.write(
        dict(zip(names, [broken, at_the_end, builds_on, apart], strict=True)),
        extra_config="apply_rule: dpkg\n",
    )
    result = fork.cli("verify", "--keep-going", "--format", "json")
    assert result.code == 1
    seen = [(p["status"], p.get("without", [])) for p in result.json()["patches"]]
    assert seen == [
        ("fails", []),
        ("fuzz", names[:1]),
        ("fails", names[:2]),
        ("exact", names[:3]),
    ]
    # GNU patch -F0 in turn, each patch that fails left out, says the same
    probe = root / "probe"
    probe.mkdir()
    (probe / app).write_text(fifteen)
    (probe / "other.txt").write_text("x\ny\nz\n")
    gnu = [
        run_gnu_patch(
            ["-p1", "-F0", "--batch", "--forward", "--reject-file=-", "--no-backup-if-mismatch"],
            probe,
            fork.root / "patches" / name,
        )[0]
        for name in names
    ]
    assert [code == 0 for code in gnu] == [False, False, False, True]
