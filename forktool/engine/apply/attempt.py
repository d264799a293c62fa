"""One patch tried, and its verdict: :func:`try_patch` pushes a patch through ``git apply``
on a temporary index (forward or back, with less context for the fuzz probe), and
:func:`classify` is the one place a tried patch gets its status.

The verdict types and the exactness rule are in :mod:`forktool.engine.apply.verdict`;
what the appliers print is read in :mod:`forktool.engine.apply.applier_output`; the
checks on a patch's text alone in :mod:`forktool.engine.apply.precheck`. A series onto
a commit is verified in :mod:`forktool.engine.apply.verify`; onto a plain directory in
:mod:`forktool.engine.apply.target`.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

from forktool.config import ApplyRule
from forktool.engine.apply.anchors import gnu_anchors_hold
from forktool.engine.apply.applier_output import diff_for, hunk_by_number, read_git_apply
from forktool.engine.apply.precheck import (
    dpkg_drops_empty,
    exact_note,
    hand_edited,
    whole_file_hunk,
)
from forktool.engine.apply.verdict import (
    ALREADY_APPLIED,
    Attempt,
    HunkPlacement,
    PatchVerdict,
    allows_offset,
    applies_unfuzzed,
    is_exact,
)
from forktool.errors import FatalError
from forktool.fork import Patch
from forktool.git import Git, TempIndex, git_apply_args
from forktool.git.runner import scratch_dir
from forktool.model.patchfile import PatchFile
from forktool.model.text import line_count

# A patch that fails forward but reverse-applies at other lines: its change is likely
# there, moved (a refresh's 3-way merge tells whether the target has it whole).
MOVED_PRESENT = "it reverse-applies only at an offset: the change looks present, moved"


CRLF_PATCH = (
    "the patch file ends every line with CR LF (saved on Windows?): git matches the CRs, "
    "as forktool does under every rule, where GNU patch, quilt and dpkg-source strip them; "
    "convert it to LF line endings"
)


def crlf_throughout(data: bytes) -> bool:
    """Every line of a patch file ends with CR LF, its headers included."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return bool(lines) and all(line.endswith(b"\r") for line in lines)


def classify(
    patch: Patch,
    attempt: Attempt,
    fuzzy: Attempt | None,
    reverse_ok: bool,
    base: str,
    rule: ApplyRule = "exact",
    placed: Attempt | None = None,
    reverse_moved: bool = False,
) -> PatchVerdict:
    """The one place a tried patch gets its status.

    ``attempt`` is the strict try; when it failed, ``reverse_ok`` says whether the
    patch reverse-applies exactly (then it is already applied: never "fuzz"),
    ``placed`` is the try without git's anchors when GNU patch would place every hunk
    there (:func:`placed_without_anchors`: the patch moved whole, an offset), and
    ``fuzzy`` the try with reduced context, made only when neither. Under
    dpkg-source's ``rule`` an offset is still reported as ``offset``, worded as accepted.
    ``reverse_moved``: it reverse-applies, but only at an offset; a failure says so
    (:data:`MOVED_PRESENT`), as GNU patch says "Reversed (or previously applied)".
    """
    if applies_unfuzzed(attempt):
        return _applied(patch, attempt, base, rule)
    if placed is not None and not reverse_ok and applies_unfuzzed(placed):
        return _applied(patch, placed, base, rule)
    file, number = attempt.failed_file, attempt.failed_hunk
    line = _hunk_line(patch.parsed, file, number)
    where = f"{file}: hunk {number}" if number else file or "the patch"
    if reverse_ok:
        message = f"{ALREADY_APPLIED}: the change is present on {base} (it reverse-applies exactly)"
        return PatchVerdict(patch.name, "fails", message, (), file, number, line)
    if (fuzzy is not None and fuzzy.ok) or attempt.ok:
        message = (
            f"{where} applies only with reduced context (fuzz) on {base}: the context "
            "no longer matches; rebase the patch by hand"
        )
        return PatchVerdict(patch.name, "fuzz", message, (), file, number, line)
    message = _whole_file_failure(patch.parsed, attempt, base) or _failure(attempt, where, base)
    if reverse_moved:
        message += f"; {MOVED_PRESENT}"
    if crlf_throughout(patch.data):
        message += f"; {CRLF_PATCH}"
    return PatchVerdict(patch.name, "fails", message, (), file, number, line)


def _applied(patch: Patch, attempt: Attempt, base: str, rule: ApplyRule) -> PatchVerdict:
    """The verdict of a patch that applied without fuzz: exact, or at an offset."""
    moved = [p for p in attempt.placements if p.offset]
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
    edited = hand_edited(patch.parsed) if allows_offset(rule) else None
    if edited:
        then = f"hunk headers edited by hand ({edited}); {then}"
    if dropped := dpkg_drops_empty(patch.parsed, rule):
        then = f"{then}; {dropped}"
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


def _failure(attempt: Attempt, where: str, base: str) -> str:
    """What a failed attempt says, by the reason its applier gave."""
    file = attempt.failed_file
    if attempt.reason == "exists":
        return f"{file}: the patch creates it, but it already exists on {base}"
    if attempt.reason == "mode":
        return f"{attempt.detail} on {base}"
    if attempt.reason == "missing":
        return f"{file}: the patch changes or deletes it, but it does not exist on {base}"
    if attempt.reason == "context":
        at = f" at line {attempt.failed_at}" if attempt.failed_at else ""
        return f"{where} does not apply{at} on {base}: its lines are not there"
    prefix = f"{file}: " if file and not attempt.detail.startswith(file) else ""
    return f"{prefix}{attempt.detail or 'does not apply'} on {base}"


def _whole_file_failure(parsed: PatchFile, attempt: Attempt, base: str) -> str | None:
    """What a failed hunk without context from the top of an existing file says: git
    (and forktool, in every engine) holds it to the whole file, where GNU patch, so
    quilt and dpkg-source, would apply it to the file's first lines and keep the rest
    (Debian's zsh: a patch that created a file upstream now ships, applied on top of
    it, leaves the file twice over). None for any other failure."""
    file, number = attempt.failed_file, attempt.failed_hunk
    diff = diff_for(parsed, file or "")
    hunk = hunk_by_number(diff, number or 0)
    if attempt.reason != "context" or diff is None or hunk is None:
        return None
    if not whole_file_hunk(diff, hunk):
        return None
    if hunk.old_count == 0:
        return (
            f"{file}: the patch writes the whole file ({_lines(hunk.new_count)}, no context), "
            f"but it already exists on {base}: drop the patch if the file now comes from "
            "upstream, else refresh it (GNU patch, so quilt and dpkg-source, would put "
            "the lines above the file's own)"
        )
    return (
        f"{file}: hunk {number} has no context and starts at line 1, so it must match the "
        f"whole file ({_lines(hunk.old_count)}), which differs on {base} (GNU patch, so "
        "quilt and dpkg-source, would change the file's first lines and keep the rest)"
    )


def _lines(count: int) -> str:
    return f"{count} line" if count == 1 else f"{count} lines"


def _hunk_line(parsed: PatchFile, path: str | None, number: int | None) -> int | None:
    """The patch-file line of hunk ``number`` of ``path``'s diff."""
    hunk = hunk_by_number(diff_for(parsed, path or ""), number or 0)
    return hunk.line if hunk else None


def try_patch(
    index: TempIndex,
    patch: Patch,
    *,
    reverse: bool = False,
    check: bool = False,
    context: int | None = None,
    unanchored: bool = False,
) -> Attempt:
    """Push one patch through ``git apply --cached`` on ``index`` (which it changes on success
    unless ``check``; ``unanchored``: without git's anchors, see
    :mod:`forktool.engine.apply.anchors`)."""
    saved = index.path.read_bytes() if not check and index.path.exists() else None
    args = git_apply_args(
        [patch.path], reverse=reverse, check=check, context=context, unanchored=unanchored
    )
    res = index.run(
        args,
        purpose=f"apply {patch.name}",
        check=False,
    )
    attempt = read_git_apply(patch.parsed, res.err, res.ok, reverse)
    if saved is not None and res.ok and not attempt.ok:
        index.path.write_bytes(saved)  # git applied it, but onto the wrong mode: undo
    return attempt


def already_there(index: TempIndex, patch: Patch, forward: Sequence[HunkPlacement]) -> bool:
    """Whether ``patch``, which applied on ``index`` only at an offset (``forward``, its
    hunks' places), is there already: it also reverse-applies (nothing changed), and
    nearer its own lines than where it applied forward, so the lines found forward only
    look like its own (:func:`made_twice`). A reverse found farther off is the look-alike
    (a deletion's context can recur), and the patch is not taken for applied."""
    back = try_patch(index, patch, reverse=True, check=True)
    return looks_alike(forward, back)


def looks_alike(forward: Sequence[HunkPlacement], back: Attempt) -> bool:
    """Whether a forward apply only at an offset (``forward``, its hunks' places) found
    lines that only look like the patch's own: it also reverse-applies (``back``), and
    nearer its own lines. An added block that ends as its leading context does (a
    C function's ``return -1; }``) makes the patch apply again just below its own copy."""
    return applies_unfuzzed(back) and _farthest(back.placements) < _farthest(forward)


def _farthest(placements: Sequence[HunkPlacement]) -> int:
    return max((abs(p.offset) for p in placements), default=0)


def reverse_state(index: TempIndex, patch: Patch) -> tuple[bool, bool]:
    """Whether ``patch`` reverse-applies on ``index`` exactly (it is already applied),
    and whether it does only at an offset (its change looks present, moved:
    :data:`MOVED_PRESENT`): the two things a failing patch's reverse try tells."""
    reverse = try_patch(index, patch, reverse=True, check=True)
    exact = is_exact(reverse)
    return exact, applies_unfuzzed(reverse) and not exact


def made_twice(offset_message: str) -> str:
    """What a patch that applies only at an offset but also reverse-applies says: GNU
    patch and quilt would apply it there and make the change twice (Debian's haproxy
    onto a newer release: a function defined twice), so it is already applied."""
    return (
        f"{ALREADY_APPLIED}: the change is there (it reverse-applies); forward it applies "
        f"only at an offset, which would make it twice: {offset_message}"
    )


def made_twice_verdict(verdict: PatchVerdict) -> PatchVerdict:
    """``verdict`` (a patch at an offset that is there already) as its refusal
    (:func:`made_twice`): the culprit file, hunk and line kept, no hunk placed."""
    return verdict._replace(status="fails", message=made_twice(verdict.message), hunks=())


def refuse_made_twice(
    git: Git, base_commit: str, patches: Sequence[Patch], verdicts: Sequence[PatchVerdict]
) -> list[PatchVerdict]:
    """``verdicts`` with each patch that went on only at an offset but is there already
    on the tree before it (:func:`already_there`) refused as :func:`made_twice`: under
    the dpkg rule an offset is accepted, and GNU patch would make the change twice
    (Debian's krb5 onto the tree dpkg-source made). Those trees are rebuilt only when
    some patch moved: up to each moved one, in one call."""
    moved = [at for at, v in enumerate(verdicts) if v.status == "offset" and v.hunks]
    if not moved:
        return list(verdicts)
    from forktool.engine.apply.series_run import apply_series

    found = list(verdicts)
    done = 0
    with git.temp_index(f"{base_commit}^{{tree}}") as index:
        for at in moved:
            if not apply_series(index, patches[done:at], reverse=False)[0]:
                break  # the series did not go on as it did before: judge no further
            verdict = found[at]
            if already_there(index, patches[at], verdict.hunks):
                found[at] = made_twice_verdict(verdict)
            done = at
    return found


def placed_without_anchors(index: TempIndex, patch: Patch) -> Attempt | None:
    """``patch`` applied onto ``index`` without git's anchors, when it applies so with
    every context line and GNU patch at fuzz 0 would place each hunk there
    (:mod:`forktool.engine.apply.anchors`); None otherwise, and nothing applied."""
    probe = try_patch(index, patch, check=True, unanchored=True)

    def lines_of(path: str) -> int | None:
        data = index.staged(path)
        return None if data is None else line_count(data)

    if not gnu_anchors_hold(patch.parsed, probe, lines_of):
        return None
    applied = try_patch(index, patch, unanchored=True)
    return applied if applied.ok else None


def fuzz_probe(index: TempIndex, patch: Patch) -> Attempt:
    """``patch`` tried with fuzz on ``index``, nothing changed: by GNU patch itself at
    its default fuzz 2 (what quilt push accepts) on the patch's files as the index holds
    them, so ``fuzz`` means the same for every engine and every context width; by git
    with one line of context (``-C1``) only when GNU patch is not installed. (``-C1``
    equals fuzz 2 only for hunks with three lines of context: on a ``diff -U5`` hunk
    it keeps one line where GNU patch keeps three.)"""
    found = _gnu_fuzz(index, patch)
    return found if found is not None else try_patch(index, patch, context=1, check=True)


def _gnu_fuzz(index: TempIndex, patch: Patch) -> Attempt | None:
    from forktool.engine.apply.appliers import GnuPatchApplier, touched  # the failure path only

    root = scratch_dir("forktool-fuzz")
    try:
        _write_staged(index, touched([patch]), root)
        return GnuPatchApplier().attempt(root, patch, reverse=False, fuzz=True)
    except (OSError, FatalError):  # a path both a file and a folder; no GNU patch
        return None
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _write_staged(index: TempIndex, paths: list[str], root: Path) -> None:
    """Write the regular files among ``paths`` as ``index`` holds them under ``root``,
    with their executable bits: the bytes git stores, no attribute or filter applied.
    A link is left out (GNU patch then finds no file there, and the probe fails), so
    nothing read here can point outside ``root``."""
    entries = {
        path: (mode, oid)
        for path, (mode, oid) in index.staged_entries(paths).items()
        if mode in ("100644", "100755")
    }
    data = index.blobs([oid for _mode, oid in entries.values()], purpose="read staged files")
    for path, (mode, oid) in entries.items():
        dest = root / path
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data.get(oid, b""))
        dest.chmod(0o755 if mode == "100755" else 0o644)
