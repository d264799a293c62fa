"""What a sync reports and the state of a sync in progress (resumable across --continue)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from forktool.engine.patches.refresh import (
    RefreshEntry,
)
from forktool.errors import FatalError
from forktool.faults import faultpoint
from forktool.fsutil import write_files
from forktool.git import Git
from forktool.model.revision import CommitId, Revision
from forktool.state import read_state, state_bytes, state_path

Stage = Literal["retire", "refresh", "bump", "merge", "check", "done"]


STAGES: tuple[Stage, ...] = ("retire", "refresh", "bump", "merge", "check", "done")


STATE_DIR = Path("forktool") / "sync"


@dataclass(frozen=True)
class Retired:
    patch: str
    commits: tuple[str, ...]
    first_release: str | None
    witnesses: str

    def to_json(self) -> dict[str, object]:
        return {
            "patch": self.patch,
            "upstream_commits": list(self.commits),
            "first_release": self.first_release,
            "witnesses": self.witnesses,
        }


@dataclass(frozen=True)
class PinChange:
    file: str
    line: int
    old: str
    new: str

    def to_json(self) -> dict[str, object]:
        return {"file": self.file, "line": self.line, "old": self.old, "new": self.new}


@dataclass(frozen=True)
class SyncReport:
    """What a sync did (or, for a plan, would do)."""

    tag: str
    tag_commit: str
    previous_tag: str
    branch: str | None
    stage: Stage
    retired: tuple[Retired, ...] = ()
    kept: tuple[dict[str, object], ...] = ()  # absorbed verdicts of the patches kept
    refreshed: tuple[RefreshEntry, ...] = ()
    range_diff: str = ""
    pins: tuple[PinChange, ...] = ()
    conflicts: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    check: dict[str, object] | None = None
    check_ok: bool | None = None
    commits: tuple[str, ...] = ()
    message: str = ""
    dry_run: bool = False
    worktree: str | None = None
    merge_tag: bool = False  # a merged-layout fork: the sync merges (merged) TAG
    # Kept patches whose change TAG already carries: each needs a human decision, all
    # recorded by the one command ``decide``.
    decisions: tuple[str, ...] = ()
    decide: str = ""

    @property
    def merged(self) -> tuple[str, ...]:
        """The patches a 3-way merge moved: a reviewer looks at these first."""
        return tuple(e.patch for e in self.refreshed if e.status == "merged")

    @property
    def needs_hands(self) -> bool:
        return bool(self.conflicts) or self.stage not in ("done",) or self.check_ok is False

    @property
    def ok(self) -> bool:
        if self.dry_run:
            return not self.conflicts
        return self.stage == "done" and not self.conflicts and self.check_ok is not False

    def to_json(self) -> dict[str, object]:
        return {
            "tag": self.tag,
            "tag_commit": self.tag_commit,
            "previous_tag": self.previous_tag,
            "branch": self.branch,
            "ok": self.ok,
            "dry_run": self.dry_run,
            "stage": self.stage,
            "retired": [r.to_json() for r in self.retired],
            "kept": list(self.kept),
            "refreshed": [e.to_json() for e in self.refreshed],
            "merged": list(self.merged),
            "range_diff": self.range_diff,
            "pins": [p.to_json() for p in self.pins],
            "conflicts": list(self.conflicts),
            "notes": list(self.notes),
            "check": self.check,
            "check_ok": self.check_ok,
            "commits": list(self.commits),
            "worktree": self.worktree,
            "message": self.message,
            "merge_tag": self.merge_tag,
            "decisions": list(self.decisions),
            "decide": self.decide,
        }


@dataclass(frozen=True)
class SyncState:
    tag: str
    tag_commit: str
    branch: str
    worktree: str
    start: str  # the fork's HEAD when the sync began
    stage: Stage
    fork_dir: str  # the fork root relative to the worktree root ("" at the top)
    report: SyncReport
    tree_commit: str | None = None  # TAG's release tarball import (a tarball-import pin)
    # The fork's branch merged the pinned tarball import (git-buildpackage's shape): the
    # sync merges TAG's import, not the bare tag. The previous import, else None.
    previous_import: str | None = None

    @property
    def revision(self) -> Revision:
        """The tag the sync moves to, as resolved when it began."""
        return Revision(self.tag, CommitId(self.tag_commit))

    @property
    def merge_commit(self) -> str:
        """What the merge stage merges: TAG's import on a branch that merged imports."""
        if self.previous_import is not None and self.tree_commit is not None:
            return self.tree_commit
        return self.tag_commit

    def to_json(self) -> dict[str, object]:
        return {
            "tree_commit": self.tree_commit,
            "previous_import": self.previous_import,
            "tag": self.tag,
            "tag_commit": self.tag_commit,
            "branch": self.branch,
            "worktree": self.worktree,
            "start": self.start,
            "stage": self.stage,
            "fork_dir": self.fork_dir,
            "report": self.report.to_json(),
        }


def state_dir(git: Git) -> Path:
    return git.common_dir() / STATE_DIR


def report_dir(git: Git, tag: str, branch: str) -> Path:
    """Where a finished sync's report lives: keyed by tag and branch, so a second sync to
    the same tag on another branch keeps the first one's report."""
    return state_dir(git) / tag / branch


def _state_file(git: Git) -> Path:
    return state_path(git, "sync", shared=True)


def load_sync_state(git: Git) -> SyncState | None:
    path = _state_file(git)
    try:
        data = read_state(path)
        if data is None:
            return None
        report = _report_from_json(data["report"])
        return SyncState(
            data["tag"],
            data["tag_commit"],
            data["branch"],
            data["worktree"],
            data["start"],
            data["stage"],
            data["fork_dir"],
            report,
            data.get("tree_commit"),
            data.get("previous_import"),
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise FatalError(
            f"the sync state in {path} is unreadable ({exc})",
            "remove it with 'forktool sync --abort'",
        ) from exc


def _list(data: Mapping[str, object], key: str) -> list[object]:
    value = data.get(key)
    return list(value) if isinstance(value, list) else []


def _dicts(data: Mapping[str, object], key: str) -> list[dict[str, object]]:
    return [item for item in _list(data, key) if isinstance(item, dict)]


def _strings(data: Mapping[str, object], key: str) -> tuple[str, ...]:
    return tuple(str(item) for item in _list(data, key))


def _report_from_json(data: Mapping[str, object]) -> SyncReport:
    """A report saved in the sync state (or a finished sync's report.json)."""
    stage = str(data["stage"])
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}")
    return SyncReport(
        tag=str(data["tag"]),
        tag_commit=str(data["tag_commit"]),
        previous_tag=str(data["previous_tag"]),
        branch=str(data["branch"]) if data.get("branch") else None,
        stage=stage,
        retired=tuple(
            Retired(
                str(r["patch"]),
                _strings(r, "upstream_commits"),
                str(r["first_release"]) if r.get("first_release") else None,
                str(r["witnesses"]),
            )
            for r in _dicts(data, "retired")
        ),
        kept=tuple(_dicts(data, "kept")),
        refreshed=tuple(
            RefreshEntry(
                str(e["patch"]),
                str(e["path"]),
                str(e["status"]),  # type: ignore[arg-type]
                str(e.get("message", "")),
                bool(e.get("bytes_changed")),
            )
            for e in _dicts(data, "refreshed")
        ),
        range_diff=str(data.get("range_diff", "")),
        pins=tuple(
            PinChange(str(p["file"]), int(str(p["line"])), str(p["old"]), str(p["new"]))
            for p in _dicts(data, "pins")
        ),
        conflicts=_strings(data, "conflicts"),
        notes=_strings(data, "notes"),
        commits=_strings(data, "commits"),
        check=data["check"] if isinstance(data.get("check"), dict) else None,  # type: ignore[arg-type]
        check_ok=data.get("check_ok") if isinstance(data.get("check_ok"), bool) else None,  # type: ignore[arg-type]
        merge_tag=data.get("merge_tag") is True,
        decisions=_strings(data, "decisions"),
        decide=str(data.get("decide", "")),
    )


def _save_state(git: Git, state: SyncState) -> None:
    write_files({_state_file(git): state_bytes(state.to_json())})


def _drop_state(git: Git) -> None:
    faultpoint("sync.state_drop")
    _state_file(git).unlink(missing_ok=True)
