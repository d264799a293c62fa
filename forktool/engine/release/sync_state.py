"""The state of a sync in progress (resumable across --continue), and where reports live."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from forktool.engine.release.sync_report import Stage, SyncReport
from forktool.errors import FatalError
from forktool.faults import faultpoint
from forktool.fsutil import write_files
from forktool.git import Git
from forktool.state import read_state, state_bytes, state_path

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
        report = SyncReport.from_json(data["report"])
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


def save_state(git: Git, state: SyncState) -> None:
    write_files({_state_file(git): state_bytes(state.to_json())})


def drop_state(git: Git) -> None:
    faultpoint("sync.state_drop")
    _state_file(git).unlink(missing_ok=True)
