"""GNU patch's anchors, followed along a series (forktool.engine.apply.anchors)."""

from __future__ import annotations

from forktool.engine.apply.anchors import context_sides, first_past_the_end
from forktool.engine.apply.verdict import HunkPlacement
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
