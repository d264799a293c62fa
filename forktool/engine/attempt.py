"""Exact application: does every patch apply at its own lines, and revert cleanly?

Two places a series is applied:

* ``verify``: onto a commit, in a temporary index (``git apply --cached``), never
  touching the user's checkout. The whole series goes through in ONE git call
  forward and one back; only when that fails or reports an offset do we re-run
  patch by patch to name the culprit.
* ``apply --target DIR``: onto a plain directory (an installed package). Every
  decision is made in a scratch copy of the touched files first; the target is
  changed only once the result is proven, and restored if anything goes wrong.

A verdict rule lives in exactly one place: :func:`classify`.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal, Protocol

from forktool.engine import Progress
from forktool.errors import FatalError
from forktool.fork import Fork, Patch
from forktool.git import Git, Started, TempIndex, hardened_env
from forktool.git import run as run_git
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
_GIT_MODE_WARNING = re.compile(r"^warning: .+ has type \d+, expected \d+$", re.MULTILINE)
_PATCH_FILE = re.compile(r"^(?:patching|checking) (?:file|symbolic link) '?(.+?)'?$")
_PATCH_FAILED = re.compile(r"^Hunk #(\d+) FAILED at (\d+)")
# GNU patch words these for the direction it runs in ("when reversed" included).
_PATCH_CREATE_DELETE = re.compile(
    r"^The next patch(?:, when reversed,)? would (create|delete) the file '?(.+?)'?,$"
)
_PATCH_NO_FILE = re.compile(r"^can't find file to patch at input line (\d+)$")
_PATCH_NOT_REGULAR = re.compile(r"^File '?(.+?)'? is not a regular file")
STRAY_SUFFIXES = (".orig", ".rej")

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

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "patch": self.patch,
            "status": self.status,
            "message": self.message,
            "hunks": [h.to_json() for h in self.hunks],
        }
        if self.file is not None or self.line is not None:
            data.update(file=self.file, hunk=self.hunk, line=self.line)
        return data


@dataclass(frozen=True)
class VerifyResult:
    base: str
    base_commit: str
    ok: bool
    round_trip: bool
    patches: tuple[PatchVerdict, ...]
    allow_offset: bool = False
    message: str = ""

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "base": self.base,
            "base_commit": self.base_commit,
            "ok": self.ok,
            "round_trip": self.round_trip,
            "patches": [p.to_json() for p in self.patches],
        }
        if self.message:
            data["message"] = self.message
        return data


def _exact(attempt: Attempt) -> bool:
    return attempt.ok and attempt.fuzz == 0 and not any(p.offset for p in attempt.placements)


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


def _expected_line(hunk: Hunk, reverse: bool) -> int:
    return hunk.new_start if reverse else hunk.old_start


def _placements(
    parsed: PatchFile, offsets: dict[tuple[str, int], tuple[int, int]], reverse: bool
) -> list[HunkPlacement]:
    """Every hunk's placement: reported offsets where the applier gave one, else exact."""
    out = []
    for diff in parsed.files:
        for number, hunk in enumerate(diff.hunks, start=1):
            at, offset = offsets.get((diff.path, number), (_expected_line(hunk, reverse), 0))
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
        elif match := _GIT_EXISTS.match(line):
            attempt.fail("exists", match.group(1))
        elif match := _GIT_MISSING.match(line):
            attempt.fail("missing", match.group(1))
        elif modes and (match := _GIT_MODE_MISMATCH.match(line)):
            path, found, wanted = match.groups()
            attempt.ok = False
            if attempt.failed_file is None:
                attempt.detail = _mode_detail(path, wanted, found)
            attempt.fail("mode", path)
        elif match := _GIT_ERROR.match(line):
            errors.append(match.group(1))
    attempt.placements = _placements(parsed, offsets, reverse)
    if attempt.reason == "context" and attempt.failed_at is not None:
        attempt.failed_hunk = _hunk_at(parsed, attempt.failed_file, attempt.failed_at, reverse)
    if not ok and not attempt.reason:
        attempt.reason = "other"
        attempt.detail = next(
            (e for e in errors if "patch does not apply" not in e and "while searching" not in e),
            errors[-1] if errors else "git apply failed",
        )
    return attempt


def _mode_detail(path: str, wanted: str, found: str) -> str:
    return f"{path}: the patch expects mode {wanted}, but the file has mode {found}"


# -- modes: what a patch declares, checked and kept by the directory appliers ------

EXECUTABLE, REGULAR = "100755", "100644"


def declared_modes(diff: FileDiff) -> tuple[str | None, str | None]:
    """(before, after) modes the diff states in ``old mode``/``new mode``/``new file
    mode``/``deleted file mode`` lines; the ``index`` line's mode is not a statement
    that the mode matters (a package installer picks its own)."""
    before = after = None
    for line in diff.header_lines:
        words = line.split()
        if line.startswith(("old mode ", "deleted file mode ")) and words:
            before = words[-1]
        elif line.startswith(("new mode ", "new file mode ")) and words:
            after = words[-1]
    return before, after


def _git_mode(path: Path) -> str:
    return EXECUTABLE if path.stat().st_mode & 0o100 else REGULAR


def mode_failure(directory: Path, patch: Patch, reverse: bool) -> Attempt | None:
    """A failed attempt if a file the patch changes the mode of does not start from the
    mode the patch starts from (GNU patch never checks; git only warns)."""
    for diff in patch.parsed.files:
        before, after = declared_modes(diff)
        wanted = after if reverse else before
        rel = diff.new_path if reverse else diff.old_path
        if wanted not in (EXECUTABLE, REGULAR) or rel is None:
            continue
        path = directory / rel
        if path.is_symlink() or not path.is_file():
            continue  # a missing file or a wrong kind: the applier reports it
        found = _git_mode(path)
        if found != wanted:
            attempt = Attempt(ok=False, detail=_mode_detail(rel, wanted, found))
            attempt.fail("mode", rel)
            return attempt
    return None


def _permissions(directory: Path, patch: Patch) -> dict[str, int]:
    """Permission bits of the files ``patch`` reads, before it runs."""
    found: dict[str, int] = {}
    for rel in touched([patch]):
        path = directory / rel
        if path.is_file() and not path.is_symlink():
            found[rel] = path.stat().st_mode & 0o7777
    return found


def _with_exec(bits: int, executable: bool) -> int:
    """``bits`` made executable (for whoever may read) or not."""
    return bits | ((bits & 0o444) >> 2) if executable else bits & ~0o111


def settle_modes(directory: Path, patch: Patch, reverse: bool, before: dict[str, int]) -> None:
    """After an applier wrote ``patch``: each written file keeps the permissions it had
    (appliers rewrite files with the umask's), and takes the executable bit the patch
    sets when it changes the mode (GNU patch does not set it exactly)."""
    for diff in patch.parsed.files:
        source, written = (
            (diff.new_path, diff.old_path) if reverse else (diff.old_path, diff.new_path)
        )
        if written is None:
            continue
        path = directory / written
        if path.is_symlink() or not path.is_file():
            continue
        old_mode, new_mode = declared_modes(diff)
        wanted = old_mode if reverse else new_mode
        bits = before.get(source or "", path.stat().st_mode & 0o7777)
        if wanted in (EXECUTABLE, REGULAR):
            bits = _with_exec(bits, wanted == EXECUTABLE)
        os.chmod(path, bits)


def _hunk_at(parsed: PatchFile, path: str | None, line: int, reverse: bool) -> int | None:
    diff = _diff_for(parsed, path or "")
    for number, hunk in enumerate(diff.hunks if diff else (), start=1):
        if _expected_line(hunk, reverse) == line:
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
            attempt.fail("context", current, _expected_line(first, reverse) if first else None)
    attempt.placements = _placements(parsed, offsets, reverse)
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


def precheck(patch: Patch, engine: str, parsed: PatchFile | None = None) -> PatchVerdict | None:
    """A verdict reached from the patch text alone, or None if it must be tried
    (``parsed``: the patch's parse, when the caller holds one it does not keep)."""
    parsed = parsed or patch.parsed
    for kind in ("unsafe", "malformed"):
        problems = [p for p in parsed.problems if p.kind == kind]
        if problems:
            return PatchVerdict(patch.name, kind, problems[0].message, line=problems[0].line)
    for diff in parsed.files:
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
    patch: Patch, attempt: Attempt, fuzzy: Attempt | None, reverse_ok: bool, base: str
) -> PatchVerdict:
    """The one place a tried patch gets its status.

    ``attempt`` is the strict try; when it failed, ``reverse_ok`` says whether the
    patch reverse-applies exactly (then it is already applied: never "fuzz"), and
    ``fuzzy`` is the try with reduced context, made only when it is not.
    """
    if attempt.ok and attempt.fuzz == 0:
        moved = [p for p in attempt.placements if p.offset]
        if not moved:
            return PatchVerdict(patch.name, "exact", "", tuple(attempt.placements))
        first = moved[0]
        sign = "+" if first.offset > 0 else ""
        return PatchVerdict(
            patch.name,
            "offset",
            f"{first.file}: hunk {first.hunk} applies only at offset {sign}{first.offset} "
            f"(line {first.line}) on {base}; run 'forktool refresh'",
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


# -- verify: a series onto a commit, in a temporary index ------------------------


def _git_apply_args(
    files: Sequence[Path], *, reverse: bool = False, check: bool = False, context: int | None = None
) -> list[str]:
    args = ["apply", "--cached", "-v", "--whitespace=nowarn", "-p1"]
    if reverse:
        args.append("-R")
    if check:
        args.append("--check")
    if context is not None:
        args.append(f"-C{context}")
    return [*args, *(str(f) for f in files)]


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
        _git_apply_args([patch.path], reverse=reverse, check=check, context=context),
        purpose=f"apply {patch.name}",
        check=False,
    )
    attempt = read_git_apply(patch.parsed, res.err, res.ok, reverse)
    if saved is not None and res.ok and not attempt.ok:
        index.path.write_bytes(saved)  # git applied it, but onto the wrong mode: undo
    return attempt


# git apply keeps every file it patched in memory until it exits (30-60 KiB a patch,
# measured): a series longer than ONE_CALL_* goes through in several calls of at most
# CHUNK_* each, one after the other, so memory stays flat in the series. Several calls
# cost git more CPU time than one (it re-reads what the calls before it wrote), so a
# series that fits stays in one call.
ONE_CALL_PATCHES = 1000
ONE_CALL_BYTES = 8 << 20
CHUNK_PATCHES = 500
CHUNK_BYTES = 4 << 20
# The rest of its memory is the cache of delta bases it reads from packs (96 MiB by
# default) and the pack windows it maps (a growing part of the pack as a long series
# reaches further into history). A series of several calls caps both; the cap on
# the cache costs git some CPU time on a long series (bench/verify, docs/performance.md).
LONG_SERIES_CONFIG = (
    "-c",
    "core.deltaBaseCacheLimit=48m",
    "-c",
    "core.packedGitWindowSize=4m",
    "-c",
    "core.packedGitLimit=32m",
)


def _chunks(patches: Sequence[Patch]) -> list[Sequence[Patch]]:
    if len(patches) <= ONE_CALL_PATCHES and sum(p.size for p in patches) <= ONE_CALL_BYTES:
        return [patches]
    chunks: list[Sequence[Patch]] = []
    start = size = 0
    for position, patch in enumerate(patches):
        full = position - start >= CHUNK_PATCHES or size + patch.size > CHUNK_BYTES
        if position > start and full:
            chunks.append(patches[start:position])
            start, size = position, 0
        size += patch.size
    chunks.append(patches[start:])
    return chunks


class _SeriesRun:
    """The series through ``git apply --cached -v`` on ``index`` in the background, in
    order (reversed, with ``reverse``), one call per chunk: :meth:`poll` starts the next
    call once one is done, :meth:`wait` runs the rest. Use as a context manager: leaving
    early kills the call under way."""

    def __init__(self, index: TempIndex, patches: Sequence[Patch], reverse: bool) -> None:
        self.index = index
        self.reverse = reverse
        self.pending = _chunks(list(reversed(patches)) if reverse else patches)
        self.config = LONG_SERIES_CONFIG if len(self.pending) > 1 else ()
        self.errs: list[str] = []
        self.ok = True
        self.running: Started | None = None
        self._start_next()

    def _start_next(self) -> None:
        self.running = None
        if self.ok and self.pending:
            chunk = self.pending.pop(0)
            args = [*self.config, *_git_apply_args([p.path for p in chunk], reverse=self.reverse)]
            self.running = self.index.start(args, purpose="apply the series")

    def _collect(self) -> None:
        assert self.running is not None
        with self.running:
            res = self.running.wait(check=False)
        self.errs.append(res.err.rstrip("\n"))
        self.ok = res.ok
        self._start_next()

    def poll(self) -> None:
        if self.running is not None and self.running.done():
            self._collect()

    def wait(self) -> tuple[bool, str]:
        while self.running is not None:
            self._collect()
        return self.ok, "\n".join(self.errs)

    def __enter__(self) -> _SeriesRun:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.running is not None:
            self.running.__exit__(*exc)


def _apply_series(index: TempIndex, patches: Sequence[Patch], reverse: bool) -> tuple[bool, str]:
    """Apply ``patches`` on ``index`` (whether all applied, and git's output)."""
    with _SeriesRun(index, patches, reverse) as run:
        return run.wait()


def verify_series(
    fork: Fork,
    git: Git,
    *,
    base: str,
    base_commit: str,
    allow_offset: bool = False,
    progress: Progress | None = None,
) -> VerifyResult:
    """Apply the series onto ``base_commit`` and back, proving the round trip.

    git applies the whole series in one call while each patch is parsed (once, and
    not kept) for the checks made on its text alone. Every patch after the first
    one that does not apply is ``not-tried`` (unless its text alone condemns it).
    """
    patches = fork.patches
    if not patches:
        return VerifyResult(
            base,
            base_commit,
            False,
            False,
            (),
            allow_offset,
            "the series lists no patches: there is nothing to verify",
        )
    base_tree = git.out(
        ["rev-parse", f"{base_commit}^{{tree}}"], purpose=f"read the tree of {base}"
    )
    with git.temp_index(base_tree) as index:
        with _SeriesRun(index, patches, reverse=False) as forward:
            surveys = []
            for patch in patches:
                surveys.append(_survey(patch))
                forward.poll()
                if progress:
                    progress(1)
            applied, err = forward.wait()
        early = next((i for i, s in enumerate(surveys) if s.early is not None), len(patches))
        if _GIT_MODE_WARNING.search(err):
            # git applies onto a file of another mode with a warning only: that patch
            # is tried on its own, where the warning fails it (try_patch).
            early = min(early, _first_mode_warning(surveys, err))
        if applied and early == len(patches):
            verdicts = _verdicts_applied(index, base_tree, patches, surveys, err, base)
            round_trip = _round_trip(index, patches, base_tree)
            ok = round_trip and all(acceptable(v.status, allow_offset) for v in verdicts)
            return VerifyResult(base, base_commit, ok, round_trip, tuple(verdicts), allow_offset)
        verdicts = _up_to_first_failure(
            index, base_tree, patches, surveys, (applied, err), early, base
        )
    return VerifyResult(base, base_commit, False, False, tuple(verdicts), allow_offset)


@dataclass(frozen=True)
class _Survey:
    """What verify keeps of one patch's parse: its early verdict, or the hunks'
    places when exact and how many file diffs git will report."""

    early: PatchVerdict | None
    placements: tuple[HunkPlacement, ...]
    files: int


def _survey(patch: Patch) -> _Survey:
    parsed = patch.parse()
    early = precheck(patch, "git", parsed)
    return _Survey(early, tuple(_placements(parsed, {}, False)), len(parsed.files))


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


def _first_mode_warning(surveys: Sequence[_Survey], err: str) -> int:
    """The position of the first patch whose output holds a mode warning; 0 (try every
    patch on its own) when the output cannot be matched to the patches."""
    for position, (group, survey) in enumerate(zip(_groups(err), surveys, strict=False)):
        if sum(line.startswith("Checking patch ") for line in group) != survey.files:
            return 0
        if _GIT_MODE_WARNING.search("\n".join(group)):
            return position
    return 0


def _applied_groups(
    patches: Sequence[Patch], surveys: Sequence[_Survey], err: str
) -> list[str] | None:
    """The output of each patch git applied, in order; None when the output does not
    match the patches' file counts."""
    out = []
    for group, survey in zip(_groups(err), surveys, strict=False):
        checked = sum(line.startswith("Checking patch ") for line in group)
        done = sum(line.startswith("Applied patch ") for line in group)
        if done == 0:
            break
        if checked != survey.files or done != survey.files:
            return None
        out.append("\n".join(group))
    return out


def _verdicts_applied(
    index: TempIndex,
    base_tree: str,
    patches: Sequence[Patch],
    surveys: Sequence[_Survey],
    err: str,
    base: str,
) -> list[PatchVerdict]:
    """Verdicts of ``patches``, which git applied onto ``index`` in one call (``err``
    its output): exact from the parse, unless git reported an offset (then read from
    its output, or, if that cannot be matched up, from a patch-by-patch run)."""
    if "offset" not in err:
        return [_exact_verdict(p, s) for p, s in zip(patches, surveys, strict=True)]
    groups = _applied_groups(patches, surveys, err)
    if groups is None or len(groups) != len(patches):
        index.read_tree(base_tree)
        return [_culprit(index, patch, base) for patch in patches]
    verdicts = []
    for patch, survey, group in zip(patches, surveys, groups, strict=True):
        if "offset" in group:
            verdicts.append(
                classify(patch, read_git_apply(patch.parsed, group, True, False), None, False, base)
            )
        else:
            verdicts.append(_exact_verdict(patch, survey))
    return verdicts


def _exact_verdict(patch: Patch, survey: _Survey) -> PatchVerdict:
    return PatchVerdict(patch.name, "exact", "", survey.placements)


def _up_to_first_failure(
    index: TempIndex,
    base_tree: str,
    patches: Sequence[Patch],
    surveys: Sequence[_Survey],
    forward: tuple[bool, str],
    early: int,
    base: str,
) -> list[PatchVerdict]:
    """Verdicts when the series does not go through: the patches before the first
    failure, the failure (named as a patch-by-patch run names it), the rest not tried.

    Where git stopped is read from the one call's output (the patches it applied);
    when that cannot be matched to the patches, it is found by bisecting on prefixes
    of the series: O(log n) applies, never one per patch."""
    if forward[0]:
        good = early
    else:
        groups = _applied_groups(patches, surveys, forward[1])
        applied = len(groups) if groups is not None else None
        if applied is None:
            applied = _bisect_applying_prefix(index, base_tree, patches, early)
        good = min(applied, early)
    index.read_tree(base_tree)
    verdicts: list[PatchVerdict] = []
    if good:
        ok, err = _apply_series(index, patches[:good], reverse=False)
        if not ok:  # the output misled us (a hunk's text can mimic it): ask git again
            good = _bisect_applying_prefix(index, base_tree, patches, good)
            index.read_tree(base_tree)
            ok, err = _apply_series(index, patches[:good], reverse=False)
        verdicts = _verdicts_applied(index, base_tree, patches[:good], surveys[:good], err, base)
    position = good
    while position < len(patches):
        patch, survey = patches[position], surveys[position]
        verdict = survey.early or _culprit(index, patch, base)
        verdicts.append(verdict)
        position += 1
        if verdict.status not in ("exact", "offset"):
            break
    first = verdicts[-1].patch
    for patch, survey in zip(patches[position:], surveys[position:], strict=True):
        verdicts.append(
            survey.early
            or PatchVerdict(patch.name, "not-tried", f"not tried: {first} does not apply before it")
        )
    return verdicts


def _bisect_applying_prefix(
    index: TempIndex, base_tree: str, patches: Sequence[Patch], limit: int
) -> int:
    """The length of the longest prefix of ``patches[:limit]`` that applies in one call."""
    low, high = 0, limit  # patches[:low] applies; patches[:high + 1] does not, or high == limit
    while low < high:
        middle = (low + high + 1) // 2
        index.read_tree(base_tree)
        ok, _ = _apply_series(index, patches[:middle], reverse=False)
        if ok:
            low = middle
        else:
            high = middle - 1
    return low


def _culprit(index: TempIndex, patch: Patch, base: str) -> PatchVerdict:
    """One patch tried on ``index`` (the patches before it applied): its verdict, and
    the patch applied there when it applies."""
    attempt = try_patch(index, patch)
    fuzzy: Attempt | None = None
    reverse_ok = False
    if not attempt.ok:
        reverse_ok = _exact(try_patch(index, patch, reverse=True, check=True))
        if not reverse_ok:
            fuzzy = try_patch(index, patch, context=1, check=True)
    return classify(patch, attempt, fuzzy, reverse_ok, base)


def _round_trip(index: TempIndex, patches: Sequence[Patch], base_tree: str) -> bool:
    ok, _ = _apply_series(index, patches, reverse=True)
    return ok and index.write_tree() == base_tree


def resolve_base(fork: Fork, git: Git, base: str | None) -> tuple[str, str]:
    """(name, commit) of what to verify against: ``base`` or the pin."""
    from forktool.engine.pin import require_pin

    if base is None:
        return fork.config.pin_tag, require_pin(fork.config, git)
    return base, git.resolve_commit(base, what="base revision")


# -- apply --target: a series onto a plain directory -----------------------------


class Applier(Protocol):
    name: str

    def attempt(
        self, directory: Path, patch: Patch, *, reverse: bool, fuzz: bool = False
    ) -> Attempt: ...


class GitDirApplier:
    """``git apply`` outside any repository (the target is never a checkout)."""

    name = "git"

    def attempt(
        self, directory: Path, patch: Patch, *, reverse: bool, fuzz: bool = False
    ) -> Attempt:
        failed = mode_failure(directory, patch, reverse)
        if failed is not None:
            return failed
        args = ["apply", "-v", "--whitespace=nowarn", "-p1"]
        if reverse:
            args.append("-R")
        if fuzz:
            args += ["-C1", "--check"]
        args.append(str(patch.path))
        before = _permissions(directory, patch)
        res = run_git(
            args,
            cwd=directory,
            purpose=f"apply {patch.name}",
            env={
                "GIT_CEILING_DIRECTORIES": str(directory.parent),
                "GIT_DIR": str(directory / ".no-git"),
            },
            check=False,
        )
        attempt = read_git_apply(patch.parsed, res.err, res.ok, reverse, modes=False)
        if attempt.ok and not fuzz:
            settle_modes(directory, patch, reverse, before)
        return attempt


class GnuPatchApplier:
    """GNU patch with the strict flags: no fuzz, no backups, no rejects, never auto-reverse."""

    name = "patch"
    STRICT = (
        "-p1",
        "--fuzz=0",
        "--no-backup-if-mismatch",
        "--reject-file=-",
        "--batch",
        "--forward",
    )

    def attempt(
        self, directory: Path, patch: Patch, *, reverse: bool, fuzz: bool = False
    ) -> Attempt:
        anchored = _anchor_failure(directory, patch, reverse) or mode_failure(
            directory, patch, reverse
        )
        if anchored is not None:
            return anchored
        flags = list(self.STRICT)
        if reverse:
            flags.append("-R")
        if fuzz:
            flags = [f for f in flags if not f.startswith("--fuzz")] + ["--fuzz=2", "--dry-run"]
        argv = ["patch", *flags, "-d", str(directory), "-i", str(patch.path)]
        before = _permissions(directory, patch)
        try:
            proc = subprocess.run(  # noqa: S603 - fixed argv, no shell
                argv, capture_output=True, env=_gnu_patch_env(), check=False
            )
        except FileNotFoundError as exc:
            raise FatalError(
                "GNU patch is not installed",
                "install it (apt-get install patch) or use --engine git",
            ) from exc
        out = proc.stdout.decode("utf-8", "surrogateescape") + proc.stderr.decode(
            "utf-8", "surrogateescape"
        )
        attempt = read_gnu_patch(patch.parsed, out, proc.returncode == 0, reverse)
        if attempt.ok and not fuzz:
            settle_modes(directory, patch, reverse, before)
        return attempt


# Variables that change what GNU patch does (POSIX mode picks other file names and
# makes backups; the others name backup files): never inherited.
_GNU_PATCH_VARIABLES = (
    "POSIXLY_CORRECT",
    "PATCH_GET",
    "PATCH_VERSION_CONTROL",
    "VERSION_CONTROL",
    "SIMPLE_BACKUP_SUFFIX",
    "QUOTING_STYLE",
)


def _gnu_patch_env() -> dict[str, str]:
    env = hardened_env()
    for name in _GNU_PATCH_VARIABLES:
        env.pop(name, None)
    return env


def _line_count(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def _anchor_failure(directory: Path, patch: Patch, reverse: bool) -> Attempt | None:
    """Git anchors a whole-file hunk (no context, from line 1) at both ends of the
    file; GNU patch would place it by content alone. Hold GNU patch to git's rule:
    the file must have exactly the hunk's lines."""
    for diff in patch.parsed.files:
        for number, hunk in enumerate(diff.hunks, start=1):
            if not whole_file_hunk(diff, hunk):
                continue
            try:
                data = (directory / diff.path).read_bytes()
            except OSError:
                continue  # a missing file: GNU patch reports it
            if _line_count(data) != (hunk.new_count if reverse else hunk.old_count):
                attempt = Attempt(ok=False, failed_hunk=number)
                attempt.fail("context", diff.path, _expected_line(hunk, reverse))
                return attempt
    return None


APPLIERS: dict[str, type[GitDirApplier] | type[GnuPatchApplier]] = {
    "git": GitDirApplier,
    "patch": GnuPatchApplier,
}


@dataclass(frozen=True)
class DirResult:
    target: str
    engine: str
    mode: Literal["apply", "verify", "except"]
    ok: bool
    dry_run: bool
    patches: tuple[PatchVerdict, ...]
    state: dict[str, str] = field(default_factory=dict)  # patch -> applied | absent, as found
    changed: tuple[str, ...] = ()
    message: str = ""

    def to_json(self) -> dict[str, object]:
        return {
            "target": self.target,
            "engine": self.engine,
            "mode": self.mode,
            "ok": self.ok,
            "dry_run": self.dry_run,
            "message": self.message,
            "state": self.state,
            "changed": list(self.changed),
            "patches": [p.to_json() for p in self.patches],
        }


def touched(patches: Sequence[Patch]) -> list[str]:
    paths: list[str] = []
    for patch in patches:
        for diff in patch.parsed.files:
            for path in (diff.old_path, diff.new_path):
                if path is not None and path not in paths:
                    paths.append(path)
    return paths


def symlink_problem(target: Path, rel: str, link_diff: bool) -> str | None:
    """Why writing ``rel`` under ``target`` could land outside it, or None.

    A symlinked directory on the way is refused wherever it points (writes would
    follow it), and so is a symlink at the file itself unless the patch changes
    the link as a link (``link_diff``: git's mode 120000), which replaces it
    without following it.
    """
    current = target
    parts = Path(rel).parts
    for depth, part in enumerate(parts, start=1):
        current = current / part
        if not current.is_symlink():
            continue
        shown = "/".join(parts[:depth])
        pointee = os.readlink(current)
        if depth < len(parts):
            return f"{rel}: '{shown}' is a symlinked directory (to {pointee}); refusing to write through it"
        if not link_diff:
            return f"{rel}: is a symlink (to {pointee}); refusing to patch through it"
    return None


GITLINK_MODE = "160000"


def is_gitlink(diff: FileDiff) -> bool:
    return GITLINK_MODE in (diff.old_mode, diff.new_mode)


def _target_refusal(target: Path, patch: Patch, links: set[str]) -> PatchVerdict | None:
    """Why ``patch`` cannot go onto ``target`` as it is, found before anything runs."""
    if gitlink := next((d for d in patch.parsed.files if is_gitlink(d)), None):
        reason = (
            f"{gitlink.path}: a submodule (gitlink, mode {GITLINK_MODE}) has no content "
            "to apply to a plain directory; leave submodules out of the series"
        )
        return PatchVerdict(patch.name, "unsupported", reason, file=gitlink.path)
    for rel in touched([patch]):
        problem = symlink_problem(target, rel, rel in links) or kind_problem(target, rel)
        if problem:
            return PatchVerdict(patch.name, "unsafe", problem, file=rel)
    return None


def kind_problem(target: Path, rel: str) -> str | None:
    """Why the thing at ``rel`` cannot be patched as a file (a directory, a FIFO, a
    device: copying or reading it would fail or block), or None."""
    path = target / rel
    try:
        mode = path.lstat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISREG(mode) or stat.S_ISLNK(mode):
        return None
    kind = (
        "a directory"
        if stat.S_ISDIR(mode)
        else "a FIFO"
        if stat.S_ISFIFO(mode)
        else ("a device or socket")
    )
    return f"{rel}: is {kind} where the patch expects a file; refusing to patch it"


@contextmanager
def _scratch_copy(target: Path, paths: Sequence[str]) -> Iterator[Path]:
    """A private copy of ``paths`` from ``target``; the target is never written here."""
    scratch = Path(tempfile.mkdtemp(prefix="forktool-scratch-")) / "tree"
    scratch.mkdir()
    try:
        _copy_paths(target, scratch, paths)
        yield scratch
    finally:
        shutil.rmtree(scratch.parent, ignore_errors=True)


def _copy_paths(src_root: Path, dest_root: Path, paths: Sequence[str]) -> None:
    for rel in paths:
        src = src_root / rel
        if not (src.exists() or src.is_symlink()):
            continue
        dest = dest_root / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest, follow_symlinks=False)


def _sync_back(scratch: Path, target: Path, paths: Sequence[str]) -> list[str]:
    """Make ``target`` match ``scratch`` on ``paths``; returns the paths changed."""
    changed = []
    for rel in paths:
        src, dest = scratch / rel, target / rel
        src_there = src.exists() or src.is_symlink()
        dest_there = dest.exists() or dest.is_symlink()
        if src_there and dest_there and not src.is_symlink() and not dest.is_symlink():
            if src.read_bytes() == dest.read_bytes() and src.stat().st_mode == dest.stat().st_mode:
                continue
        if not src_there and not dest_there:
            continue
        if dest_there:
            dest.unlink()
        if src_there:
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest, follow_symlinks=False)
        else:
            _prune_empty_dirs(dest.parent, target)
        changed.append(rel)
    return changed


def _prune_empty_dirs(directory: Path, stop: Path) -> None:
    while directory != stop and directory.is_dir() and not any(directory.iterdir()):
        directory.rmdir()
        directory = directory.parent


def stray_files(target: Path, series_paths: Sequence[str] = ()) -> list[str]:
    """``.orig``/``.rej`` files under ``target`` that an applier would leave behind;
    a path the series itself names (a patch may create ``setup.cfg.orig``) is not one."""
    own = set(series_paths)
    return sorted(
        rel
        for p in target.rglob("*")
        if p.name.endswith(STRAY_SUFFIXES)
        and p.is_file()
        and (rel := p.relative_to(target).as_posix()) not in own
    )


def _trial(
    applier: Applier, scratch: Path, patch: Patch, *, reverse: bool = False, fuzz: bool = False
) -> Attempt:
    """Try one patch on a throwaway copy of its files: a failed GNU patch run can
    leave hunks half-applied, so nothing is ever tried on the scratch tree itself."""
    with _scratch_copy(scratch, touched([patch])) as probe:
        return applier.attempt(probe, patch, reverse=reverse, fuzz=fuzz)


def _judge(
    applier: Applier, scratch: Path, patch: Patch, base: str, *, reverse: bool = False
) -> PatchVerdict:
    """Classify one patch on the scratch tree, and apply it there when it is exact."""
    attempt = _trial(applier, scratch, patch, reverse=reverse)
    fuzzy: Attempt | None = None
    reverse_ok = False
    if not attempt.ok:
        reverse_ok = _exact(_trial(applier, scratch, patch, reverse=not reverse))
        if not reverse_ok:
            fuzzy = _trial(applier, scratch, patch, reverse=reverse, fuzz=True)
    verdict = classify(patch, attempt, fuzzy, reverse_ok, base)
    if verdict.status == "exact":
        applier.attempt(scratch, patch, reverse=reverse)
    return verdict


def progress_steps(mode: Literal["apply", "verify", "except"], patches: int) -> int:
    """How many progress ticks :func:`apply_to_directory` makes at most (``except``
    first peels every applied patch off, then applies)."""
    return 2 * patches if mode == "except" else patches


def apply_to_directory(
    fork: Fork,
    target: Path,
    *,
    engine: str = "git",
    mode: Literal["apply", "verify", "except"] = "apply",
    exclude: Sequence[str] = (),
    dry_run: bool = False,
    progress: Progress | None = None,
) -> DirResult:
    """Bring ``target`` to the declared state, or prove it is there (``verify``)."""
    if not target.is_dir():
        problem = "not a directory" if target.exists() else "no such directory"
        raise FatalError(f"--target {target}: {problem}")
    if not fork.patches:
        raise FatalError(
            f"{fork.config.series} lists no patches: refusing to report an empty series as applied",
            "a fork with nothing to apply should not run this step",
        )
    for name in exclude:
        fork.patch(name)  # exit 2 on an unknown name
    applier: Applier = APPLIERS[engine]()
    patches = list(fork.patches)
    base = f"the target directory {target}"
    early = [precheck(p, engine) for p in patches]
    bad = [v for v in early if v is not None]
    if bad:
        return DirResult(
            str(target),
            engine,
            mode,
            False,
            dry_run,
            tuple(bad),
            message="refused before applying anything",
        )
    paths = touched(patches)
    links = {d.path for p in patches for d in p.parsed.files if d.is_symlink}
    for patch in patches:
        if refusal := _target_refusal(target, patch, links):
            return DirResult(
                str(target), engine, mode, False, dry_run, (refusal,), message=refusal.message
            )
    strays = stray_files(target, paths)
    if strays:
        message = (
            f"leftover files already in the target: {', '.join(strays[:5])}; "
            "a previous run left them: restore the pristine files first"
        )
        return DirResult(str(target), engine, mode, False, dry_run, (), message=message)
    with _scratch_copy(target, paths) as scratch:
        if mode == "verify" and exclude:
            return _verify_except(applier, scratch, target, patches, set(exclude), base, dry_run)
        if mode == "verify":
            return _verify_directory(applier, scratch, target, patches, base, dry_run, progress)
        if mode == "apply":
            verdicts = []
            for patch in patches:
                verdict = _judge(applier, scratch, patch, base)
                verdicts.append(verdict)
                if progress:
                    progress(1)
                if verdict.status != "exact":
                    return DirResult(
                        str(target),
                        engine,
                        mode,
                        False,
                        dry_run,
                        tuple(verdicts),
                        message=f"{patch.name}: {verdict.message}; the target was not changed",
                    )
            return _finish(scratch, target, paths, engine, mode, dry_run, tuple(verdicts), {})
        state, verdicts_or_error = _declare(applier, scratch, patches, set(exclude), base, progress)
        if isinstance(verdicts_or_error, str):
            return DirResult(
                str(target), engine, mode, False, dry_run, (), state, message=verdicts_or_error
            )
        return _finish(scratch, target, paths, engine, mode, dry_run, verdicts_or_error, state)


def _verify_directory(
    applier: Applier,
    scratch: Path,
    target: Path,
    patches: list[Patch],
    base: str,
    dry_run: bool,
    progress: Progress | None,
) -> DirResult:
    verdicts = []
    for patch in reversed(patches):
        verdict = _judge(applier, scratch, patch, base, reverse=True)
        if verdict.status == "fails":
            message = verdict.message.replace("does not apply", "does not reverse-apply")
            if message.startswith("already applied"):
                message = "not applied: the patch applies forward, so the target lacks it"
            verdict = PatchVerdict(
                patch.name, "fails", message, (), verdict.file, verdict.hunk, verdict.line
            )
        verdicts.append(verdict)
        if progress:
            progress(1)
        if verdict.status != "exact":
            break
    verdicts.reverse()
    ok = len(verdicts) == len(patches) and all(v.status == "exact" for v in verdicts)
    strays = stray_files(target, touched(patches))
    message = (
        f"the target carries exactly the {len(patches)} patches of the series"
        if ok
        else "the target does not carry exactly the declared series"
    )
    if strays:
        ok = False
        message = f"leftover files in the target: {', '.join(strays[:5])}"
    return DirResult(
        str(target), applier.name, "verify", ok, dry_run, tuple(verdicts), message=message
    )


def _verify_except(
    applier: Applier,
    scratch: Path,
    target: Path,
    patches: list[Patch],
    exclude: set[str],
    base: str,
    dry_run: bool,
) -> DirResult:
    """Prove ``target`` is exactly "every patch but ``exclude``": the others reverse-apply
    exactly (newest first) and then the whole series applies exactly on what is left,
    so the left-out patches are absent, not merely unchecked."""
    kept = [p for p in patches if p.name not in exclude]
    verdicts = _verify_directory(applier, scratch, target, kept, base, dry_run, None)
    if not verdicts.ok:
        return replace(
            verdicts, message="the target does not carry the series' other patches exactly"
        )
    forward: dict[str, PatchVerdict] = {}
    for patch in patches:
        verdict = _judge(applier, scratch, patch, base)
        forward[patch.name] = verdict
        if verdict.status != "exact":
            break
    shown: list[PatchVerdict] = []
    for patch in patches:
        if patch.name in exclude:
            found = forward.get(patch.name)
            if found is None:
                found = PatchVerdict(patch.name, "fails", "not checked: an earlier patch failed")
            elif found.status == "exact":
                found = replace(found, message="absent (--except): it applies on the rest")
            elif found.message.startswith("already applied"):
                found = replace(found, message="present, though --except says it is left out")
            shown.append(found)
        else:
            shown.append(next(v for v in verdicts.patches if v.patch == patch.name))
    ok = all(v.status == "exact" for v in shown) and len(forward) == len(patches)
    left_out = ", ".join(sorted(exclude))
    message = (
        f"the target carries exactly the series except {left_out}"
        if ok
        else f"the target is not the series without {left_out}"
    )
    return DirResult(
        str(target), applier.name, "verify", ok, dry_run, tuple(shown), message=message
    )


def _declare(
    applier: Applier,
    scratch: Path,
    patches: list[Patch],
    exclude: set[str],
    base: str,
    progress: Progress | None,
) -> tuple[dict[str, str], tuple[PatchVerdict, ...] | str]:
    """Peel off whatever is applied (newest first), then apply all but ``exclude``."""
    state: dict[str, str] = {}
    for patch in reversed(patches):
        if progress:
            progress(1)
        if _exact(_trial(applier, scratch, patch, reverse=True)):
            applier.attempt(scratch, patch, reverse=True)
            state[patch.name] = "applied"
        elif _exact(_trial(applier, scratch, patch)):
            state[patch.name] = "absent"
        else:
            return state, (
                f"{patch.name}: the target is in an unknown state (the patch neither applies nor "
                "reverse-applies exactly); restore the pristine files first"
            )
    verdicts = []
    for patch in patches:
        if patch.name in exclude:
            verdicts.append(PatchVerdict(patch.name, "exact", "left out (--except)"))
        else:
            verdict = _judge(applier, scratch, patch, base)
            verdicts.append(verdict)
            if verdict.status != "exact":
                return state, f"{patch.name}: {verdict.message}; the target was not changed"
        if progress:
            progress(1)
    return dict(reversed(list(state.items()))), tuple(verdicts)


def _finish(
    scratch: Path,
    target: Path,
    paths: list[str],
    engine: str,
    mode: Literal["apply", "verify", "except"],
    dry_run: bool,
    verdicts: tuple[PatchVerdict, ...],
    state: dict[str, str],
) -> DirResult:
    strays = stray_files(scratch, paths)
    if strays:
        return DirResult(
            str(target),
            engine,
            mode,
            False,
            dry_run,
            verdicts,
            state,
            message=f"the applier left {', '.join(strays)}; the target was not changed",
        )
    if dry_run:
        return DirResult(
            str(target),
            engine,
            mode,
            True,
            True,
            verdicts,
            state,
            message="dry run: nothing written",
        )
    with _scratch_copy(target, paths) as backup:
        try:
            changed = _sync_back(scratch, target, paths)
        except BaseException:
            _sync_back(backup, target, paths)
            raise
    strays = stray_files(target, paths)
    if strays:
        return DirResult(
            str(target),
            engine,
            mode,
            False,
            dry_run,
            verdicts,
            state,
            tuple(changed),
            message=f"leftover files in the target: {', '.join(strays[:5])}",
        )
    return DirResult(str(target), engine, mode, True, dry_run, verdicts, state, tuple(changed))
