"""The state of a sync in progress (resumable across --continue), and where reports live."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from forktool.engine.release.sync_report import STAGES, Stage, SyncReport, optional_str
from forktool.errors import FatalError
from forktool.faults import faultpoint
from forktool.fsutil import write_files
from forktool.git import Git
from forktool.model.revision import CommitId, Revision
from forktool.state import forget_dirs, read_state, state_bytes, state_path

STATE_DIR = Path("forktool") / "sync"


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

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> SyncState:
        """The state ``to_json`` saved (KeyError or TypeError when it is not). The stage
        is read as written: 'sync --abort' needs no stage, 'sync --continue' refuses one
        it does not know (:func:`require_stage`)."""
        report = data["report"]
        if not isinstance(report, dict):
            raise TypeError("the report is not a JSON object")
        return cls(
            str(data["tag"]),
            str(data["tag_commit"]),
            str(data["branch"]),
            str(data["worktree"]),
            str(data["start"]),
            cast(Stage, str(data["stage"])),
            str(data["fork_dir"]),
            SyncReport.from_json(report),
            optional_str(data, "tree_commit"),
            optional_str(data, "previous_import"),
        )


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
        return None if data is None else SyncState.from_json(data)
    except (ValueError, KeyError, TypeError) as exc:
        raise FatalError(
            f"the sync state in {path} is unreadable ({exc})",
            "remove it with 'forktool sync --abort'",
        ) from exc


def require_stage(git: Git, state: SyncState) -> None:
    """A sync goes on only from a stage this version knows (exit 2 otherwise)."""
    if state.stage not in STAGES:
        raise FatalError(
            f"the sync state in {_state_file(git)} stopped at an unknown stage {state.stage!r}",
            "drop it with 'forktool sync --abort'",
        )


def save_state(git: Git, state: SyncState) -> None:
    write_files({_state_file(git): state_bytes(state.to_json())})


def drop_state(git: Git) -> None:
    faultpoint("sync.state_drop")
    path = _state_file(git)
    path.unlink(missing_ok=True)
    forget_dirs(path)
