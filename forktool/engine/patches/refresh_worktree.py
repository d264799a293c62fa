"""The worktree a refresh leaves for a hand resolution: opened at TAG with the patches
before the conflict committed, the conflicting patch merged into it with conflict
markers, moved on to the next conflict by ``--continue``, and removed with the state.

It is a sparse checkout of the patch's paths (and their new names where upstream
renamed them). The markers come from git's merge from the patch's pre-image on the pin,
else from ``git apply --3way``: the only place forktool uses it.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from forktool.engine.patches.merge_patch import PreImages, merge_sides
from forktool.engine.patches.refresh_moves import Series, refresh_chain
from forktool.engine.patches.refresh_result import (
    MOVED,
    RefreshEntry,
    RefreshResult,
    unwritten,
)
from forktool.engine.patches.refresh_state import RefreshState, drop_state, save_state
from forktool.errors import FatalError, rolled_back
from forktool.faults import faultpoint
from forktool.fork import Fork, Patch
from forktool.git import Git
from forktool.model.patchfile import touched_paths


def open_worktree(
    fork: Fork,
    git: Git,
    onto: str,
    onto_commit: str,
    worktree: Path,
    entries: list[RefreshEntry],
    first: int,
    stamp: str,
    pin_commit: str,
) -> RefreshResult:
    """Open ``worktree`` on ``entries[first]``, the first conflict, and save the state."""
    base, kept = _persisted_base(fork, git, onto, onto_commit, entries[:first], pin_commit)
    conflict = fork.patches[first]
    reason = entries[first].message
    directory = worktree.resolve()
    existed = directory.exists()
    # The state first: if this run is killed from here on, --abort finds and removes
    # the worktree (and --continue refuses a worktree without the conflict applied).
    save_state(
        git,
        RefreshState(onto, onto_commit, str(directory), base, conflict.name, tuple(kept), stamp),
    )
    renamed = _renamed_upstream(fork, git, onto_commit, conflict)
    faultpoint("refresh.worktree_add")
    try:
        git.worktree_add_sparse(directory, base, _worktree_paths(conflict, renamed))
    except FatalError as exc:
        _undo_open(git, directory, made=not existed)
        raise rolled_back(exc, "the refresh was rolled back: nothing changed") from exc
    faultpoint("refresh.apply_3way")
    series = Series.of(fork, pin_commit)
    detail = _apply_3way(git, Git(directory), conflict, base, series, onto, renamed)
    return _pending_result(
        fork,
        onto,
        onto_commit,
        kept,
        conflict,
        directory,
        f"{reason}; {detail}",
        entries[first + 1 :],
    )


def _persisted_base(
    fork: Fork,
    git: Git,
    onto: str,
    onto_commit: str,
    done: Sequence[RefreshEntry],
    pin_commit: str,
) -> tuple[str, list[RefreshEntry]]:
    """Re-make the commits of the patches before the conflict with their objects kept:
    the worktree checks them out, so they must outlive the temporary index."""
    if not done:
        return onto_commit, []
    series = Series.of(fork, pin_commit)
    with git.temp_index(keep_objects=True) as index:
        chain = refresh_chain(index, onto_commit, fork.patches[: len(done)], series, base_name=onto)
    if not chain.complete:
        raise FatalError("the patches before the conflict no longer apply; nothing was written")
    kept = [
        RefreshEntry(e.patch, e.path, e.status, e.message, False, link.commit)
        for e, link in zip(done, chain.links, strict=True)
    ]
    return chain.tip, kept


def move_worktree(
    fork: Fork,
    git: Git,
    state: RefreshState,
    wt: Git,
    done: list[RefreshEntry],
    base: str,
    later: list[RefreshEntry],
    series: Series,
) -> RefreshResult:
    """Move the worktree on to ``later[0]``, the next conflict (``base``: the commit
    before it)."""
    conflict = fork.patch(later[0].patch)
    faultpoint("refresh.worktree_reset")
    wt.reset_hard(base, purpose="move the worktree on")
    renamed = _renamed_upstream(fork, git, state.onto_commit, conflict)
    wt.sparse_reset(base, _worktree_paths(conflict, renamed))
    wt.clean()
    detail = _apply_3way(git, wt, conflict, base, series, state.onto, renamed)
    save_state(
        git,
        RefreshState(
            state.onto,
            state.onto_commit,
            state.worktree,
            base,
            conflict.name,
            tuple(done),
            state.fingerprint,
        ),
    )
    return _pending_result(
        fork,
        state.onto,
        state.onto_commit,
        done,
        conflict,
        Path(state.worktree),
        f"{later[0].message}; {detail}",
        later[1:],
    )


def close_worktree(git: Git, directory: Path) -> None:
    """Remove the worktree, then the state: a refresh is over."""
    faultpoint("refresh.worktree_remove")
    if directory.exists():
        git.remove_worktree(directory)
    git.worktree_prune()
    faultpoint("refresh.state_drop")
    drop_state(git)


def _pending_result(
    fork: Fork,
    onto: str,
    onto_commit: str,
    kept: Sequence[RefreshEntry],
    conflict: Patch,
    directory: Path,
    detail: str,
    later: Sequence[RefreshEntry],
) -> RefreshResult:
    """The refresh stopped for a hand resolution of ``conflict``; ``later`` are the
    patches after it as they fared without it (each is tried again once it is resolved)."""
    entries = unwritten(kept)  # nothing is written before the last conflict is resolved
    entries.append(
        RefreshEntry(
            conflict.name,
            conflict.rel,
            "conflict",
            f"{detail} in {directory}",
        )
    )
    without = f"tried without {conflict.name}"
    entries += [
        replace(e, message=f"{e.message}; {without}" if e.message else without, commit=None)
        for e in unwritten(later)
    ]
    waiting = [e.patch for e in later if e.status not in MOVED]
    also = f"; {len(waiting)} more conflict(s) follow: {', '.join(waiting)}" if waiting else ""
    return RefreshResult(
        onto,
        onto_commit,
        fork.config.pin_tag,
        tuple(entries),
        worktree=str(directory),
        message=f"resolve {conflict.name} in {directory} (edit the files; no need to commit), "
        f"then run 'forktool refresh --continue' (or --abort){also}",
    )


def _renamed_upstream(fork: Fork, git: Git, onto_commit: str, conflict: Patch) -> dict[str, str]:
    """The patch's paths that upstream renamed between the pin and the target: old -> new."""
    renamed = git.renames(fork.config.pin_commit, onto_commit)
    return {p: renamed[p] for p in touched_paths(conflict.parsed) if p in renamed}


def _worktree_paths(conflict: Patch, renamed: dict[str, str]) -> list[str]:
    """The paths a resolution works on: the patch's, and the new name of each that
    upstream renamed (the change is carried there)."""
    return list(dict.fromkeys([*touched_paths(conflict.parsed), *renamed.values()]))


def _undo_open(git: Git, directory: Path, *, made: bool) -> None:
    """Undo a worktree creation that failed half-way: the worktree git registered (and
    checked out), the directory if this run made it, and the state."""
    git.remove_worktree(directory, check=False)
    if made:
        shutil.rmtree(directory, ignore_errors=True)
    else:  # an empty directory the user named: leave it, empty
        for entry in directory.iterdir() if directory.is_dir() else ():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
    git.worktree_prune(check=False)
    drop_state(git)


def _apply_3way(
    git: Git, wt: Git, patch: Patch, base: str, series: Series, onto: str, renamed: dict[str, str]
) -> str:
    """Apply ``patch`` in the hand-resolution worktree (at ``base``), leaving conflict
    markers: git's merge from the patch's pre-image on the pin where it has one (as a
    refresh tried it), else ``git apply --3way`` (or .rej files); and say what the
    worktree holds afterwards: git's own words ("with conflicts") are not read, because
    a merge can end with nothing to resolve. A file upstream renamed gets neither
    markers nor a .rej from git apply (it does not follow renames): said."""
    moved = "".join(
        f"; {old} was renamed upstream to {new}: carry its change there by hand"
        for old, new in renamed.items()
    )
    marked = _merge_markers(git, wt, patch, base, series)
    if marked:
        return marked + moved
    res = wt.apply_3way(patch.path)
    if not res.ok and "conflicts" not in res.err:
        wt.apply_with_rejects(patch.path)
        return (
            "3-way merge impossible (blobs missing): the hunks that failed are in *.rej files"
            + moved
        )
    unmerged = wt.unmerged_paths()
    if unmerged:
        return f"applied with conflict markers in {', '.join(unmerged)}" + moved
    if not res.ok:  # git said "with conflicts" yet left no unmerged path
        return "applied with conflict markers" + moved
    if not renamed and not wt.status_entries(["."]):
        return (
            f"applying it changed nothing, {onto} already has the change: retire the patch "
            "or drop it (--abort); nothing to resolve"
        )
    return "applied cleanly with a 3-way merge: check the result" + moved


def _merge_markers(git: Git, wt: Git, patch: Patch, base: str, series: Series) -> str:
    """Write git's merge of ``patch`` onto ``base`` into the worktree (with conflict
    markers, or clean when only ``refresh.allow_merged: false`` sent it here); "" when
    there is none to write (no pre-image, or it changes files the sparse checkout of the
    worktree does not hold: then ``git apply --3way`` takes over)."""
    with git.temp_index(keep_objects=True) as index:
        result = merge_sides(index, base, patch, PreImages(index, *series.pre_images()))
        if isinstance(result, str):
            return ""
        changed = git.diff_name_status(base, result.tree)
    if not changed or not {path for _, path in changed} <= set(touched_paths(patch.parsed)):
        return ""
    for status, path in changed:
        target = wt.cwd / path
        if status == "D":
            target.unlink(missing_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(git.blob(result.tree, path) or b"")
    how = "with no conflict: review it" if result.clean else "with conflict markers"
    return f"merged 3-way from its pre-image on {series.pin_name}, {how}"
