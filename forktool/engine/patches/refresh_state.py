"""The state of a refresh stopped for a hand resolution, in ``<git-dir>/forktool/refresh/``:
what ``--continue`` and ``--abort`` find, and the fingerprint that notices a series
edited meanwhile."""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass
from pathlib import Path

from forktool.engine.patches.refresh_result import RefreshEntry
from forktool.errors import FatalError
from forktool.fork import Fork
from forktool.fsutil import write_files
from forktool.git import Git
from forktool.state import forget_dirs, read_state, state_bytes, state_path


@dataclass(frozen=True)
class RefreshState:
    onto: str
    onto_commit: str
    worktree: str
    base: str  # the worktree's HEAD: TAG plus the patches before the conflict
    conflict: str  # the patch being resolved
    done: tuple[RefreshEntry, ...]
    fingerprint: str
    finished: bool = False  # the files are written; only the worktree is left to remove

    def to_json(self) -> dict[str, object]:
        return {
            "onto": self.onto,
            "onto_commit": self.onto_commit,
            "worktree": self.worktree,
            "base": self.base,
            "conflict": self.conflict,
            "done": [{**e.to_json(), "commit": e.commit} for e in self.done],
            "fingerprint": self.fingerprint,
            "finished": self.finished,
        }


def refresh_state_path(git: Git) -> Path:
    return state_path(git, "refresh", shared=False)


def load_state(git: Git) -> RefreshState | None:
    path = refresh_state_path(git)
    try:
        data = read_state(path)
        if data is None:
            return None
        done = tuple(
            RefreshEntry(
                d["patch"],
                d["path"],
                d["status"],
                d["message"],
                bool(d.get("bytes_changed")),
                d["commit"],
            )
            for d in data["done"]
        )
        return RefreshState(
            data["onto"],
            data["onto_commit"],
            data["worktree"],
            data["base"],
            data["conflict"],
            done,
            data["fingerprint"],
            bool(data.get("finished", False)),
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise FatalError(
            f"{path}: the refresh state cannot be read ({exc})",
            "run 'forktool refresh --abort' to discard it",
        ) from exc


def require_state(git: Git) -> RefreshState:
    state = load_state(git)
    if state is None:
        raise FatalError(
            "no refresh is in progress", "start one with 'forktool refresh --onto TAG'"
        )
    return state


def encode_state(state: RefreshState) -> bytes:
    return state_bytes(state.to_json())


def save_state(git: Git, state: RefreshState) -> None:
    write_files({refresh_state_path(git): encode_state(state)})


def drop_state(git: Git) -> None:
    path = refresh_state_path(git)
    shutil.rmtree(path.parent, ignore_errors=True)
    forget_dirs(path)


def fingerprint(fork: Fork) -> str:
    """A digest of the series, the map and every patch file, to notice edits mid-refresh."""
    digest = hashlib.sha256()
    for path in (fork.config.series_path, fork.config.map_path):
        digest.update(path.read_bytes() if path.is_file() else b"")
    for patch in fork.patches:
        digest.update(patch.name.encode() + b"\0" + patch.data + b"\0")
    return digest.hexdigest()
