"""``sync TAG --dry-run``: what a sync would retire, refresh and bump, written nowhere,
and the decisions a human makes at each new release (the run reads them too)."""

from __future__ import annotations

import shlex
from collections.abc import Collection, Sequence

from forktool.engine.apply.verdict import says_already_applied
from forktool.engine.patches.refresh import plan_refresh
from forktool.engine.patches.refresh_moves import Series
from forktool.engine.patches.refresh_result import RefreshEntry
from forktool.engine.release.check import NO_PR_HINT, no_pr_line
from forktool.engine.release.pin_bump import plan_bump
from forktool.engine.release.pin_state import require_tree
from forktool.engine.release.sync_report import PinChange, Retired, SyncReport
from forktool.engine.release.tarball import carried_files
from forktool.engine.retirement.absorbed import absorbed
from forktool.engine.retirement.absorption import AbsorbedResult, PatchAbsorption
from forktool.engine.retirement.retire import witnesses
from forktool.fork import Fork
from forktool.git import Git
from forktool.model.revision import Revision, tarball_tree

# Verdicts a human decides on at each new release: the witnesses disagree (revisit), or
# the patch waits for an upstream change that this release may carry (pending).
HUMAN_VERDICTS = ("revisit", "pending")


def plan_sync(fork: Fork, git: Git, revision: Revision, tree: str | None = None) -> SyncReport:
    """What ``sync TAG`` would do: retire, refresh, bump. Nothing is written. ``tree``:
    TAG's release tarball import, the tree the refresh is planned on (a tarball-import
    pin without one is planned on the tag, with a note saying so)."""
    tag, tag_commit = revision.name, revision.commit
    report = absorbed(fork, git, revision)
    retiring = {p.patch for p in report.retirable()}
    kept = kept_verdicts(report, retiring)
    refreshed = _planned_refresh(fork, git, tag, tag_commit, tree, retiring)
    bump = plan_bump(fork.config, git, revision, dry_run=True, tree=tree)
    present = {e.patch for e in refreshed if e.status == "conflict" and already_on(e)}
    conflicts = tuple(
        f"{e.patch}: {e.message}"
        for e in refreshed
        if e.status == "conflict" and e.patch not in present
    )
    decisions = already_carried(kept, present)
    notes = human_notes(kept)
    # A fix retired at an earlier release that TAG lacks (a release-branch commit, or a
    # pin moving back): the sync's check would fail on it, so the plan says so first.
    notes += tuple(lost.told(tag) for lost in bump.lost_fixes)
    if decisions:
        notes += (decision_note(decisions, tag),)
    if fork.config.pin_import is not None and tree is None:
        notes += (
            f"the fork pins a release tarball: the refresh was planned on the tag {tag} "
            "with the files the pinned tarball adds to its tag; sync with '--tarball "
            f"FILE...' ({tag}'s release tarball)",
        )
    return SyncReport(
        tag=tag,
        tag_commit=tag_commit,
        previous_tag=fork.config.pin_tag,
        branch=None,
        stage="retire",
        retired=tuple(retired_entry(report, name) for name in sorted(retiring)),
        kept=kept,
        refreshed=refreshed,
        pins=tuple(PinChange(e.file, e.line, e.old, e.new) for e in bump.edits),
        conflicts=conflicts,
        notes=notes,
        dry_run=True,
        message="DRY RUN: nothing was written",
        merge_tag=fork.config.layout == "merged",
        decisions=decisions,
        decide=decision_command(decisions, tag) if decisions else "",
    )


def _planned_refresh(
    fork: Fork, git: Git, tag: str, tag_commit: str, tree: str | None, retiring: set[str]
) -> tuple[RefreshEntry, ...]:
    """The refresh of the patches kept, planned on TAG (or on its tarball import)."""
    kept = [p for p in fork.patches if p.name not in retiring]
    carried = carried_files(fork.config, git, tag_commit) if tree is None else ()
    if not kept:
        return ()
    onto = tarball_tree(tag) if tree else tag
    # each patch's pre-image is built where the series applies: the tarball on such a pin
    series = Series.of(fork, require_tree(fork.config, git)[1], kept)
    return tuple(plan_refresh(git, onto, series, onto_commit=tree or tag_commit, carried=carried))


def already_on(entry: RefreshEntry) -> bool:
    """The refresh found the patch's change already on the tag."""
    return says_already_applied(entry.message)


def retired_entry(report: AbsorbedResult, name: str) -> Retired:
    """The report's line for a retired patch: the same witnesses the record gets."""
    verdict = report.patch(name)
    return Retired(
        name, verdict.upstream_commits, verdict.first_release, witnesses(verdict, report.tag, None)
    )


def kept_verdicts(report: AbsorbedResult, retiring: Collection[str]) -> tuple[PatchAbsorption, ...]:
    """The absorbed verdicts of the patches the sync keeps, in series order."""
    return tuple(p for p in report.patches if p.patch not in retiring)


def human_notes(kept: Sequence[PatchAbsorption]) -> tuple[str, ...]:
    """A note per patch a human decides on (``revisit``; ``pending`` with its PR), and one
    note for every pending patch with no PR named (a distribution's own patches, often:
    one line however many, not one on every sync for each)."""
    notes = []
    silent = []
    for verdict in kept:
        if verdict.verdict not in HUMAN_VERDICTS:
            continue
        if verdict.verdict == "pending" and not verdict.upstream_pr:
            silent.append(verdict.patch)
            continue
        notes.append(f"{verdict.patch}: {verdict.verdict}: {verdict.reason}")
    if silent:
        notes.append(f"{no_pr_line(silent)}: waiting for an upstream change ({NO_PR_HINT})")
    return tuple(notes)


def already_carried(
    kept: Sequence[PatchAbsorption],
    present: Collection[str] = (),
) -> tuple[str, ...]:
    """The kept patches whose change the tag already carries (they reverse-apply there,
    or a 3-way merge of them changes nothing; ancestry did not retire them), in series
    order: ``present`` (refresh found
    them) and every other the absorbed evidence shows, so one round decides them all."""
    return tuple(
        verdict.patch
        for verdict in kept
        if verdict.patch in present or any(e.kind == "content-present" for e in verdict.evidence)
    )


def decision_command(names: tuple[str, ...], tag: str) -> str:
    """The one command that records every decision: retire them together, with a reason."""
    quoted = " ".join(shlex.quote(name) for name in names)
    return f"forktool retire {quoted} --tag {shlex.quote(tag)} --force --reason '...'"


def decision_note(names: tuple[str, ...], tag: str) -> str:
    return (
        f"{len(names)} patch(es) already on {tag} (each change is there: it reverse-applies, "
        "or a 3-way merge of it changes nothing; but no mapped commit proves it): "
        f"{', '.join(names)}; record every decision at once, before "
        f"the sync: {decision_command(names, tag)} (or map their upstream commits: forktool "
        "upstream resolve --write, forktool map suggest --write)"
    )
