"""Verify: a series onto a commit, in a temporary index (``git apply --cached``),
never touching the user's checkout.

The whole series goes through in ONE git call forward (a few on a very long series)
and one back; only when that fails or reports an offset are patches re-run one by
one to name the culprit. Each patch's status comes from
:func:`forktool.engine.attempt.classify`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from forktool.config import ApplyRule
from forktool.engine import Progress
from forktool.engine.attempt import (
    Attempt,
    HunkPlacement,
    PatchVerdict,
    acceptable,
    allows_offset,
    classify,
    exact_note,
    hunk_placements,
    is_exact,
    precheck,
    read_git_apply,
    try_patch,
)
from forktool.fork import Fork, Patch
from forktool.git import Git, Started, TempIndex, git_apply_args

# git only warns when a file's mode is not the one the patch was made against, then
# applies anyway: the patch is then tried on its own, where the warning fails it.
_GIT_MODE_WARNING = re.compile(r"^warning: .+ has type \d+, expected \d+$", re.MULTILINE)


@dataclass(frozen=True)
class VerifyResult:
    base: str
    base_commit: str
    ok: bool
    round_trip: bool
    patches: tuple[PatchVerdict, ...]
    allow_offset: bool = False
    message: str = ""
    rule: ApplyRule = "exact"

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "base": self.base,
            "base_commit": self.base_commit,
            "ok": self.ok,
            "round_trip": self.round_trip,
            "rule": self.rule,
            "patches": [p.to_json() for p in self.patches],
        }
        if self.message:
            data["message"] = self.message
        return data


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
            args = [*self.config, *git_apply_args([p.path for p in chunk], reverse=self.reverse)]
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
    Under the fork's ``apply_rule: dpkg`` offsets are accepted (and reported).
    """
    patches = fork.patches
    rule = fork.config.apply_rule
    allow_offset = allow_offset or allows_offset(rule)
    if not patches:
        return VerifyResult(
            base,
            base_commit,
            False,
            False,
            (),
            allow_offset,
            "the series lists no patches: there is nothing to verify",
            rule,
        )
    base_tree = git.tree_id(base_commit)
    with git.temp_index(base_tree) as index:
        with _SeriesRun(index, patches, reverse=False) as forward:
            surveys = []
            for patch in patches:
                surveys.append(_survey(patch, rule))
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
            verdicts = _verdicts_applied(index, base_tree, patches, surveys, err, base, rule)
            round_trip = _round_trip(index, patches, base_tree)
            ok = round_trip and all(acceptable(v.status, allow_offset) for v in verdicts)
            return VerifyResult(
                base, base_commit, ok, round_trip, tuple(verdicts), allow_offset, rule=rule
            )
        verdicts = _up_to_first_failure(
            index, base_tree, patches, surveys, (applied, err), early, base, rule
        )
    return VerifyResult(base, base_commit, False, False, tuple(verdicts), allow_offset, rule=rule)


@dataclass(frozen=True)
class _Survey:
    """What verify keeps of one patch's parse: its early verdict, or the hunks'
    places when exact and how many file diffs git will report."""

    early: PatchVerdict | None
    placements: tuple[HunkPlacement, ...]
    files: int
    note: str = ""  # what an exact verdict says (an empty patch, hand-edited hunk headers)


def _survey(patch: Patch, rule: ApplyRule) -> _Survey:
    parsed = patch.parse()
    early = precheck(patch, "git", parsed, rule)
    note = exact_note(parsed, rule)
    return _Survey(early, tuple(hunk_placements(parsed, {}, False)), len(parsed.files), note)


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
    rule: ApplyRule,
) -> list[PatchVerdict]:
    """Verdicts of ``patches``, which git applied onto ``index`` in one call (``err``
    its output): exact from the parse, unless git reported an offset (then read from
    its output, or, if that cannot be matched up, from a patch-by-patch run)."""
    if "offset" not in err:
        return [_exact_verdict(p, s) for p, s in zip(patches, surveys, strict=True)]
    groups = _applied_groups(patches, surveys, err)
    if groups is None or len(groups) != len(patches):
        index.read_tree(base_tree)
        return [_culprit(index, patch, base, rule) for patch in patches]
    verdicts = []
    for patch, survey, group in zip(patches, surveys, groups, strict=True):
        if "offset" in group:
            verdicts.append(
                classify(
                    patch,
                    read_git_apply(patch.parsed, group, True, False),
                    None,
                    False,
                    base,
                    rule,
                )
            )
        else:
            verdicts.append(_exact_verdict(patch, survey))
    return verdicts


def _exact_verdict(patch: Patch, survey: _Survey) -> PatchVerdict:
    return PatchVerdict(patch.name, "exact", survey.note, survey.placements)


def _up_to_first_failure(
    index: TempIndex,
    base_tree: str,
    patches: Sequence[Patch],
    surveys: Sequence[_Survey],
    forward: tuple[bool, str],
    early: int,
    base: str,
    rule: ApplyRule,
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
        verdicts = _verdicts_applied(
            index, base_tree, patches[:good], surveys[:good], err, base, rule
        )
    position = good
    while position < len(patches):
        patch, survey = patches[position], surveys[position]
        verdict = survey.early or _culprit(index, patch, base, rule)
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


def _culprit(index: TempIndex, patch: Patch, base: str, rule: ApplyRule = "exact") -> PatchVerdict:
    """One patch tried on ``index`` (the patches before it applied): its verdict, and
    the patch applied there when it applies."""
    attempt = try_patch(index, patch)
    fuzzy: Attempt | None = None
    reverse_ok = False
    if not attempt.ok:
        reverse_ok = is_exact(try_patch(index, patch, reverse=True, check=True))
        if not reverse_ok:
            fuzzy = try_patch(index, patch, context=1, check=True)
    return classify(patch, attempt, fuzzy, reverse_ok, base, rule)


def _round_trip(index: TempIndex, patches: Sequence[Patch], base_tree: str) -> bool:
    ok, _ = _apply_series(index, patches, reverse=True)
    return ok and index.write_tree() == base_tree


def resolve_base(fork: Fork, git: Git, base: str | None) -> tuple[str, str]:
    """(name, commit) of what to verify against: ``base``, or the pin's tree (the
    imported release tarball when the fork has one)."""
    from forktool.engine.pin_state import require_tree

    if base is None:
        return require_tree(fork.config, git)
    return base, git.resolve_commit(base, what="base revision")
