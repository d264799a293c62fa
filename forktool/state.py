"""State files of the commands that stop and resume (refresh, sync): where each lives
and how it is written and read, in one place."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from forktool.git import Git

STATE_FILE = "state.json"


def state_path(git: Git, command: str, *, shared: bool) -> Path:
    """``<git dir>/forktool/<command>/state.json``.

    ``shared`` puts it in the repository's common git directory, one for every
    worktree (a sync is resumed or aborted from any checkout); otherwise it lives in
    this worktree's own git directory (a refresh, which a sync also runs in its own
    worktree, must not see the main checkout's).
    """
    base = git.common_dir() if shared else git.git_dir()
    return base / "forktool" / command / STATE_FILE


def forget_dirs(state_file: Path) -> None:
    """Remove ``<git dir>/forktool/<command>`` and ``<git dir>/forktool`` once they are
    empty (a dropped state, an aborted or rolled-back run leaves nothing behind); a
    directory still holding something (a finished sync's report) stays."""
    for folder in (state_file.parent, state_file.parent.parent):
        try:
            folder.rmdir()
        except FileNotFoundError:
            continue
        except OSError:  # not empty
            return


def state_bytes(data: Mapping[str, object]) -> bytes:
    """What a state file holds: indented JSON, UTF-8, one trailing newline."""
    return (json.dumps(data, indent=2) + "\n").encode("utf-8")


def read_state(path: Path) -> dict[str, Any] | None:
    """The state saved in ``path``, or None when there is none.

    Reads files of earlier versions too (a sync's had no trailing newline). Raises
    ValueError when the file is not UTF-8 JSON holding an object, OSError when it
    cannot be read.
    """
    if not path.is_file():
        return None
    data = json.loads(path.read_bytes().decode("utf-8"))
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    return data
