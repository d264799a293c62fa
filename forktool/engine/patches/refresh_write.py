"""The end of a refresh that moved every patch: the regenerated patch files written at
once (refused when the series changed while it ran), and the range-diff of the old
series against the new, for review."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from forktool.engine.patches.canonical import build_chain, range_diff
from forktool.engine.patches.refresh_result import RefreshEntry
from forktool.engine.patches.refresh_state import (
    RefreshState,
    encode_state,
    fingerprint,
    refresh_state_path,
)
from forktool.errors import FatalError
from forktool.fork import Fork
from forktool.fsutil import write_files
from forktool.git import Git, TempIndex


def review_range(index: TempIndex, fork: Fork, pin_commit: str, onto: str, tip: str) -> str:
    """The range-diff of the series on the pin against the refreshed one ("" when the
    series does not apply on the pin)."""
    old = build_chain(index, pin_commit, fork.patches, base_name=fork.config.pin_tag)
    if not old.complete:
        return ""
    return range_diff(index, (pin_commit, old.tip), (onto, tip))


def write_refreshed(
    fork: Fork,
    git: Git,
    entries: list[RefreshEntry],
    generated: list[bytes],
    stamp: str,
    finished: RefreshState | None = None,
) -> tuple[list[RefreshEntry], tuple[str, ...]]:
    """Write the regenerated patches; with ``finished``, mark that state finished in the
    same write, so a run killed before its worktree is removed is never half done."""
    changes: dict[Path, bytes | None] = {}
    final = []
    for entry, patch, data in zip(entries, fork.patches, generated, strict=True):
        changed = data != patch.data
        if changed:
            changes[patch.path] = data
        message = entry.message
        if not changed and message.endswith("; regenerated"):  # the bytes came out the same
            message = message.removesuffix("; regenerated") + "; kept byte for byte"
        final.append(
            RefreshEntry(entry.patch, entry.path, entry.status, message, changed, entry.commit)
        )
    written = tuple(sorted(fork.config.rel(p) for p in changes))
    if finished is not None:
        done = replace(finished, done=tuple(final), finished=True)
        changes[refresh_state_path(git)] = encode_state(done)
    if changes:
        _require_unchanged(fork, stamp)
        write_files(changes)
    return final, written


def _require_unchanged(fork: Fork, stamp: str) -> None:
    from forktool.fork import load_fork

    if fingerprint(load_fork(fork.config, strict=False)) != stamp:
        raise FatalError(
            "the series or a patch file changed while the refresh was running; nothing was written",
            "run 'forktool refresh --abort' if one is open, then start again",
        )
