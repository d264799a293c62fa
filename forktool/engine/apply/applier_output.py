"""Reading what the appliers print (``git apply -v``, GNU patch) into an
:class:`~forktool.engine.apply.verdict.Attempt`: where each hunk landed, and why one failed."""

from __future__ import annotations

import re

from forktool.engine.apply.verdict import Attempt, HunkPlacement, Reason
from forktool.model.patchfile import FileDiff, Hunk, PatchFile

_HUNK_OFFSET = re.compile(
    r"^Hunk #(\d+) succeeded at (\d+)(?: \(offset (-?\d+) lines?\))?(?: with fuzz (\d+))?"
)


_GIT_PATCH_FAILED = re.compile(r"^error: patch failed: (.+):(\d+)$")


_GIT_CHECKING = re.compile(r"^Checking patch (.+)\.\.\.$")


_GIT_EXISTS = re.compile(r"^error: (.+): already exists in (?:index|working directory)$")


_GIT_MISSING = re.compile(r"^error: (.+): (?:does not exist in index|No such file or directory)$")


_GIT_ERROR = re.compile(r"^error: (.+)$")


# git only warns when a file's mode is not the one the patch was made against, then
# applies anyway (a mode-only patch "applies" where its mode is already set).
_GIT_MODE_MISMATCH = re.compile(r"^warning: (.+) has type (\d+), expected (\d+)$")


_PATCH_FILE = re.compile(r"^(?:patching|checking) (?:file|symbolic link) '?(.+?)'?$")


_PATCH_FAILED = re.compile(r"^Hunk #(\d+) FAILED at (\d+)")


# GNU patch words these for the direction it runs in ("when reversed" included).
_PATCH_CREATE_DELETE = re.compile(
    r"^The next patch(?:, when reversed,)? would (create|delete) the file '?(.+?)'?,$"
)


_PATCH_NO_FILE = re.compile(r"^can't find file to patch at input line (\d+)$")


_PATCH_NOT_REGULAR = re.compile(r"^File '?(.+?)'? is not a regular file")


def hunk_by_number(diff: FileDiff | None, number: int) -> Hunk | None:
    if diff is None or not 1 <= number <= len(diff.hunks):
        return None
    return diff.hunks[number - 1]


def diff_for(parsed: PatchFile, path: str) -> FileDiff | None:
    for diff in parsed.files:
        if path in (diff.new_path, diff.old_path):
            return diff
    return None


def expected_line(hunk: Hunk, reverse: bool) -> int:
    return hunk.new_start if reverse else hunk.old_start


def hunk_placements(
    parsed: PatchFile, offsets: dict[tuple[str, int], tuple[int, int]], reverse: bool
) -> list[HunkPlacement]:
    """Every hunk's placement: reported offsets where the applier gave one, else exact."""
    out = []
    for diff in parsed.files:
        for number, hunk in enumerate(diff.hunks, start=1):
            at, offset = offsets.get((diff.path, number), (expected_line(hunk, reverse), 0))
            out.append(HunkPlacement(diff.path, at, offset, number))
    return out


def read_git_apply(
    parsed: PatchFile, stderr: str, ok: bool, reverse: bool, *, modes: bool = True
) -> Attempt:
    """Interpret ``git apply -v`` output for one patch.

    With ``modes``, git's warning that a file's mode is not the one the patch starts
    from is a failure (``mode``): a tree's modes are part of the tree. The directory
    appliers check only the modes a patch changes (:func:`mode_failure`).
    """
    current: str | None = None
    offsets: dict[tuple[str, int], tuple[int, int]] = {}
    attempt = Attempt(ok=ok)
    errors: list[str] = []
    for line in stderr.splitlines():
        if match := _GIT_CHECKING.match(line):
            current = match.group(1).split(" => ")[-1]  # a rename names both sides
        elif (match := _HUNK_OFFSET.match(line)) and current is not None:
            number, at = int(match.group(1)), int(match.group(2))
            offsets[(current, number)] = (at, int(match.group(3) or 0))
        elif match := _GIT_PATCH_FAILED.match(line):
            attempt.fail("context", match.group(1), int(match.group(2)))
            _reject(attempt, parsed, match.group(1), int(match.group(2)), reverse)
        elif match := _GIT_EXISTS.match(line):
            attempt.fail("exists", match.group(1))
            _reject(attempt, parsed, match.group(1), None, reverse)
        elif match := _GIT_MISSING.match(line):
            attempt.fail("missing", match.group(1))
            _reject(attempt, parsed, match.group(1), None, reverse)
        elif modes and (match := _GIT_MODE_MISMATCH.match(line)):
            path, found, wanted = match.groups()
            attempt.ok = False
            if attempt.failed_file is None:
                attempt.detail = mode_detail(path, wanted, found)
            attempt.fail("mode", path)
        elif match := _GIT_ERROR.match(line):
            errors.append(match.group(1))
    attempt.placements = hunk_placements(
        parsed, _without_git_quirk(parsed, offsets, reverse), reverse
    )
    if attempt.reason == "context" and attempt.failed_at is not None:
        attempt.failed_hunk = _hunk_at(parsed, attempt.failed_file, attempt.failed_at, reverse)
    if not ok and not attempt.reason:
        attempt.reason = "other"
        attempt.detail = next(
            (e for e in errors if "patch does not apply" not in e and "while searching" not in e),
            errors[-1] if errors else "git apply failed",
        )
    return attempt


def _without_git_quirk(
    parsed: PatchFile, offsets: dict[tuple[str, int], tuple[int, int]], reverse: bool
) -> dict[tuple[str, int], tuple[int, int]]:
    """git measures a hunk's offset from its ``+new`` start (its ``-old`` start going
    back). A hunk with no context whose other side is empty (a ``diff -U0`` deletion)
    has that start on the line before it, so git says "offset 1 line" where the lines
    are exactly where the header says (GNU patch says nothing). Taken back here."""
    if not offsets:
        return offsets
    fixed = dict(offsets)
    for (path, number), (at, offset) in offsets.items():
        hunk = hunk_by_number(diff_for(parsed, path), number)
        if hunk is None or hunk.has_context:
            continue
        if (hunk.old_count if reverse else hunk.new_count) == 0 and offset:
            fixed[(path, number)] = (at, offset - 1)
    return fixed


def _reject(
    attempt: Attempt, parsed: PatchFile, path: str, line: int | None, reverse: bool
) -> None:
    """Record the hunk of ``path`` expected at ``line`` (every hunk of the file when
    ``line`` is None: the file itself is missing, or already exists) as not applied."""
    diff = diff_for(parsed, path)
    if diff is None:
        return
    if line is None:
        attempt.rejected += [(diff.path, n) for n in range(1, len(diff.hunks) + 1)]
    elif (number := _hunk_at(parsed, path, line, reverse)) is not None:
        attempt.rejected.append((diff.path, number))


def hunks_of(parsed: PatchFile) -> list[tuple[str, int]]:
    """Every hunk of the patch as (file, hunk number), in order."""
    return [(d.path, n) for d in parsed.files for n in range(1, len(d.hunks) + 1)]


def mode_detail(path: str, wanted: str, found: str) -> str:
    return f"{path}: the patch expects mode {wanted}, but the file has mode {found}"


def _hunk_at(parsed: PatchFile, path: str | None, line: int, reverse: bool) -> int | None:
    diff = diff_for(parsed, path or "")
    for number, hunk in enumerate(diff.hunks if diff else (), start=1):
        if expected_line(hunk, reverse) == line:
            return number
    return None


def _diff_at_patch_line(parsed: PatchFile, line: int) -> FileDiff | None:
    """The file diff whose text contains patch line ``line``."""
    found = None
    for diff in parsed.files:
        if diff.line <= line:
            found = diff
    return found


def read_gnu_patch(parsed: PatchFile, stdout: str, ok: bool, reverse: bool) -> Attempt:
    """Interpret GNU patch output for one patch (strict flags: any offset is reported)."""
    current: str | None = None
    offsets: dict[tuple[str, int], tuple[int, int]] = {}
    attempt = Attempt(ok=ok)
    for line in stdout.splitlines():
        if match := _PATCH_FILE.match(line):
            current = match.group(1)
        elif (match := _HUNK_OFFSET.match(line)) and current is not None:
            number, at = int(match.group(1)), int(match.group(2))
            offsets[(current, number)] = (at, int(match.group(3) or 0))
            attempt.fuzz = max(attempt.fuzz, int(match.group(4) or 0))
        elif (match := _PATCH_FAILED.match(line)) and current is not None:
            if attempt.failed_file is None:
                attempt.failed_hunk = int(match.group(1))
            attempt.fail("context", current, int(match.group(2)))
        elif match := _PATCH_CREATE_DELETE.match(line):
            reason: Reason = "exists" if match.group(1) == "create" else "missing"
            attempt.fail(reason, match.group(2))
        elif match := _PATCH_NO_FILE.match(line):
            diff = _diff_at_patch_line(parsed, int(match.group(1)))
            attempt.fail("missing", diff.path if diff else "(unknown file)")
        elif match := _PATCH_NOT_REGULAR.match(line):
            attempt.fail("other", match.group(1))
            attempt.detail = "not a regular file"
        elif line.startswith("Reversed (or previously applied) patch detected") and current:
            # GNU patch tests for reversal on the file's first hunk.
            diff = diff_for(parsed, current)
            first = diff.hunks[0] if diff and diff.hunks else None
            if attempt.failed_file is None and first is not None:
                attempt.failed_hunk = 1
            attempt.fail("context", current, expected_line(first, reverse) if first else None)
    attempt.placements = hunk_placements(parsed, offsets, reverse)
    if not ok and not attempt.reason:
        attempt.reason = "other"
        attempt.detail = stdout.strip().splitlines()[-1] if stdout.strip() else "patch failed"
    return attempt
