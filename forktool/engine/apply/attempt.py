"""One patch tried: what an applier says, read into a verdict.

The command lines of ``git apply`` on a temporary index, the readers of what git
and GNU patch print, the checks made on a patch's text alone (:func:`precheck`),
and the two rules every caller shares:

* :func:`is_exact`, the exactness rule: the patch applies with every hunk at
  offset 0 and no fuzz (:func:`applies_unfuzzed`: no fuzz, any offset;
  :func:`applies_shifted`: no fuzz, some hunk at an offset). A fork that declares
  dpkg-source's rule (``apply_rule: dpkg``) accepts what dpkg-source accepts: no fuzz
  ever, offsets reported and accepted, and hunk headers edited by hand accepted where
  the hunk applies without fuzz (:func:`is_exact` with ``rule``, :func:`allows_offset`);
* :func:`classify`, the one place a tried patch gets its status.

A series onto a commit is verified in :mod:`forktool.engine.apply.verify`; onto a plain
directory in :mod:`forktool.engine.apply.target`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from forktool.config import ApplyRule
from forktool.fork import Patch
from forktool.git import TempIndex, git_apply_args
from forktool.model.patchfile import FileDiff, Hunk, PatchFile

Status = Literal[
    "exact", "offset", "fuzz", "fails", "malformed", "unsafe", "unsupported", "not-tried"
]

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

# Why an attempt failed, as far as the applier's output tells: the hunk's lines
# are not there (context), the file it creates exists, the file it changes or
# deletes does not, the file's mode is not the one the patch starts from (mode),
# or something else (detail says what).
Reason = Literal["", "context", "exists", "missing", "mode", "other"]


@dataclass(frozen=True)
class HunkPlacement:
    file: str
    line: int  # where the hunk applied (or was expected) in the file before the patch
    offset: int
    hunk: int = field(default=0, compare=False)  # its number within the file's diff

    def to_json(self) -> dict[str, object]:
        return {"file": self.file, "line": self.line, "offset": self.offset}


@dataclass(frozen=True)
class PatchVerdict:
    patch: str
    status: Status
    message: str = ""
    hunks: tuple[HunkPlacement, ...] = ()
    file: str | None = None  # the culprit file, hunk and patch line when not exact
    hunk: int | None = None
    line: int | None = None  # line in the patch file
    # Tried after earlier patches failed, on the tree without them (--keep-going).
    without: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "patch": self.patch,
            "status": self.status,
            "message": self.message,
            "hunks": [h.to_json() for h in self.hunks],
        }
        if self.file is not None or self.line is not None:
            data.update(file=self.file, hunk=self.hunk, line=self.line)
        if self.without:
            data["without"] = list(self.without)
        return data


def applies_unfuzzed(attempt: Attempt) -> bool:
    """The patch applies without fuzz, at any offset."""
    return attempt.ok and attempt.fuzz == 0


def is_exact(attempt: Attempt, rule: ApplyRule = "exact") -> bool:
    """The exactness rule: the patch applies with every hunk at offset 0 and no fuzz.

    Under dpkg-source's rule (``dpkg``: ``dpkg-source`` applies with ``patch -F 0``)
    a hunk at an offset is accepted too; fuzz never is."""
    if allows_offset(rule):
        return applies_unfuzzed(attempt)
    return applies_unfuzzed(attempt) and not any(p.offset for p in attempt.placements)


def allows_offset(rule: ApplyRule) -> bool:
    """Whether ``rule`` accepts a hunk that applies, unfuzzed, at an offset."""
    return rule == "dpkg"


def applies_shifted(attempt: Attempt) -> bool:
    """The patch applies without fuzz, but only with some hunk at a non-zero offset."""
    return applies_unfuzzed(attempt) and not is_exact(attempt, "exact")


def acceptable(status: Status, allow_offset: bool) -> bool:
    """The one rule for what counts as applying: exact, or offset when allowed."""
    return status == "exact" or (allow_offset and status == "offset")


# -- reading what the appliers say ----------------------------------------------


@dataclass
class Attempt:
    """One patch pushed through an applier, forward or back."""

    ok: bool
    placements: list[HunkPlacement] = field(default_factory=list)
    failed_file: str | None = None
    failed_hunk: int | None = None
    failed_at: int | None = None
    fuzz: int = 0
    detail: str = ""
    reason: Reason = ""
    # Every hunk that did not apply, as (file, hunk number): complete only when the
    # applier went on past a failure (``git apply --reject``).
    rejected: list[tuple[str, int]] = field(default_factory=list)

    def fail(self, reason: Reason, path: str, at: int | None = None) -> None:
        """Record the first failure only: later ones are consequences."""
        if self.failed_file is None:
            self.reason, self.failed_file, self.failed_at = reason, path, at


def _hunk_by_number(diff: FileDiff | None, number: int) -> Hunk | None:
    if diff is None or not 1 <= number <= len(diff.hunks):
        return None
    return diff.hunks[number - 1]


def _diff_for(parsed: PatchFile, path: str) -> FileDiff | None:
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
    attempt.placements = hunk_placements(parsed, offsets, reverse)
    if attempt.reason == "context" and attempt.failed_at is not None:
        attempt.failed_hunk = _hunk_at(parsed, attempt.failed_file, attempt.failed_at, reverse)
    if not ok and not attempt.reason:
        attempt.reason = "other"
        attempt.detail = next(
            (e for e in errors if "patch does not apply" not in e and "while searching" not in e),
            errors[-1] if errors else "git apply failed",
        )
    return attempt


def _reject(
    attempt: Attempt, parsed: PatchFile, path: str, line: int | None, reverse: bool
) -> None:
    """Record the hunk of ``path`` expected at ``line`` (every hunk of the file when
    ``line`` is None: the file itself is missing, or already exists) as not applied."""
    diff = _diff_for(parsed, path)
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
    diff = _diff_for(parsed, path or "")
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
            diff = _diff_for(parsed, current)
            first = diff.hunks[0] if diff and diff.hunks else None
            if attempt.failed_file is None and first is not None:
                attempt.failed_hunk = 1
            attempt.fail("context", current, expected_line(first, reverse) if first else None)
    attempt.placements = hunk_placements(parsed, offsets, reverse)
    if not ok and not attempt.reason:
        attempt.reason = "other"
        attempt.detail = stdout.strip().splitlines()[-1] if stdout.strip() else "patch failed"
    return attempt


# -- what makes a patch unfit before anything runs -------------------------------


def _has_context(hunk: Hunk) -> bool:
    # An empty body line is a context line whose space was lost (the parser counts it so).
    return any(line[:1] in (" ", "", "\r") for line in hunk.lines)


def whole_file_hunk(diff: FileDiff, hunk: Hunk) -> bool:
    """A hunk with no context lines that starts at the top of an existing file.

    ``git diff`` writes these when every line of a small file changes (a VERSION
    file, say). Git anchors such a hunk at both ends of the file; the patch
    engine is made to do the same (:func:`_anchor_failure`), so both agree.
    """
    return (
        not diff.is_new
        and not diff.is_deleted
        and len(diff.hunks) == 1
        and hunk.old_start <= 1
        and hunk.new_start <= 1
        and not _has_context(hunk)
    )


def _unplaceable(diff: FileDiff) -> tuple[int, Hunk] | None:
    """The first hunk with no context that could land anywhere (``diff -U0``)."""
    if diff.is_new or diff.is_deleted:
        return None
    for number, hunk in enumerate(diff.hunks, start=1):
        if not _has_context(hunk) and not whole_file_hunk(diff, hunk):
            return number, hunk
    return None


def path_created_and_deleted(parsed: PatchFile) -> tuple[FileDiff, str] | None:
    """(the later diff, why) when one patch creates and deletes the same path in two
    file diffs (create then delete, or delete then create).

    git and GNU patch give different trees for it (git keeps a created-then-deleted
    file, GNU patch removes it) and ``git apply -R`` cannot undo it, so no engine can
    prove its round trip: refused as malformed everywhere. Several diffs that only
    modify one file, or create and then modify it (a multi-commit patch), are fine:
    both engines apply them in turn.
    """
    seen: dict[str, FileDiff] = {}
    for diff in parsed.files:
        for path in dict.fromkeys(p for p in (diff.old_path, diff.new_path) if p):
            earlier = seen.get(path)
            seen[path] = diff
            if earlier is None:
                continue
            was = _lifecycle(earlier, path)
            now = _lifecycle(diff, path)
            if {was, now} != {"created", "deleted"}:
                continue  # modified twice, or created then modified: applied in turn
            return diff, (
                f"{path}: the patch has two file diffs for it (lines {earlier.line} and "
                f"{diff.line}), the first {was} it and the second {now} it; git and GNU patch "
                "disagree on the result and no round trip can be proven: make it one diff "
                "per path (regenerate it with git diff between the two trees)"
            )
    return None


def _lifecycle(diff: FileDiff, path: str) -> str:
    """What ``diff`` does to ``path``: 'created', 'deleted' or 'modified'."""
    if diff.is_new or (diff.is_rename and path == diff.new_path and path != diff.old_path):
        return "created"
    if diff.is_deleted or (diff.is_rename and path == diff.old_path):
        return "deleted"
    return "modified"


def _contradiction(diff: FileDiff) -> tuple[Hunk, str] | None:
    """A hunk whose header positions contradict the hunks before it (a hand edit)."""
    delta = 0
    previous_end = 0
    for number, hunk in enumerate(diff.hunks, start=1):
        # A hunk that removes (or adds) nothing names the line before the change.
        old_first = hunk.old_start if hunk.old_count else hunk.old_start + 1
        new_first = hunk.new_start if hunk.new_count else hunk.new_start + 1
        where = f"{diff.path}: hunk {number}"
        if old_first < previous_end:
            return hunk, (
                f"{where} starts at line {old_first}, inside or before hunk {number - 1}; "
                "the hunk headers were edited by hand: regenerate the patch"
            )
        if new_first - old_first != delta:
            return hunk, (
                f"{where} header says -{hunk.old_start} +{hunk.new_start}, but the hunks before "
                f"it shift lines by {delta:+d}; the hunk headers were edited by hand: "
                "regenerate the patch"
            )
        delta += hunk.new_count - hunk.old_count
        previous_end = old_first + hunk.old_count
    return None


EMPTY_NOTE = "an empty patch (0 bytes): a no-op, as quilt and dpkg-source apply it"


def exact_note(parsed: PatchFile, rule: ApplyRule) -> str:
    """What an exact verdict says of a patch that is exact in a way worth saying: empty,
    or with hand-edited hunk headers that the fork's rule accepts."""
    if parsed.empty:
        return EMPTY_NOTE
    edited = hand_edited(parsed) if allows_offset(rule) else None
    return f"{edited}: hunk headers edited by hand, accepted ({rule} rule)" if edited else ""


def hand_edited(parsed: PatchFile) -> str | None:
    """Why a patch's hunk headers look edited by hand (the first such hunk), or None."""
    for diff in parsed.files:
        if contradiction := _contradiction(diff):
            return contradiction[1].partition("; the hunk headers")[0]
    return None


def precheck(
    patch: Patch, engine: str, parsed: PatchFile | None = None, rule: ApplyRule = "exact"
) -> PatchVerdict | None:
    """A verdict reached from the patch text alone, or None if it must be tried
    (``parsed``: the patch's parse, when the caller holds one it does not keep).

    Hunk headers edited by hand are malformed under the exact rule; under dpkg-source's
    the patch is tried (GNU patch and git place such a hunk by its lines, and report
    where: :func:`hand_edited` names it in the verdict)."""
    parsed = parsed or patch.parsed
    for kind in ("unsafe", "malformed"):
        problems = [p for p in parsed.problems if p.kind == kind]
        if problems:
            return PatchVerdict(patch.name, kind, problems[0].message, line=problems[0].line)
    if reused := path_created_and_deleted(parsed):
        diff, message = reused
        return PatchVerdict(patch.name, "malformed", message, file=diff.path, line=diff.line)
    for diff in parsed.files if not allows_offset(rule) else ():
        if contradiction := _contradiction(diff):
            hunk, message = contradiction
            number = diff.hunks.index(hunk) + 1
            return PatchVerdict(
                patch.name, "malformed", message, file=diff.path, hunk=number, line=hunk.line
            )
    for diff in parsed.files:
        if unplaceable := _unplaceable(diff):
            number, hunk = unplaceable
            return PatchVerdict(
                patch.name,
                "fails",
                f"{diff.path}: hunk {number} has no context lines, so where it lands cannot be "
                "proven (git refuses it, GNU patch would place it by line number alone); "
                "regenerate the patch with context (git diff -U3)",
                file=diff.path,
                hunk=number,
                line=hunk.line,
            )
    for diff in parsed.files:
        if diff.is_copy:
            return PatchVerdict(patch.name, "unsupported", copy_refusal(diff), file=diff.path)
    if engine == "patch":
        unsupported = gnu_patch_unsupported(parsed)
        if unsupported:
            path, reason = unsupported
            return PatchVerdict(patch.name, "unsupported", reason, file=path)
    return None


def copy_refusal(diff: FileDiff) -> str:
    """Why a copy (``copy from``/``copy to``, ``format-patch -C``) is refused everywhere:
    git applies one but cannot revert it (``git apply -R`` says the source "already
    exists"), so neither the round trip nor ``apply --verify`` could be proven."""
    return (
        f"{diff.path}: a copy (copy from {diff.old_path}) cannot be reverted exactly, so "
        "forktool refuses copies; regenerate the patch without copy detection (no -C or "
        "--find-copies), so it creates the file"
    )


def gnu_patch_unsupported(parsed: PatchFile) -> tuple[str, str] | None:
    """(file, reason) for the first change GNU patch cannot represent, or None."""
    for diff in parsed.files:
        if diff.is_rename:
            what = "a rename"
        elif diff.is_copy:
            what = "a copy"
        elif diff.is_binary:
            what = "a binary diff"
        elif diff.is_symlink:
            what = "a symlink"
        else:
            continue
        return diff.path, f"{diff.path}: {what} cannot be applied by GNU patch; use --engine git"
    return None


def classify(
    patch: Patch,
    attempt: Attempt,
    fuzzy: Attempt | None,
    reverse_ok: bool,
    base: str,
    rule: ApplyRule = "exact",
) -> PatchVerdict:
    """The one place a tried patch gets its status.

    ``attempt`` is the strict try; when it failed, ``reverse_ok`` says whether the
    patch reverse-applies exactly (then it is already applied: never "fuzz"), and
    ``fuzzy`` is the try with reduced context, made only when it is not. Under
    dpkg-source's ``rule`` an offset is still reported as ``offset``, worded as accepted.
    """
    if applies_unfuzzed(attempt):
        moved = [p for p in attempt.placements if p.offset]
        edited = hand_edited(patch.parsed) if allows_offset(rule) else None
        if not moved:
            note = exact_note(patch.parsed, rule)
            return PatchVerdict(patch.name, "exact", note, tuple(attempt.placements))
        first = moved[0]
        sign = "+" if first.offset > 0 else ""
        then = (
            f"accepted ({rule} rule: no fuzz, offsets reported)"
            if allows_offset(rule)
            else "run 'forktool refresh'"
        )
        if edited:
            then = f"hunk headers edited by hand ({edited}); {then}"
        return PatchVerdict(
            patch.name,
            "offset",
            f"{first.file}: hunk {first.hunk} applies only at offset {sign}{first.offset} "
            f"(line {first.line}) on {base}; {then}",
            tuple(attempt.placements),
            first.file,
            first.hunk,
            _hunk_line(patch.parsed, first.file, first.hunk),
        )
    file, number = attempt.failed_file, attempt.failed_hunk
    line = _hunk_line(patch.parsed, file, number)
    where = f"{file}: hunk {number}" if number else file or "the patch"
    if reverse_ok:
        message = f"already applied: the change is present on {base} (it reverse-applies exactly)"
        return PatchVerdict(patch.name, "fails", message, (), file, number, line)
    if (fuzzy is not None and fuzzy.ok) or attempt.ok:
        message = (
            f"{where} applies only with reduced context (fuzz) on {base}: the context "
            "no longer matches; rebase the patch by hand"
        )
        return PatchVerdict(patch.name, "fuzz", message, (), file, number, line)
    if attempt.reason == "exists":
        message = f"{file}: the patch creates it, but it already exists on {base}"
    elif attempt.reason == "mode":
        message = f"{attempt.detail} on {base}"
    elif attempt.reason == "missing":
        message = f"{file}: the patch changes or deletes it, but it does not exist on {base}"
    elif attempt.reason == "context":
        at = f" at line {attempt.failed_at}" if attempt.failed_at else ""
        message = f"{where} does not apply{at} on {base}: its lines are not there"
    else:
        prefix = f"{file}: " if file and not attempt.detail.startswith(file) else ""
        message = f"{prefix}{attempt.detail or 'does not apply'} on {base}"
    return PatchVerdict(patch.name, "fails", message, (), file, number, line)


def _hunk_line(parsed: PatchFile, path: str | None, number: int | None) -> int | None:
    """The patch-file line of hunk ``number`` of ``path``'s diff."""
    hunk = _hunk_by_number(_diff_for(parsed, path or ""), number or 0)
    return hunk.line if hunk else None


def try_patch(
    index: TempIndex,
    patch: Patch,
    *,
    reverse: bool = False,
    check: bool = False,
    context: int | None = None,
) -> Attempt:
    """Push one patch through ``git apply --cached`` on ``index`` (which it changes on success
    unless ``check``)."""
    saved = index.path.read_bytes() if not check and index.path.exists() else None
    res = index.run(
        git_apply_args([patch.path], reverse=reverse, check=check, context=context),
        purpose=f"apply {patch.name}",
        check=False,
    )
    attempt = read_git_apply(patch.parsed, res.err, res.ok, reverse)
    if saved is not None and res.ok and not attempt.ok:
        index.path.write_bytes(saved)  # git applied it, but onto the wrong mode: undo
    return attempt
