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

The other way round, git applies a hunk with less context after its change than before
wherever its lines are, and GNU patch only at the file's end: under dpkg-source's rule
each file's line count is followed along the series (:func:`first_past_the_end`), and
such a hunk short of the end is refused as GNU patch refuses it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from forktool.engine.apply.applier_output import diff_for, hunk_by_number
from forktool.engine.apply.precheck import removes_lines, whole_file_hunk
from forktool.engine.apply.verdict import Attempt, HunkPlacement, PatchVerdict, applies_unfuzzed
from forktool.fork import Patch
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
            total = lines_of(placement.file)
            if total is None or _ends_short(start, placement.offset, count, total):
                return False
    return True


def _ends_short(start: int, offset: int, count: int, total: int) -> bool:
    """Whether a hunk of ``count`` old lines from ``start``, moved by ``offset``, does not
    end on the last of its file's ``total`` lines."""
    return start + offset + count - 1 != total


# A hunk GNU patch holds to its file's end, less trailing context than leading (git
# holds only a hunk with none): its file diff's number in the patch, its own number,
# the path its lines are counted in (the old side), its old start and old count.
EndHunk = tuple[int, int, str, int, int]
# Each file diff's effect on line counts: old path, new path (None for /dev/null),
# and the lines it adds less the lines it removes.
LineChange = tuple[str | None, str | None, int]


def end_hunks(parsed: PatchFile) -> tuple[EndHunk, ...]:
    """The hunks of ``parsed`` GNU patch holds to the end of their file, but git does not."""
    found = []
    for position, diff in enumerate(parsed.files):
        if diff.is_new or diff.is_deleted or diff.old_path is None:
            continue
        for number, hunk in enumerate(diff.hunks, start=1):
            leading, trailing = context_sides(hunk)
            if 0 < trailing < leading:
                found.append((position, number, diff.old_path, hunk.old_start, hunk.old_count))
    return tuple(found)


def line_changes(parsed: PatchFile) -> tuple[LineChange, ...]:
    return tuple(
        (diff.old_path, diff.new_path, sum(h.new_count - h.old_count for h in diff.hunks))
        for diff in parsed.files
    )


def first_past_the_end(
    series: Sequence[tuple[tuple[EndHunk, ...], tuple[LineChange, ...], Sequence[HunkPlacement]]],
    base_lines: Callable[[list[str]], dict[str, int]],
) -> tuple[int, str, int, int] | None:
    """The first hunk of an applied series that GNU patch would refuse for ending short
    of its file's end: (patch position, path, hunk number, the file's lines) or None.

    ``series``: each patch's :func:`end_hunks`, :func:`line_changes` and placements
    (in order, each applied on the ones before). A file's lines before a patch are its
    lines in the base tree (``base_lines``, asked once) plus what earlier patches added
    and removed; a file a rename or a creation brings in is followed from there. A
    file whose count cannot be told is not held to its end."""
    wanted = sorted({hunk[2] for ends, _, _ in series for hunk in ends})
    if not wanted:
        return None
    counts: dict[str, int | None] = dict(base_lines(wanted))
    for position, (ends, changes, placements) in enumerate(series):
        moved = {(p.file, p.hunk): p.offset for p in placements}
        # Two diffs of one path in one patch: whose placement is whose cannot be told
        # (git numbers the hunks of each diff from 1), so such a patch is not held.
        named = [new or old for old, new, _ in changes]
        told = len(named) == len(set(named))
        for diff_number, (old, new, delta) in enumerate(changes):
            for at, number, path, start, size in ends if told else ():
                total = counts.get(path)
                offset = moved.get((new or old or path, number), 0)
                if at != diff_number or total is None:
                    continue
                if _ends_short(start, offset, size, total):
                    return position, path, number, total
            _follow(counts, old, new, delta)
    return None


def _follow(counts: dict[str, int | None], old: str | None, new: str | None, delta: int) -> None:
    """``counts`` after a file diff from ``old`` to ``new`` that adds ``delta`` lines: a
    created file has its own lines, a renamed one takes its count along, a deleted one
    goes, one whose count was not known stays unknown."""
    before = counts.pop(old, None) if old is not None and old != new else counts.get(old or "")
    if new is not None:
        counts[new] = None if before is None and old is not None else (before or 0) + delta


def refused_at_the_end(patch: Patch, path: str, number: int, total: int) -> PatchVerdict:
    """The verdict of a patch whose hunk ``number`` of ``path`` GNU patch holds to the
    file's end (``total`` lines) and git applied short of it: fuzz, as GNU patch calls
    it (it applies there once the end is let go, with fuzz)."""
    hunk = hunk_by_number(diff_for(patch.parsed, path), number)
    return PatchVerdict(
        patch.name,
        "fuzz",
        f"{path}: hunk {number} applies only with reduced context (fuzz): it has less "
        "context after its change than before (its diff ended with the file), so GNU "
        f"patch -F0, as dpkg-source runs it, holds it to the file's end, line {total}, "
        "and refuses it where it is; rebase the patch by hand",
        (),
        path,
        number,
        hunk.line if hunk else None,
    )


def short_of_its_end(
    patch: Patch, attempt: Attempt, base_lines: Callable[[list[str]], dict[str, int]]
) -> PatchVerdict | None:
    """The refusal of one patch git applied (``attempt``) with a hunk short of its file's
    end, where GNU patch (dpkg-source) holds it; None when none is. ``base_lines``: the
    line counts of the files before the patch."""
    series = [(end_hunks(patch.parsed), line_changes(patch.parsed), attempt.placements)]
    found = first_past_the_end(series, base_lines)
    return None if found is None else refused_at_the_end(patch, *found[1:])
