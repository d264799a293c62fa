"""What verify keeps of each patch's parse (its survey), and reading ``git apply -v``
output of a whole series back to the patches it came from."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from forktool.config import ApplyRule
from forktool.engine import Progress
from forktool.engine.apply.anchors import EndHunk, LineChange, end_hunks, line_changes
from forktool.engine.apply.applier_output import hunk_placements
from forktool.engine.apply.precheck import exact_note, precheck
from forktool.engine.apply.verdict import HunkPlacement, PatchVerdict
from forktool.fork import Patch

# git only warns when a file's mode is not the one the patch was made against, then
# applies anyway: the patch is then tried on its own, where the warning fails it.
GIT_MODE_WARNING = re.compile(r"^warning: .+ has type \d+, expected \d+$", re.MULTILINE)


class Survey(NamedTuple):
    """What verify keeps of one patch's parse: its early verdict, or the hunks'
    places when exact, how many file diffs git will report, and every path the
    patch reads or writes."""

    early: PatchVerdict | None
    placements: tuple[HunkPlacement, ...]
    files: int
    diffs: tuple[tuple[int, tuple[str, ...]], ...] = ()  # each file diff: first line, paths
    note: str = ""  # what an exact verdict says (an empty patch, hand-edited hunk headers)
    # Under dpkg-source's rule only: the hunks GNU patch holds to their file's end, and
    # each file diff's change in lines (forktool.engine.apply.anchors).
    ends: tuple[EndHunk, ...] = ()
    changes: tuple[LineChange, ...] = ()


def survey_of(patch: Patch, rule: ApplyRule) -> Survey:
    parsed = patch.parse()
    early = precheck(patch, "git", parsed, rule)
    placements = tuple(hunk_placements(parsed, {}, False))
    diffs = tuple(
        (diff.line, tuple(p for p in (diff.old_path, diff.new_path) if p is not None))
        for diff in parsed.files
    )
    note = exact_note(parsed, rule)
    if rule != "dpkg":
        return Survey(early, placements, len(parsed.files), diffs, note)
    ends, changes = end_hunks(parsed), line_changes(parsed)
    return Survey(early, placements, len(parsed.files), diffs, note, ends, changes)


def survey_rest(
    patches: Sequence[Patch], surveys: list[Survey], rule: ApplyRule, progress: Progress | None
) -> None:
    """Survey the patches ``surveys`` does not hold yet, in order."""
    for patch in patches[len(surveys) :]:
        surveys.append(survey_of(patch, rule))
        if progress:
            progress(1)


def first_to_try(surveys: Sequence[Survey], err: str) -> int:
    """The first patch to try on its own before git's word is taken: the first whose
    text alone condemns it, or the first git warned about a file's mode for."""
    early = next((i for i, s in enumerate(surveys) if s.early is not None), len(surveys))
    if GIT_MODE_WARNING.search(err):
        # git applies onto a file of another mode with a warning only: that patch
        # is tried on its own, where the warning fails it (try_patch).
        early = min(early, _first_mode_warning(surveys, err))
    return early


def _groups(err: str) -> list[list[str]]:
    """``git apply -v`` output of a whole series, one group of lines per patch file:
    git checks all of a patch's files ("Checking patch"), then applies them
    ("Applied patch"), before it reads the next patch. The last group of a failed
    run has no "Applied" lines."""
    groups: list[list[str]] = []
    applied = True
    for line in err.splitlines():
        if line.startswith("Checking patch ") and applied:
            groups.append([])
            applied = False
        elif line.startswith("Applied patch ") and groups:
            applied = True
        if groups:
            groups[-1].append(line)
    return groups


def _first_mode_warning(surveys: Sequence[Survey], err: str) -> int:
    """The position of the first patch whose output holds a mode warning; 0 (try every
    patch on its own) when the output cannot be matched to the patches."""
    for position, (group, survey) in enumerate(zip(_groups(err), surveys, strict=False)):
        if sum(line.startswith("Checking patch ") for line in group) != survey.files:
            return 0
        if GIT_MODE_WARNING.search("\n".join(group)):
            return position
    return 0


def applied_groups(
    patches: Sequence[Patch], surveys: Sequence[Survey], err: str
) -> list[str] | None:
    """The output of each patch git applied, in order; None when the output does not
    match the patches' file counts."""
    return applied_outputs([s.files for s in surveys], err)


def applied_outputs(files: Sequence[int], err: str) -> list[str] | None:
    """The output of each patch file git applied (``files``: how many file diffs each
    holds), in order, up to the first it did not; None when the output does not match
    the counts."""
    out = []
    for group, count in zip(_groups(err), files, strict=False):
        checked = sum(line.startswith("Checking patch ") for line in group)
        done = sum(line.startswith("Applied patch ") for line in group)
        if done == 0:
            break
        if checked != count or done != count:
            return None
        out.append("\n".join(group))
    return out


def exact_verdict(patch: Patch, survey: Survey) -> PatchVerdict:
    return PatchVerdict(patch.name, "exact", survey.note, survey.placements)
