"""Dropping absorbed patches, and the retired fixes a pin would lose.

``retire`` removes a patch's series line, patch file, note and map line and appends
a row to the retirement record in FORK.md, for every patch whose ``absorbed``
verdict is ``retire`` (or only the named ones). A patch with any other verdict is
refused unless forced with a reason, which is recorded. Every file changes in one
:func:`~forktool.fsutil.write_files` call: all of them, or none.

Bringing a retired patch back (``retire --undo``) is
:mod:`forktool.engine.retirement.restore`'s.

Dates in the record are the current UTC date, or ``FORKTOOL_DATE`` (YYYY-MM-DD)
when set, so that runs can be reproduced.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from forktool.config import Config
from forktool.engine.retirement.absorption import AbsorbedResult, PatchAbsorption, Verdict
from forktool.errors import FatalError, command_line, some_names
from forktool.fork import Fork, Patch
from forktool.fsutil import write_files
from forktool.git import Git, is_hex40, short
from forktool.inputs import read_text
from forktool.model.record import Record, RecordEntry, parse_record
from forktool.model.series import Series
from forktool.model.upstream_map import UpstreamMap

DATE_ENV = "FORKTOOL_DATE"
FORCED_OVER_VERDICT = "FORCED over verdict"
_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")


def record_date(environ: Mapping[str, str] | None = None) -> str:
    """Today's UTC date, or ``FORKTOOL_DATE`` when set (refused unless YYYY-MM-DD)."""
    env = os.environ if environ is None else environ
    override = env.get(DATE_ENV)
    if override is None:
        return dt.datetime.now(dt.UTC).date().isoformat()
    try:
        if not _DATE.match(override):
            raise ValueError(override)
        dt.date.fromisoformat(override)
    except ValueError:
        raise FatalError(
            f"{DATE_ENV}={override!r} is not a date", f"write it as YYYY-MM-DD, or unset {DATE_ENV}"
        ) from None
    return override


def changed_paths(fork: Fork, changes: Mapping[Path, bytes | None]) -> list[str]:
    return [fork.config.rel(path) for path in changes]


def load_record(fork: Fork) -> tuple[Path, Record]:
    path = fork.config.record_path
    if not path.exists() and not path.is_symlink():
        raise FatalError(
            f"{fork.config.record}: no such file (it holds the retirement record)",
            "create it with the record markers ('forktool init' writes them), or set 'record'",
        )
    text = read_text(path, fork.config.record, follow=False)
    # A FORK.md without the section gets it appended with the first record row.
    return path, parse_record(text, fork.config.record, add_missing=True)


# -- retire ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Retirement:
    patch: str
    verdict: Verdict
    forced: bool
    entry: RecordEntry

    def to_json(self) -> dict[str, object]:
        return {
            "patch": self.patch,
            "verdict": self.verdict,
            "forced": self.forced,
            "upstream_commits": list(self.entry.commits),
            "first_release": None if self.entry.first_release == "-" else self.entry.first_release,
            "witnesses": self.entry.witnesses,
        }


@dataclass(frozen=True)
class Refusal:
    patch: str
    verdict: Verdict
    reason: str

    def to_json(self) -> dict[str, object]:
        return {"patch": self.patch, "verdict": self.verdict, "reason": self.reason}


@dataclass(frozen=True)
class RetireResult:
    tag: str
    tag_commit: str
    dry_run: bool
    retired: tuple[Retirement, ...]
    refused: tuple[Refusal, ...]
    files: tuple[str, ...]  # fork-relative paths written or removed (or that would be)
    warnings: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.refused

    def to_json(self) -> dict[str, object]:
        return {
            "tag": self.tag,
            "tag_commit": self.tag_commit,
            "dry_run": self.dry_run,
            "ok": self.ok,
            "retired": [r.to_json() for r in self.retired],
            "refused": [r.to_json() for r in self.refused],
            "files": list(self.files),
            "warnings": list(self.warnings),
        }


def _upstream_pr(patch: Patch) -> str:
    if patch.upstream_pr:
        return patch.upstream_pr
    note = patch.mapping.note if patch.mapping else ""
    return note or "-"


def witnesses(report: PatchAbsorption, tag: str, reason: str | None) -> str:
    if reason is not None:
        return f"{FORCED_OVER_VERDICT} '{report.verdict}' ({report.reason}): {reason}"
    kinds = [e.kind for e in report.evidence]
    named = ", ".join(short(c) for c in report.upstream_commits)
    return "; ".join([f"ancestry: {named} in {tag}", *kinds])


def retire(
    fork: Fork,
    git: Git,
    report: AbsorbedResult,
    names: Sequence[str] = (),
    *,
    reason: str | None = None,
    dry_run: bool = False,
    today: str,
    pin_follows: bool = False,
) -> RetireResult:
    """Retire ``names`` (default: every patch whose verdict is ``retire``) at the report's tag.

    A patch whose fix the pinned tag lacks is refused too: the fork would build its
    pin without the fix. ``pin_follows`` says the caller moves the pin to the report's
    tag next (``sync``). ``reason`` forces the named patches whatever their verdict
    and pin, and is recorded. A refusal changes nothing, not even for the patches that
    could go.
    """
    targets = _targets(fork, report, names, reason)
    refused = [
        Refusal(p.name, report.patch(p.name).verdict, report.patch(p.name).reason)
        for p in targets
        if report.patch(p.name).verdict != "retire" and reason is None
    ]
    if refused:
        return RetireResult(report.tag, report.tag_commit, dry_run, (), tuple(refused), ())
    if not targets:  # nothing to retire: no file is touched
        undecided = tuple(_undecided(report, names))
        return RetireResult(report.tag, report.tag_commit, dry_run, (), (), (), undecided)
    record_path, record = load_record(fork)
    lacking = {} if pin_follows else _pin_lacks(fork, git, targets)
    if reason is None and lacking:
        refused = [
            Refusal(name, "retire", _pin_refusal(fork, commits, report.tag))
            for name, commits in lacking.items()
        ]
        return RetireResult(report.tag, report.tag_commit, dry_run, (), tuple(refused), ())
    retired = [_retirement(fork, report, p, reason, lacking, today) for p in targets]
    for done in retired:
        record = record.with_entry(done.entry)
    changes = _removals(fork, targets)
    changes[record_path] = record.render().encode("utf-8")
    warnings = _pin_warnings(fork, git, targets, report.tag) + _undecided(report, names)
    if not dry_run:
        write_files(changes)
    return RetireResult(
        report.tag,
        report.tag_commit,
        dry_run,
        tuple(retired),
        (),
        tuple(changed_paths(fork, changes)),
        tuple(warnings),
    )


def _undecided(report: AbsorbedResult, names: Sequence[str]) -> list[str]:
    """A retirement of every ``retire`` verdict names the patches left for a human: the
    ``revisit`` ones, whose witnesses disagree with ancestry at the tag."""
    looks = [p.patch for p in report.patches if p.verdict == "revisit"] if not names else []
    if not looks:
        return []
    return [
        f"{len(looks)} patch(es) left to decide by hand at {report.tag} ({some_names(looks)}): "
        "verdict 'revisit', the witnesses disagree with ancestry; see 'forktool absorbed "
        f"--tag {report.tag}', then keep each or retire it with --force --reason TEXT"
    ]


def _targets(
    fork: Fork, report: AbsorbedResult, names: Sequence[str], reason: str | None
) -> list[Patch]:
    """The patches to retire: the named ones (each once), else every ``retire`` verdict."""
    if reason is not None and not names:
        raise FatalError(
            "--force needs the names of the patches to force",
            "forktool retire PATCH --tag TAG --force --reason TEXT",
        )
    return [fork.patch(n) for n in dict.fromkeys(names)] or [
        fork.patch(p.patch) for p in report.retirable()
    ]


def _retirement(
    fork: Fork,
    report: AbsorbedResult,
    patch: Patch,
    reason: str | None,
    lacking: Mapping[str, tuple[str, ...]],
    today: str,
) -> Retirement:
    """``patch`` retired at the report's tag, with its record row: forced where its
    verdict is not ``retire`` or the pin lacks its fix, and the witnesses (or the
    reason) said."""
    verdict = report.patch(patch.name)
    forced = verdict.verdict != "retire" or patch.name in lacking
    if verdict.verdict != "retire":
        why = witnesses(verdict, report.tag, reason)
    else:
        why = witnesses(verdict, report.tag, None)
        if patch.name in lacking:
            why += f"; FORCED with the pin at {fork.config.pin_tag}, which lacks it: {reason}"
    entry = RecordEntry(
        date=today,
        action="retired",
        patch=patch.name,
        upstream_pr=_upstream_pr(patch),
        commits=patch.commits or ("none",),
        first_release=verdict.first_release or "-",
        tag=report.tag,
        witnesses=why,
    )
    return Retirement(patch.name, verdict.verdict, forced, entry)


def _removals(fork: Fork, patches: Sequence[Patch]) -> dict[Path, bytes | None]:
    """The files that go with ``patches`` (each patch file and note) and the series and
    map without them, in the order they are listed."""
    series: Series = fork.series
    umap: UpstreamMap = fork.upstream_map
    changes: dict[Path, bytes | None] = {}
    for patch in patches:
        series = series.without(patch.name)
        umap = umap.without(patch.name)
        changes[patch.path] = None
        note = fork.note_path(patch.name)
        if note.is_file():
            changes[note] = None
    changes[fork.config.series_path] = series.to_bytes()
    changes[fork.config.map_path] = umap.to_bytes()
    return changes


def _pin_lacks(fork: Fork, git: Git, patches: Sequence[Patch]) -> dict[str, tuple[str, ...]]:
    """Patch -> its mapped commits that the pinned commit does not contain."""
    missing = git.not_ancestors([c for p in patches for c in p.commits], fork.config.pin_commit)
    return {
        p.name: tuple(c for c in p.commits if c in missing)
        for p in patches
        if missing.intersection(p.commits)
    }


def _pin_refusal(fork: Fork, commits: Sequence[str], tag: str) -> str:
    named = ", ".join(short(c) for c in commits)
    return (
        f"the fork pins {fork.config.pin_tag}, which does not contain {named}: the fork "
        "would build without the fix; retire after "
        f"'{command_line('forktool', 'pin', 'bump', tag)}', or through "
        f"'{command_line('forktool', 'sync', tag)}'"
    )


def _pin_warnings(fork: Fork, git: Git, patches: Sequence[Patch], tag: str) -> list[str]:
    """The fork still builds its pin: say so when the pin lacks a retired patch's fix."""
    lacking = list(_pin_lacks(fork, git, patches))
    if not lacking:
        return []
    return [
        f"the fork pins {fork.config.pin_tag}, which does not contain the fix of "
        f"{', '.join(lacking)}: bump the pin to {tag} before building from this series"
    ]


# -- a pin that lost a retired fix ------------------------------------------------------


@dataclass(frozen=True)
class LostFix:
    """A patch the record says was retired, whose upstream commits a pin lacks."""

    patch: str
    commits: tuple[str, ...]  # the retired-for commits the pin does not contain
    tag: str  # the tag it was retired at

    def describe(self, pin_tag: str) -> str:
        named = ", ".join(short(c) for c in self.commits)
        return (
            f"'{self.patch}' was retired at {self.tag}, but {pin_tag} does not contain "
            f"{named}: a fork pinned there ships without the fix"
        )

    def remedy(self) -> str:
        """What to do about it, in one line."""
        undo = command_line("forktool", "retire", "--undo", self.patch)
        return f"pin a tag that contains it, or restore the patch: {undo}"

    def told(self, pin_tag: str) -> str:
        """What it is and what to do, in one line (a warning, or a plan's note)."""
        return f"{self.describe(pin_tag)}; {self.remedy()}"

    def to_json(self) -> dict[str, object]:
        return {"patch": self.patch, "commits": list(self.commits), "retired_at": self.tag}


def lost_fixes(config: Config, git: Git, pin_commit: str) -> list[LostFix]:
    """Patches retired for upstream commits that ``pin_commit`` does not contain.

    Read from the record in FORK.md: a later ``restored`` entry cancels a retirement,
    and a retirement forced over another verdict (``FORCED over verdict``: a human
    judged the fix present some other way, e.g. as a cherry-pick) is not checked. No
    record file, nothing to check (the record check says so). A retired-for commit
    that is not in the repository is an error: it cannot be judged.
    """
    path = config.record_path
    if not path.is_file():
        return []
    record = parse_record(read_text(path, config.record, follow=False), config.record)
    retired = record.retired()
    entries = [
        entry
        for name in sorted(retired)
        if (entry := record.last_retirement(name)) is not None
        and not entry.witnesses.startswith(FORCED_OVER_VERDICT)
    ]
    commits: dict[str, str] = {c: e.patch for e in entries for c in e.commits if is_hex40(c)}
    for commit, kind in git.object_types(commits).items():
        if kind != "commit":
            raise FatalError(
                f"{config.record}: '{commits[commit]}' was retired for {commit}, which is "
                "not a commit in this repository",
                f"fetch it: {command_line('git', 'fetch', config.upstream_remote, commit)}",
            )
    missing = git.not_ancestors(commits, pin_commit)
    return [
        LostFix(e.patch, tuple(c for c in e.commits if c in missing), e.tag)
        for e in entries
        if missing.intersection(e.commits)
    ]
