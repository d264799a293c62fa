"""Where a hunk must land: git's anchors and GNU patch's differ.

git anchors a hunk whose old side starts at line 1 to the top of the file, and a hunk
with no trailing context to its end. GNU patch at fuzz 0 (so quilt and dpkg-source)
anchors a hunk to the top only when it starts at line 1 with less leading than
trailing context, and to the end any hunk with less trailing than leading context
(its diff ended with the file); every other hunk it looks for above and below.

So a hunk with as much context on each side that starts at line 1 is refused by git
once a line was added above it, and GNU patch applies it at an offset (Debian's bluez:
a licence line added at the top of ``Makefile.obexd``). Such a patch is tried again
without git's anchors (``git apply --unidiff-zero``, every context line still
matching) and its placements stand when GNU patch's own anchors hold: the verdict is
then the one GNU patch gives, an offset, never fuzz. A hunk with no context at all
that removes lines (accepted under dpkg-source's rule only) is placed by those lines:
git holds it to the file's end, GNU patch looks for them.
"""

from __future__ import annotations

from collections.abc import Callable

from forktool.engine.apply.applier_output import diff_for, hunk_by_number
from forktool.engine.apply.precheck import removes_lines, whole_file_hunk
from forktool.engine.apply.verdict import Attempt, applies_unfuzzed
from forktool.model.patchfile import Hunk, PatchFile


def context_sides(hunk: Hunk) -> tuple[int, int]:
    """(leading, trailing): the context lines before the hunk's first change and after
    its last, as GNU patch counts them (a ``\\`` line is not a line of the file)."""
    kinds = [line[:1] for line in hunk.lines if line[:1] != "\\"]
    changed = [i for i, kind in enumerate(kinds) if kind in ("+", "-")]
    if not changed:
        return len(kinds), 0
    return changed[0], len(kinds) - 1 - changed[-1]


def gnu_anchors_hold(
    parsed: PatchFile,
    attempt: Attempt,
    lines_of: Callable[[str], int | None],
    reverse: bool = False,
) -> bool:
    """Whether GNU patch at fuzz 0 would place every hunk where ``attempt`` (applied
    without git's anchors, backwards with ``reverse``) did: a hunk GNU anchors to the
    top did not move, and one it anchors to the end ends on the file's last line
    (``lines_of``: how many lines a file has before the patch is applied; None when
    that cannot be told)."""
    if not applies_unfuzzed(attempt):
        return False
    for placement in attempt.placements:
        diff = diff_for(parsed, placement.file)
        hunk = hunk_by_number(diff, placement.hunk)
        if diff is None or hunk is None:
            return False
        if diff.is_new or diff.is_deleted:
            continue  # a whole file: GNU patch creates or removes it as git does
        leading, trailing = context_sides(hunk)
        if leading == trailing == 0 and (whole_file_hunk(diff, hunk) or not removes_lines(hunk)):
            return False  # held to git's anchors (a whole file), or nothing proves a place
        start, count = (
            (hunk.new_start, hunk.new_count) if reverse else (hunk.old_start, hunk.old_count)
        )
        if leading < trailing and start <= 1 and placement.offset:
            return False
        if trailing < leading:
            if start + placement.offset + count - 1 != lines_of(placement.file):
                return False
    return True


def line_count(data: bytes) -> int:
    """Lines in a file's bytes, a last line without its newline included."""
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
