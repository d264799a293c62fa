"""git, by concept: runner (the only module that starts processes), objects, refs,
remote, ancestry, history (logs), changes (diffs, patch-ids), index (temporary
indexes), worktrees, patch_tools (git apply in a plain directory, GNU patch).
:class:`Git` is every concept's methods on one object."""

from __future__ import annotations

from pathlib import Path

from forktool.git.ancestry import SLOW_WALK_SECONDS
from forktool.git.changes import PATCH_ID_DIFF_ARGS
from forktool.git.history import LogEntry
from forktool.git.index import APPLY_CACHED_ARGS, MergeTreeResult, TempIndex, git_apply_args
from forktool.git.patch_tools import apply_in_directory, run_gnu_patch
from forktool.git.refs import commit_spec, is_revision_expression
from forktool.git.runner import (
    GRAPH_FIX,
    GitResult,
    Observer,
    Started,
    fetch_error,
    git_argv,
    hardened_env,
    note_missing_commit_graph,
    rejected_refs,
    run,
    set_graph_notice,
    set_observer,
    start,
)
from forktool.git.worktrees import Worktrees
from forktool.model.revision import HEX40, is_hex40, short


class Git(Worktrees):
    """Typed questions to one repository: every concept's methods, one object."""


def repository(root: Path, resolving: str | None = None) -> Git:
    """The repository the fork at ``root`` is in; refuses (exit 2, with a hint) when
    ``root`` is not inside one. ``resolving``: a revision spec answered in the same
    call (:meth:`Git.toplevel`)."""
    git = Git(root)
    git.toplevel(resolving)
    return git


__all__ = [
    "APPLY_CACHED_ARGS",
    "GRAPH_FIX",
    "HEX40",
    "PATCH_ID_DIFF_ARGS",
    "SLOW_WALK_SECONDS",
    "Git",
    "GitResult",
    "LogEntry",
    "MergeTreeResult",
    "Observer",
    "Started",
    "TempIndex",
    "apply_in_directory",
    "commit_spec",
    "fetch_error",
    "git_apply_args",
    "git_argv",
    "hardened_env",
    "is_hex40",
    "is_revision_expression",
    "note_missing_commit_graph",
    "rejected_refs",
    "repository",
    "run",
    "run_gnu_patch",
    "set_graph_notice",
    "set_observer",
    "short",
    "start",
]
