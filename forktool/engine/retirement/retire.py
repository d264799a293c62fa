"""Dropping absorbed patches, and bringing back a wrong retirement.

``retire`` removes a patch's series line, patch file, note and map line and appends
a row to the retirement record in FORK.md, for every patch whose ``absorbed``
verdict is ``retire`` (or only the named ones). A patch with any other verdict is
refused unless forced with a reason, which is recorded. Every file changes in one
:func:`~forktool.fsutil.write_files` call: all of them, or none.

``undo`` restores a retired patch from history: the files as they were in the
last commit whose series still listed it (the parent of the commit that removed
it, or HEAD when the retirement is not committed yet), the series line and map
line at their old positions, and a ``restored`` row in the record.

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
from forktool.engine.retirement.absorbed import AbsorbedResult, PatchAbsorption, Verdict
from forktool.errors import FatalError, command_line
from forktool.fork import Fork, Patch
from forktool.fsutil import write_files
from forktool.git import Git, is_hex40, short
from forktool.inputs import read_text
from forktool.model.patch_parser import parse_patch
from forktool.model.record import Record, RecordEntry, parse_record
from forktool.model.series import Series, parse_series
from forktool.model.upstream_map import UpstreamMap, parse_map

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


def _changes(fork: Fork, changes: Mapping[Path, bytes | None]) -> list[str]:
    return [fork.config.rel(path) for path in changes]


def _load_record(fork: Fork) -> tuple[Path, Record]:
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
    if reason is not None and not names:
        raise FatalError(
            "--force needs the names of the patches to force",
            "forktool retire PATCH --tag TAG --force --reason TEXT",
        )
    targets = [fork.patch(n) for n in dict.fromkeys(names)] or [
        fork.patch(p.patch) for p in report.retirable()
    ]
    refused = [
        Refusal(p.name, report.patch(p.name).verdict, report.patch(p.name).reason)
        for p in targets
        if report.patch(p.name).verdict != "retire" and reason is None
    ]
    if refused:
        return RetireResult(report.tag, report.tag_commit, dry_run, (), tuple(refused), ())
    record_path, record = _load_record(fork)
    lacking = {} if pin_follows else _pin_lacks(fork, git, targets)
    if reason is None and lacking:
        refused = [
            Refusal(name, "retire", _pin_refusal(fork, commits, report.tag))
            for name, commits in lacking.items()
        ]
        return RetireResult(report.tag, report.tag_commit, dry_run, (), tuple(refused), ())
    series: Series = fork.series
    umap: UpstreamMap = fork.upstream_map
    changes: dict[Path, bytes | None] = {}
    retired = []
    for patch in targets:
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
        record = record.with_entry(entry)
        series = series.without(patch.name)
        umap = umap.without(patch.name)
        changes[patch.path] = None
        note = fork.note_path(patch.name)
        if note.is_file():
            changes[note] = None
        retired.append(Retirement(patch.name, verdict.verdict, forced, entry))
    changes[fork.config.series_path] = series.to_bytes()
    changes[fork.config.map_path] = umap.to_bytes()
    changes[record_path] = record.render().encode("utf-8")
    warnings = _pin_warnings(fork, git, targets, report.tag)
    if not dry_run:
        write_files(changes)
    return RetireResult(
        report.tag,
        report.tag_commit,
        dry_run,
        tuple(retired),
        (),
        tuple(_changes(fork, changes)),
        tuple(warnings),
    )


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
    commits = {c: e.patch for e in entries for c in e.commits if is_hex40(c)}
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


# -- undo -----------------------------------------------------------------------------


@dataclass(frozen=True)
class UndoResult:
    patch: str
    source_commit: str
    uncommitted: bool  # the retirement was not committed: restored from HEAD
    dry_run: bool
    files: tuple[str, ...]
    entry: RecordEntry

    def to_json(self) -> dict[str, object]:
        return {
            "patch": self.patch,
            "restored_from": self.source_commit,
            "uncommitted_retirement": self.uncommitted,
            "dry_run": self.dry_run,
            "files": list(self.files),
            "reason": self.entry.witnesses,
        }


def _lists(git: Git, commit: str, series_rel: str, name: str) -> bool:
    data = git.blob(commit, f"./{series_rel}")
    return data is not None and name in parse_series(data).names


def find_restore_point(git: Git, fork: Fork, name: str) -> tuple[str, bool]:
    """The commit to restore ``name`` from, and whether that is HEAD (uncommitted retirement).

    HEAD when HEAD's series still lists it; otherwise the first parent of the newest
    commit that removed it from the series.
    """
    series_rel = fork.config.series
    head = git.head()
    if head is None:
        raise FatalError("the repository has no commits: there is no history to restore from")
    if _lists(git, head, series_rel, name):
        return head, True
    for commit, parents in git.commits_changing(name, f"./{series_rel}"):
        if (
            parents
            and not _lists(git, commit, series_rel, name)
            and _lists(git, parents[0], series_rel, name)
        ):
            return parents[0], False
    raise FatalError(
        f"no commit in HEAD's history lists '{name}' in {series_rel}",
        "check the name against the retirement record in " + fork.config.record,
    )


def _reinsert(
    current: Sequence[str],
    source: Sequence[str],
    index: int,
    before: Sequence[int],
    after: Sequence[int],
) -> list[str]:
    """``current`` with ``source[index]`` put back where it was.

    Exactly at ``index`` when every line above it is unchanged; otherwise after the
    nearest earlier entry still there (``before``: their 1-based lines in ``current``,
    nearest first), else before the nearest later one, else at the end.
    """
    lines = list(current)
    if list(source[:index]) == lines[:index]:
        position = index
    elif before:
        position = before[0]
    elif after:
        position = after[0] - 1
    else:
        position = len(lines)
    lines.insert(position, source[index])
    return lines


def _neighbours(
    order: Sequence[str], name: str, line_of: Mapping[str, int]
) -> tuple[list[int], list[int]]:
    at = order.index(name)
    before = [line_of[n] for n in reversed(order[:at]) if n in line_of]
    after = [line_of[n] for n in order[at + 1 :] if n in line_of]
    return before, after


def undo(
    fork: Fork,
    git: Git,
    name: str,
    *,
    reason: str | None,
    dry_run: bool = False,
    today: str,
) -> UndoResult:
    """Restore a retired patch from history and record why."""
    config = fork.config
    if fork.series.entry(name) is not None:
        raise FatalError(f"'{name}' is in the series: there is nothing to undo")
    record_path, record = _load_record(fork)
    source, uncommitted = find_restore_point(git, fork, name)
    old_series = parse_series(git.blob(source, f"./{config.series}") or b"", config.series)
    old_map = parse_map(git.blob(source, f"./{config.upstream_map}") or b"", config.upstream_map)
    patch_rel = f"{config.patches}/{name}"
    patch_data = git.blob(source, f"./{patch_rel}")
    map_entry = old_map.get(name)
    if patch_data is None or map_entry is None:
        missing = patch_rel if patch_data is None else f"its line in {config.upstream_map}"
        raise FatalError(f"{short(source)} lists '{name}' in the series but has no {missing}")
    patch_path = config.patches_dir / name
    note_path = fork.note_path(name)
    note_rel = config.rel(note_path)
    note_data = git.blob(source, f"./{note_rel}")
    for path, data in ((patch_path, patch_data), (note_path, note_data)):
        if data is not None and path.exists() and path.read_bytes() != data:
            raise FatalError(
                f"{config.rel(path)} exists: restoring '{name}' would overwrite it",
                "move it aside first",
            )
    if fork.upstream_map.get(name) is not None:
        raise FatalError(f"{config.upstream_map} already maps '{name}'", "remove that line first")

    entry_line = old_series.entry(name)
    assert entry_line is not None  # find_restore_point proved the series lists it
    before, after = _neighbours(
        old_series.names, name, {e.name: e.line for e in fork.series.entries}
    )
    series_lines = _reinsert(
        fork.series.lines, old_series.lines, entry_line.line - 1, before, after
    )
    map_order = [e.patch for e in old_map.entries]
    before, after = _neighbours(
        map_order, name, {e.patch: e.line for e in fork.upstream_map.entries}
    )
    map_lines = _reinsert(fork.upstream_map.lines, old_map.lines, map_entry.line - 1, before, after)
    new_series = parse_series("".join(f"{x}\n" for x in series_lines).encode(), config.series)
    new_map = parse_map("".join(f"{x}\n" for x in map_lines).encode(), config.upstream_map)
    problems = [f.render() for f in (*new_series.findings, *new_map.findings)]
    problems += [p.message for p in parse_patch(patch_data).problems]
    if problems:
        raise FatalError(f"restoring '{name}' would leave a broken fork: {problems[0]}")

    last = record.last_retirement(name)
    why = reason or "no reason given"
    entry = RecordEntry(
        date=today,
        action="restored",
        patch=name,
        upstream_pr=last.upstream_pr if last else (map_entry.note or "-"),
        commits=map_entry.commits or ("none",),
        first_release=last.first_release if last else "-",
        tag=last.tag if last else "-",
        witnesses=f"restored from {short(source)}: {why}",
    )
    changes: dict[Path, bytes | None] = {
        patch_path: patch_data,
        config.series_path: new_series.to_bytes(),
        config.map_path: new_map.to_bytes(),
        record_path: record.with_entry(entry).render().encode("utf-8"),
    }
    if note_data is not None:
        changes[note_path] = note_data
    if not dry_run:
        write_files(changes)
    return UndoResult(name, source, uncommitted, dry_run, tuple(_changes(fork, changes)), entry)
