"""Is this patch in that release? Ancestry decides; other witnesses can only object.

For every patch of the series, against a release tag:

* **ancestry** of every mapped upstream commit, in bulk: one ``cat-file
  --batch-check`` proves each commit exists (a missing commit would otherwise look
  like an ancestor), then ONE ``rev-list`` answers for all of them;
* **first release**: the earliest release tag in version order containing every
  mapped commit (:func:`forktool.engine.retirement.releases.first_releases`);
* **evidence** that can contradict or support ancestry, each gathered in bulk over
  the tag's history since the pin, and only where it can change a verdict: for a
  patch the tag lacks, ``(cherry picked from commit X)`` trailers (one ``git log``)
  and identical changes (one ``git patch-id --stable`` over the patch files, one over
  ``git log -p``); for a patch the tag contains, reverts of its commits
  (:mod:`forktool.engine.retirement.reverts`); for every patch, how it applies on the tag (one
  ``git apply --check`` forward and one in reverse, each patch checked against the
  tag's tree). A revert, or a forward apply (exact or at an offset), objects to
  ancestry.

The verdict rule lives in one place, :func:`decide`; the second witness (probe
results) is combined with it in one place, :func:`combine`. The witnesses are
gathered in :mod:`~forktool.engine.retirement.evidence`, what must be known first is
checked in :mod:`~forktool.engine.retirement.knowledge`, and the result types are in
:mod:`~forktool.engine.retirement.absorption`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from forktool.engine import Progress
from forktool.engine.retirement.absorption import (
    AbsorbedResult,
    Evidence,
    EvidenceKind,
    Outcome,
    PatchAbsorption,
    ProbeWitness,
    Verdict,
)
from forktool.engine.retirement.apply_states import substantial
from forktool.engine.retirement.evidence import Witnesses, gather_witnesses
from forktool.engine.retirement.knowledge import (
    checked_releases,
    first_release_map,
    refuse_shallow,
    require_commits,
)
from forktool.errors import FatalError
from forktool.fork import Fork, Patch
from forktool.git import Git, short
from forktool.model.arm_results import ArmResults, GateVerdict
from forktool.model.revision import Revision

# Evidence that, without ancestry, says the change may already be in the tag.
_PRESENCE: tuple[EvidenceKind, ...] = ("cherry-pick", "patch-id", "content-present")
# Evidence that, with ancestry, says the change is absent from the tag after all.
_ABSENCE: tuple[EvidenceKind, ...] = (
    "revert",
    "still-applies",
    "still-applies-at-offset",
    "hunks-still-apply",
)


def decide(
    commits: Sequence[str],
    not_in_tag: Sequence[str],
    evidence: Sequence[Evidence],
    tag: str,
    *,
    pending_pr: str | None = None,
    pending: bool = False,
) -> tuple[Verdict, bool | None, str]:
    """The one verdict rule: (verdict, ancestor, the reason in words)."""
    if not commits and pending:
        waiting = f"PR {pending_pr}" if pending_pr else "an upstream change"
        return (
            "pending",
            None,
            f"waiting for {waiting}: never retired until its commit is in upstream.map "
            "(forktool upstream resolve)",
        )
    if not commits:
        return "fork-only", None, "mapped to 'none': no upstream commit can retire it"
    if not not_in_tag:
        named = ", ".join(short(c) for c in commits)
        objection = _absence_reason(evidence, tag)
        if objection:
            return "revisit", True, f"{named} in {tag} by ancestry, yet {objection}"
        return "retire", True, f"{named} in {tag} by ancestry"
    absent = ", ".join(short(c) for c in not_in_tag)
    partly = (
        f" ({len(commits) - len(not_in_tag)} of {len(commits)} mapped commits are)"
        if len(commits) > 1
        else ""
    )
    seen = [e for e in evidence if e.kind in _PRESENCE]
    if seen:
        kinds = ", ".join(dict.fromkeys(e.kind for e in seen))
        return (
            "revisit",
            False,
            f"{absent} not an ancestor of {tag}{partly}, but {kinds} evidence says the change "
            f"may be there: decide by hand (retire --force --reason, or keep)",
        )
    return "keep", False, f"{absent} not an ancestor of {tag}{partly}"


def _absence_reason(evidence: Sequence[Evidence], tag: str) -> str:
    """Why the change is absent from ``tag`` although ancestry says it is in ("" if
    nothing says so): a revert first, then a forward apply."""
    kinds = {e.kind for e in evidence}
    reverts = [e for e in evidence if e.kind == "revert"]
    if reverts:
        named = "; ".join(e.detail for e in reverts)
        return (
            f"{named}: the fix is not in {tag}; decide by hand "
            "(keep it, or retire --force --reason)"
        )
    if "still-applies" in kinds:
        return (
            f"the patch still applies forward exactly on {tag}: the change is absent there "
            "(reverted, or lost in a merge)"
        )
    if "still-applies-at-offset" in kinds:
        return (
            f"the patch still applies forward (at an offset) on {tag}: the change is absent "
            "there (reverted, or lost in a merge)"
        )
    for e in evidence:
        if e.kind == "hunks-still-apply" and e.hunks is not None and substantial(e.hunks):
            return (
                f"{e.hunks[0]} of its {e.hunks[1]} hunks still apply forward on {tag} and do "
                "not reverse-apply there: most of the change is absent (a different change "
                "upstream, reverted, or lost in a merge); decide by hand"
            )
    return ""


def combine(verdict: Verdict, full: GateVerdict, arm: GateVerdict) -> tuple[Outcome, str]:
    """The one rule joining ancestry with a leave-one-out probe (docs/retirement.md)."""
    if full == "fail":
        if arm == "pass":
            return "now-harmful", "the full series fails on the tag and passes without this patch"
        return "broken-on-tag", "the full series fails on the tag, with and without this patch"
    if arm == "fail":
        if verdict == "retire":
            return (
                "still-required",
                "ancestry says absorbed, but the series fails without this patch: "
                "find out why before retiring it",
            )
        return "still-required", "the series fails without this patch"
    if verdict == "retire":
        return "retired", "ancestry and the probe agree: the tag no longer needs this patch"
    if verdict == "keep":
        return (
            "probe-blind",
            "the probe passes without the patch but the tag does not contain the fix: "
            "keep it, and fix the probe so it exercises the change",
        )
    return (
        "retirement-unconfirmed",
        "the probe passes without the patch, but ancestry cannot confirm the tag has the fix",
    )


@dataclass(frozen=True)
class Shared:
    """What :func:`absorbed` finds the same whatever the tag: checked once for many."""

    first: dict[str, str | None]


def shared_knowledge(fork: Fork, git: Git) -> Shared:
    """Refuse a shallow clone or a missing commit, and find first releases: once."""
    refuse_shallow(git, fork.config)
    require_commits(fork, git)
    return Shared(first_release_map(fork, git, checked_releases(fork, git)))


def absorbed(
    fork: Fork,
    git: Git,
    revision: Revision,
    *,
    probe: ArmResults | None = None,
    progress: Progress | None = None,
    shared: Shared | None = None,
) -> AbsorbedResult:
    """Per patch: is it in ``revision`` by ancestry, its first release, and the other
    witnesses. ``revision`` is the tag as resolved at the command (or, for ``forecast``,
    the branch head: any commit, named so).

    ``shared`` (from :func:`shared_knowledge`) skips what does not depend on the tag
    when one run judges several tags (``forecast``).

    Exit-2 conditions (raised as FatalError, nothing changed): shallow clone, a mapped
    or pinned commit that is missing or is not a commit, probe results that do not
    cover the series.
    """
    tag, tag_commit = revision.name, revision.commit
    if shared is None:
        refuse_shallow(git, fork.config)
        require_commits(fork, git)
    probe_full = require_probe_covers(probe, fork, tag) if probe is not None else None
    releases = checked_releases(fork, git) if shared is None else None
    seen = gather_witnesses(fork, git, tag, tag_commit, releases)
    first = shared.first if shared is not None else seen.first
    results = []
    for patch in fork.patches:
        results.append(_judge(patch, tag, seen, first[patch.name], probe, probe_full))
        if progress:
            progress(1)
    return AbsorbedResult(tag, tag_commit, tuple(results), probe_full)


def _judge(
    patch: Patch,
    tag: str,
    seen: Witnesses,
    first_release: str | None,
    probe: ArmResults | None,
    probe_full: GateVerdict | None,
) -> PatchAbsorption:
    """One patch's verdict by :func:`decide`, joined with its probe arm by :func:`combine`."""
    not_in_tag = seen.not_in_tag(patch)
    evidence = seen.evidence(patch, tag)
    verdict, is_ancestor, reason = decide(
        patch.commits,
        not_in_tag,
        evidence,
        tag,
        pending=patch.pending,
        pending_pr=patch.upstream_pr,
    )
    witness = None
    if probe is not None and probe_full is not None:
        arm = probe.arms[patch.name]
        outcome, detail = combine(verdict, probe_full, arm)
        witness = ProbeWitness(arm, outcome, detail)
    return PatchAbsorption(
        patch.name,
        patch.commits,
        verdict,
        is_ancestor,
        first_release,
        tuple(evidence),
        reason,
        not_in_tag,
        witness,
        patch.upstream_pr,
    )


def require_probe_covers(probe: ArmResults, fork: Fork, tag: str) -> GateVerdict:
    """The full series' verdict: probe results judge TAG only when they ran there, on
    this series, with the full series and one arm per patch."""
    if probe.full is None:
        raise FatalError(f"{probe.source}: missing key 'full'", "see docs/retirement.md")
    if probe.tag is not None and probe.tag != tag:
        raise FatalError(
            f"{probe.source}: the probe ran on '{probe.tag}', not on '{tag}'",
            f"run the probe on {tag}, or pass --tag {probe.tag}",
        )
    names = [p.name for p in fork.patches]
    for name in names:
        if name not in probe.arms:
            raise FatalError(
                f"{probe.source}: no arm for '{name}'",
                "a probe must run the series without each patch in turn",
            )
    for name in probe.arms:
        if name not in names:
            raise FatalError(
                f"{probe.source}: arm '{name}' is not in the series",
                f"series patches: {', '.join(names) or '(none)'}",
            )
    return probe.full
