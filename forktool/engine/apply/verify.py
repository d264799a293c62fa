"""Verify: a series onto a commit, in a temporary index (``git apply --cached``),
never touching the user's checkout.

The whole series goes through in ONE git call forward (a few on a very long series)
and one back; only when that fails or reports an offset are patches re-run one by
one to name the culprit. Each patch's status comes from
:func:`forktool.engine.apply.attempt.classify`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from forktool.config import ApplyRule
from forktool.engine import Progress
from forktool.engine.apply.anchors import first_past_the_end, refused_at_the_end
from forktool.engine.apply.applier_output import read_git_apply
from forktool.engine.apply.attempt import (
    classify,
    fuzz_probe,
    placed_without_anchors,
    refuse_made_twice,
    reverse_state,
    try_patch,
)
from forktool.engine.apply.early import EarlyStart, default_jobs, side_by_side
from forktool.engine.apply.restored import Answer, round_trip_answer
from forktool.engine.apply.series_run import RoundTrip, apply_series
from forktool.engine.apply.survey import (
    Survey,
    applied_groups,
    exact_verdict,
    first_to_try,
    survey_of,
    survey_rest,
)
from forktool.engine.apply.verdict import (
    Attempt,
    PatchVerdict,
    acceptable,
    allows_offset,
    trip_not_tried,
)
from forktool.fork import Fork, Patch
from forktool.git import Git, TempIndex


class VerifyResult(NamedTuple):
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
        message = self.message or trip_not_tried(self.patches, self.round_trip, self.allow_offset)
        if message:
            data["message"] = message
        return data


def verify_series(
    fork: Fork,
    git: Git,
    *,
    base: str,
    base_commit: str,
    allow_offset: bool = False,
    progress: Progress | None = None,
    keep_going: bool = False,
    jobs: int | None = None,
    early: EarlyStart | None = None,
) -> VerifyResult:
    """Apply the series onto ``base_commit`` and back, proving the round trip.

    git applies the whole series in one call while each patch is parsed (once, and
    not kept) for the checks made on its text alone; on a long series and a machine
    with two cores, file-disjoint parts of the series go through side by side
    (:func:`verify_side_by_side`, ``jobs``: at most that many git processes, default
    :func:`default_jobs`). Every patch after the first one that does not apply is
    ``not-tried`` (unless its text alone condemns it); with ``keep_going`` each later
    patch is tried on the tree without the failed ones, and says so (``without``).
    ``early``: git's work the command started before the fork was loaded
    (:func:`early_start`), used when it was started on the series' files.
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
    workers = default_jobs() if jobs is None else max(1, jobs)
    if early is not None and early.serves([p.path for p in patches]):
        verdicts, round_trip, why = _verify_on(
            early, patches, base, workers, rule, progress, keep_going
        )
        verdicts = refuse_made_twice(git, base_commit, patches, verdicts)
        return _result(base, base_commit, verdicts, round_trip, allow_offset, rule, why)
    if early is not None:  # started on another series than the one loaded
        early.stop()
    base_tree = git.tree_id(base_commit)
    with git.temp_index(base_tree) as index:
        fresh = EarlyStart(index, base_tree, (), None)
        verdicts, round_trip, why = _verify_on(
            fresh, patches, base, workers, rule, progress, keep_going
        )
    verdicts = refuse_made_twice(git, base_commit, patches, verdicts)
    return _result(base, base_commit, verdicts, round_trip, allow_offset, rule, why)


def _verify_on(
    started: EarlyStart,
    patches: Sequence[Patch],
    base: str,
    workers: int,
    rule: ApplyRule,
    progress: Progress | None,
    keep_going: bool,
) -> Answer:
    """(verdicts, round trip, why not) of ``patches`` onto ``started.index`` (the base
    tree), side by side or in one call; ``started`` may hold either already under way.
    Under dpkg-source's rule a hunk git applied short of the file's end GNU patch holds
    it to is refused there (:func:`_ends_held`)."""
    surveys: list[Survey] = []
    answer = _answer_on(started, patches, surveys, base, workers, rule, progress, keep_going)
    if rule != "dpkg":
        return answer
    return _ends_held(started.index, started.base_tree, patches, surveys, answer, keep_going, base)


def _answer_on(
    started: EarlyStart,
    patches: Sequence[Patch],
    surveys: list[Survey],
    base: str,
    workers: int,
    rule: ApplyRule,
    progress: Progress | None,
    keep_going: bool,
) -> Answer:
    index, base_tree = started.index, started.base_tree
    side = started.bins is not None or (
        started.trip is None and side_by_side(workers, len(patches))
    )
    if side:
        from forktool.engine.apply.side_by_side import verify_side_by_side  # bins: only here

        done = verify_side_by_side(
            index, base_tree, patches, surveys, base, workers, rule, progress, started.bins
        )
        survey_rest(patches, surveys, rule, progress)
        if done is not None:
            return done[0], done[1], ""
        with RoundTrip(index, patches) as trip:
            return _series_verdicts(
                index, base_tree, patches, surveys, trip, base, keep_going, rule
            )
    with started.trip or RoundTrip(index, patches) as trip:
        for patch in patches:
            surveys.append(survey_of(patch, rule))
            if progress:
                progress(1)
        return _series_verdicts(index, base_tree, patches, surveys, trip, base, keep_going, rule)


def _ends_held(
    index: TempIndex,
    base_tree: str,
    patches: Sequence[Patch],
    surveys: Sequence[Survey],
    answer: Answer,
    keep_going: bool,
    base: str,
) -> Answer:
    """``answer`` with GNU patch's end anchors held: a hunk with less context after its
    change than before ended with its file when the patch was made, and GNU patch at
    fuzz 0 (so dpkg-source) applies it only at the file's end, where git applies it
    wherever its lines are (forktool.engine.apply.anchors). The first applied hunk that
    does not end its file refuses its patch (fuzz, as GNU patch calls it); the patches
    after it are not tried, or with ``keep_going`` are tried again without it (and the
    ends checked again, until none is short of its file's end)."""
    verdicts, round_trip, why = answer
    while (found := _past_the_end(index, base_tree, patches, surveys, verdicts)) is not None:
        position, refused = found
        if not keep_going:
            later = _not_tried(patches[position + 1 :], refused.patch)
            return [*verdicts[:position], refused, *later], False, why
        verdicts = _again_without(index, base_tree, patches, surveys, verdicts, found, base)
        round_trip, why = False, ""
    return verdicts, round_trip, why


def _past_the_end(
    index: TempIndex,
    base_tree: str,
    patches: Sequence[Patch],
    surveys: Sequence[Survey],
    verdicts: Sequence[PatchVerdict],
) -> tuple[int, PatchVerdict] | None:
    """(position, refusal) of the first applied patch with a hunk short of the end of
    its file, the files' lengths followed through the patches that applied (those
    that failed left out, as ``--keep-going`` leaves them out); None when none is."""
    on = [i for i, v in enumerate(verdicts) if left_applied(v)]
    found = first_past_the_end(
        [(surveys[i].ends, surveys[i].changes, verdicts[i].hunks) for i in on],
        lambda paths: index.line_counts(base_tree, paths),
    )
    if found is None:
        return None
    position = on[found[0]]
    refused = refused_at_the_end(patches[position], *found[1:])
    return position, refused._replace(without=verdicts[position].without)


def _again_without(
    index: TempIndex,
    base_tree: str,
    patches: Sequence[Patch],
    surveys: Sequence[Survey],
    verdicts: Sequence[PatchVerdict],
    found: tuple[int, PatchVerdict],
    base: str,
) -> list[PatchVerdict]:
    """The verdicts again from the patch ``found`` refuses on: the patches before it
    that applied put back on the base tree, then the rest tried without it (and
    without every patch that failed before it), as ``--keep-going`` tries them."""
    position, refused = found
    rule: ApplyRule = "dpkg"  # the end anchors are dpkg-source's rule alone
    index.read_tree(base_tree, cache=True)
    kept = [
        p for p, v in zip(patches[:position], verdicts[:position], strict=True) if left_applied(v)
    ]
    ok, _ = apply_series(index, kept, reverse=False, unanchored=True)
    if not ok:  # what applied one way did not the other: stop here, as without keep-going
        return [*verdicts[:position], refused, *_not_tried(patches[position + 1 :], refused.patch)]
    failed = [*refused.without, refused.patch]
    later = _going_on(index, patches, surveys, position + 1, failed, base, rule)
    return [*verdicts[:position], refused, *later]


def _result(
    base: str,
    base_commit: str,
    verdicts: Sequence[PatchVerdict],
    round_trip: bool,
    allow_offset: bool,
    rule: ApplyRule,
    why: str = "",
) -> VerifyResult:
    ok = round_trip and all(acceptable(v.status, allow_offset) for v in verdicts)
    return VerifyResult(
        base, base_commit, ok, round_trip, tuple(verdicts), allow_offset, why, rule=rule
    )


def _series_verdicts(
    index: TempIndex,
    base_tree: str,
    patches: Sequence[Patch],
    surveys: Sequence[Survey],
    trip: RoundTrip,
    base: str,
    keep_going: bool,
    rule: ApplyRule,
) -> Answer:
    """(verdicts, round trip, why not) from the series' one call forward and its revert
    (``trip``, under way on ``index``): read from the forward call when it applied and
    no patch must be tried on its own, the round trip proven by the revert; otherwise
    found patch by patch up to the failure (no round trip)."""
    forward = trip.wait_forward()
    applied, err = forward
    early = first_to_try(surveys, err)
    if applied and early == len(patches):
        restored = False

        def restore() -> None:
            nonlocal restored
            trip.stop_back()
            restored = True
            index.read_tree(base_tree, cache=True)

        verdicts = _verdicts_applied(index, restore, patches, surveys, err, base, rule)
        tree = None
        if restored:  # the patches were applied again one by one: revert them now
            back, _ = apply_series(index, patches, reverse=True)
        else:
            back, _ = trip.wait_back()
            tree = trip.tree
        return round_trip_answer(index, patches, verdicts, base_tree, back, rule, tree)
    trip.stop_back()
    index.read_tree(base_tree, cache=True)
    verdicts = _with_failures(index, patches, surveys, forward, early, base, keep_going, rule)
    if all(left_applied(v) and not v.without for v in verdicts):
        # Every patch went on, one by one (a patch placed without git's anchors, say):
        # the index holds them all, so the revert proves the round trip here too. The
        # tree it must give back is compared whole, so no anchor is needed to trust it.
        back, _ = apply_series(index, patches, reverse=True, unanchored=True)
        return round_trip_answer(index, patches, verdicts, base_tree, back, rule)
    return verdicts, False, ""


def _verdicts_applied(
    index: TempIndex,
    restore: Callable[[], None],
    patches: Sequence[Patch],
    surveys: Sequence[Survey],
    err: str,
    base: str,
    rule: ApplyRule,
) -> list[PatchVerdict]:
    """Verdicts of ``patches``, which git applied onto ``index`` in one call (``err``
    its output): exact from the parse, unless git reported an offset (then read from
    its output, or, if that cannot be matched up, from a patch-by-patch run from the
    state ``restore`` brings the index back to)."""
    if "offset" not in err:
        return [exact_verdict(p, s) for p, s in zip(patches, surveys, strict=True)]
    groups = applied_groups(patches, surveys, err)
    if groups is None or len(groups) != len(patches):
        restore()
        return [_culprit(index, patch, base, rule) for patch in patches]
    verdicts = []
    for patch, survey, group in zip(patches, surveys, groups, strict=True):
        if "offset" in group:
            verdicts.append(
                classify(
                    patch, read_git_apply(patch.parsed, group, True, False), None, False, base, rule
                )
            )
        else:
            verdicts.append(exact_verdict(patch, survey))
    return verdicts


def _with_failures(
    index: TempIndex,
    patches: Sequence[Patch],
    surveys: Sequence[Survey],
    forward: tuple[bool, str],
    early: int,
    base: str,
    keep_going: bool,
    rule: ApplyRule,
) -> list[PatchVerdict]:
    """Verdicts when the series does not go through (``index`` holds the base tree,
    ``forward`` is the whole series' one call, ``early`` the first patch to try on its
    own): the patches before the first failure, the failure (named as a
    patch-by-patch run names it), the rest not tried. With ``keep_going`` the rest go
    on from the tree without the failed patch (:func:`_going_on`)."""
    found = _until_failure(index, index.snapshot(), patches, surveys, forward, early, base, rule)
    if keep_going and len(found) < len(patches):
        found += _going_on(index, patches, surveys, len(found), [found[-1].patch], base, rule)
    first = found[-1].patch
    for patch, survey in zip(patches[len(found) :], surveys[len(found) :], strict=True):
        found.append(survey.early or _not_tried([patch], first)[0])
    return found


def _going_on(
    index: TempIndex,
    patches: Sequence[Patch],
    surveys: Sequence[Survey],
    start: int,
    failed: Sequence[str],
    base: str,
    rule: ApplyRule,
) -> list[PatchVerdict]:
    """Verdicts of ``patches[start:]`` tried on ``index`` as it stands (what applied
    before ``start``, the ``failed`` patches left out): in one call, and again after
    each failure with that patch left out too. Every verdict names the patches left
    out before it."""
    verdicts: list[PatchVerdict] = []
    left_out = list(failed)
    while start < len(patches):
        segment, rest = patches[start:], surveys[start:]
        restore = index.snapshot()
        forward = apply_series(index, segment, reverse=False)
        early = first_to_try(rest, forward[1])
        if forward[0] and early == len(segment):
            found = _verdicts_applied(index, restore, segment, rest, forward[1], base, rule)
        else:
            found = _until_failure(index, restore, segment, rest, forward, early, base, rule)
        verdicts += [v._replace(without=tuple(left_out)) for v in found]
        start += len(found)
        if not left_applied(found[-1]):
            left_out.append(found[-1].patch)
    return verdicts


def _not_tried(patches: Sequence[Patch], first: str) -> list[PatchVerdict]:
    return [
        PatchVerdict(p.name, "not-tried", f"not tried: {first} does not apply before it")
        for p in patches
    ]


def left_applied(verdict: PatchVerdict) -> bool:
    """Whether a patch's verdict left it applied (exact, or at an offset: git applies
    both, whatever the fork's rule accepts)."""
    return acceptable(verdict.status, allow_offset=True)


def _until_failure(
    index: TempIndex,
    restore: Callable[[], None],
    patches: Sequence[Patch],
    surveys: Sequence[Survey],
    forward: tuple[bool, str],
    early: int,
    base: str,
    rule: ApplyRule,
) -> list[PatchVerdict]:
    """Verdicts from the start of ``patches``, tried on ``index`` as ``restore`` brings
    it back (``forward``: their one call from there), up to and including the first
    that fails, or of all of them; the ones that apply are left applied.

    Where git stopped is read from the one call's output (the patches it applied);
    when that cannot be matched to the patches, it is found by bisecting on prefixes
    of the series: O(log n) applies, never one per patch."""
    restore()  # the call may have applied them all, or (in chunks) some
    if forward[0]:
        good = early
    else:
        groups = applied_groups(patches, surveys, forward[1])
        applied = len(groups) if groups is not None else None
        if applied is None:
            applied = _bisect_applying_prefix(index, restore, patches, early)
        good = min(applied, early)
    verdicts: list[PatchVerdict] = []
    if good:
        ok, err = apply_series(index, patches[:good], reverse=False)
        if not ok:  # the output misled us (a hunk's text can mimic it): ask git again
            good = _bisect_applying_prefix(index, restore, patches, good)
            restore()
            ok, err = apply_series(index, patches[:good], reverse=False)
        verdicts = _verdicts_applied(
            index, restore, patches[:good], surveys[:good], err, base, rule
        )
    position = good
    while position < len(patches):
        patch, survey = patches[position], surveys[position]
        verdict = survey.early or _culprit(index, patch, base, rule)
        verdicts.append(verdict)
        position += 1
        if not left_applied(verdict):
            break
    return verdicts


def _bisect_applying_prefix(
    index: TempIndex, restore: Callable[[], None], patches: Sequence[Patch], limit: int
) -> int:
    """The length of the longest prefix of ``patches[:limit]`` that applies in one call
    on the index as ``restore`` brings it back."""
    low, high = 0, limit  # patches[:low] applies; patches[:high + 1] does not, or high == limit
    while low < high:
        middle = (low + high + 1) // 2
        restore()
        ok, _ = apply_series(index, patches[:middle], reverse=False)
        if ok:
            low = middle
        else:
            high = middle - 1
    restore()
    return low


def _culprit(index: TempIndex, patch: Patch, base: str, rule: ApplyRule = "exact") -> PatchVerdict:
    """One patch tried on ``index`` (the patches before it applied): its verdict, and
    the patch applied there when it applies."""
    attempt = try_patch(index, patch)
    fuzzy: Attempt | None = None
    placed: Attempt | None = None
    reverse_ok = moved = False
    if not attempt.ok:
        reverse_ok, moved = reverse_state(index, patch)
        if not reverse_ok:
            placed = placed_without_anchors(index, patch)
            if placed is None and attempt.fuzz_may_place:
                fuzzy = fuzz_probe(index, patch)
    return classify(patch, attempt, fuzzy, reverse_ok, base, rule, placed, moved)
