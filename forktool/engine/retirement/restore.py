"""Bringing back a wrong retirement (``retire --undo``).

A retired patch is restored from history: the files as they were in the last commit
whose series still listed it (the parent of the commit that removed it, or HEAD when
the retirement is not committed yet), the series line and map line at their old
positions, and a ``restored`` row in the record. Every file changes in one
:func:`~forktool.fsutil.write_files` call: all of them, or none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from forktool.engine.retirement.retire import changed_paths, load_record
from forktool.errors import FatalError
from forktool.fork import Fork
from forktool.fsutil import write_files
from forktool.git import Git, short
from forktool.model.patch_parser import parse_patch
from forktool.model.record import Record, RecordEntry
from forktool.model.series import Series, parse_series
from forktool.model.upstream_map import MapEntry, UpstreamMap, parse_map


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


@dataclass(frozen=True)
class _Source:
    """What the restore point holds of a retired patch."""

    commit: str
    uncommitted: bool  # the source is HEAD: the retirement is not committed
    series: Series
    umap: UpstreamMap
    map_entry: MapEntry
    patch: bytes
    note: bytes | None


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
    record_path, record = load_record(fork)
    source = _read_source(git, fork, name)
    patch_path = config.patches_dir / name
    note_path = fork.note_path(name)
    _refuse_overwrite(fork, name, ((patch_path, source.patch), (note_path, source.note)))
    new_series, new_map = _put_back(fork, name, source)
    entry = _restored_entry(record, name, source, reason, today)
    changes: dict[Path, bytes | None] = {
        patch_path: source.patch,
        config.series_path: new_series.to_bytes(),
        config.map_path: new_map.to_bytes(),
        record_path: record.with_entry(entry).render().encode("utf-8"),
    }
    if source.note is not None:
        changes[note_path] = source.note
    if not dry_run:
        write_files(changes)
    files = tuple(changed_paths(fork, changes))
    return UndoResult(name, source.commit, source.uncommitted, dry_run, files, entry)


def _read_source(git: Git, fork: Fork, name: str) -> _Source:
    """The series, map, patch file and note of ``name`` at its restore point."""
    config = fork.config
    commit, uncommitted = find_restore_point(git, fork, name)
    old_series = parse_series(git.blob(commit, f"./{config.series}") or b"", config.series)
    old_map = parse_map(git.blob(commit, f"./{config.upstream_map}") or b"", config.upstream_map)
    patch_rel = f"{config.patches}/{name}"
    patch_data = git.blob(commit, f"./{patch_rel}")
    map_entry = old_map.get(name)
    if patch_data is None or map_entry is None:
        missing = patch_rel if patch_data is None else f"its line in {config.upstream_map}"
        raise FatalError(f"{short(commit)} lists '{name}' in the series but has no {missing}")
    note_data = git.blob(commit, f"./{config.rel(fork.note_path(name))}")
    return _Source(commit, uncommitted, old_series, old_map, map_entry, patch_data, note_data)


def _refuse_overwrite(fork: Fork, name: str, files: Sequence[tuple[Path, bytes | None]]) -> None:
    """Refuse to overwrite a different file where a restored one goes, or a map line."""
    config = fork.config
    for path, data in files:
        if data is not None and path.exists() and path.read_bytes() != data:
            raise FatalError(
                f"{config.rel(path)} exists: restoring '{name}' would overwrite it",
                "move it aside first",
            )
    if fork.upstream_map.get(name) is not None:
        raise FatalError(f"{config.upstream_map} already maps '{name}'", "remove that line first")


def _put_back(fork: Fork, name: str, source: _Source) -> tuple[Series, UpstreamMap]:
    """The series and map with ``name``'s lines back where they were, refused when the
    fork they make would be broken."""
    config = fork.config
    entry_line = source.series.entry(name)
    assert entry_line is not None  # find_restore_point proved the series lists it
    before, after = _neighbours(
        source.series.names, name, {e.name: e.line for e in fork.series.entries}
    )
    series_lines = _reinsert(
        fork.series.lines, source.series.lines, entry_line.line - 1, before, after
    )
    map_order = [e.patch for e in source.umap.entries]
    before, after = _neighbours(
        map_order, name, {e.patch: e.line for e in fork.upstream_map.entries}
    )
    map_lines = _reinsert(
        fork.upstream_map.lines, source.umap.lines, source.map_entry.line - 1, before, after
    )
    new_series = parse_series("".join(f"{x}\n" for x in series_lines).encode(), config.series)
    new_map = parse_map("".join(f"{x}\n" for x in map_lines).encode(), config.upstream_map)
    problems = [f.render() for f in (*new_series.findings, *new_map.findings)]
    problems += [p.message for p in parse_patch(source.patch).problems]
    if problems:
        raise FatalError(f"restoring '{name}' would leave a broken fork: {problems[0]}")
    return new_series, new_map


def _restored_entry(
    record: Record, name: str, source: _Source, reason: str | None, today: str
) -> RecordEntry:
    """The record's ``restored`` row, carrying what the last retirement of ``name`` said."""
    last = record.last_retirement(name)
    why = reason or "no reason given"
    return RecordEntry(
        date=today,
        action="restored",
        patch=name,
        upstream_pr=last.upstream_pr if last else (source.map_entry.note or "-"),
        commits=source.map_entry.commits or ("none",),
        first_release=last.first_release if last else "-",
        tag=last.tag if last else "-",
        witnesses=f"restored from {short(source.commit)}: {why}",
    )


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
