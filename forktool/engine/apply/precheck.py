"""What makes a patch unfit before anything runs: the checks made on its text alone
(unsafe paths, malformed hunks, hunk headers that contradict their lines, a path created
and deleted, copies, changes GNU patch cannot represent)."""

from __future__ import annotations

import re

from forktool.config import ApplyRule
from forktool.engine.apply.verdict import PatchVerdict, allows_offset
from forktool.fork import Patch
from forktool.model.patchfile import FileDiff, Hunk, PatchFile


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
        and not hunk.has_context
    )


def removes_lines(hunk: Hunk) -> bool:
    return any(line[:1] == "-" for line in hunk.lines)


def _unplaceable(diff: FileDiff, rule: ApplyRule) -> tuple[int, Hunk] | None:
    """The first hunk with no context that could land anywhere (``diff -U0``). Under
    dpkg-source's ``rule`` a hunk that removes lines is placed by them, as GNU patch
    places it (Debian's postgresql and samba ship such hunks): only one that removes
    nothing has nothing to prove where it lands."""
    if diff.is_new or diff.is_deleted:
        return None
    for number, hunk in enumerate(diff.hunks, start=1):
        if hunk.has_context or whole_file_hunk(diff, hunk):
            continue
        if not (allows_offset(rule) and removes_lines(hunk)):
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
    with hand-edited hunk headers that the fork's rule accepts, or (under dpkg-source's
    rule) creating a file empty."""
    if parsed.empty:
        return EMPTY_NOTE
    edited = hand_edited(parsed) if allows_offset(rule) else None
    notes = [f"{edited}: hunk headers edited by hand, accepted ({rule} rule)"] if edited else []
    if dropped := dpkg_drops_empty(parsed, rule):
        notes.append(dropped)
    return "; ".join(notes)


def dpkg_drops_empty(parsed: PatchFile, rule: ApplyRule) -> str:
    """Under dpkg-source's rule, what becomes of the files the patch creates empty (a
    git diff's ``new file mode`` with no hunk, as ``git diff`` writes an empty file):
    git creates them, but dpkg-source applies a series with ``patch -E``, which removes
    a file left empty, so after this patch the package's tree lacks them (dpkg itself
    warns that such a file "will not be represented in diff"). Empty under another
    rule, or when the patch creates no empty file."""
    if rule != "dpkg":
        return ""
    empty = [d.path for d in parsed.files if d.is_new and not (d.hunks or d.is_binary)]
    if not empty:
        return ""
    them = "it" if len(empty) == 1 else "them"
    return (
        f"{', '.join(empty)} created empty: dpkg-source applies the series with "
        f"'patch -E', which removes an empty file: after this patch the package's tree "
        f"lacks {them}"
    )


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
        if unplaceable := _unplaceable(diff, rule):
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
        if no_binary_data(diff):
            return PatchVerdict(
                patch.name, "fails", binary_refusal(diff), file=diff.path, line=diff.line
            )
    if engine == "patch":
        unsupported = gnu_patch_unsupported(parsed)
        if unsupported:
            path, reason = unsupported
            return PatchVerdict(patch.name, "unsupported", reason, file=path)
    return None


_FULL_INDEX = re.compile(r"^index [0-9a-fA-F]{40}\.\.[0-9a-fA-F]{40}(?: [0-7]{6})?$")


def no_binary_data(diff: FileDiff) -> bool:
    """A binary file diff that carries no data and no full ``index`` line (``Binary
    files a/X and b/X differ``: qemu's stable diffs): nothing says what the file
    becomes. With full object ids git may still find the new file in the repository."""
    if not diff.is_binary or "GIT binary patch" in diff.header_lines:
        return False
    return not any(_FULL_INDEX.match(line) for line in diff.header_lines)


def binary_refusal(diff: FileDiff) -> str:
    return (
        f"{diff.path}: the patch says only 'Binary files ... differ' (no binary data, no "
        "full index line), so nothing says what the file becomes: git refuses it, and GNU "
        "patch (so quilt and dpkg-source) skips it and leaves the file as it is; drop the "
        "stanza if the file is not meant to change, or regenerate the patch with "
        "'git diff --binary --full-index'"
    )


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
