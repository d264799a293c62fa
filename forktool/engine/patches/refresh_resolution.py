"""``refresh --continue`` and ``--abort``: a hand resolution taken from the worktree
(every marker and reject gone, no file of the patch silently dropped), the rest of
the series moved on top of it, and the refresh written or stopped at its next
conflict; or the refresh dropped with its worktree and state."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from forktool.engine.apply.verdict import PatchVerdict
from forktool.engine.patches.canonical import Chain, Link, chain_bytes, commit_tree
from forktool.engine.patches.commit_meta import commit_meta
from forktool.engine.patches.refresh_moves import (
    Series,
    already_on,
    presence,
    refresh_chain,
    retire_first,
)
from forktool.engine.patches.refresh_result import (
    RefreshEntry,
    RefreshResult,
    chain_entries,
    first_conflict,
)
from forktool.engine.patches.refresh_state import RefreshState, fingerprint, require_state
from forktool.engine.patches.refresh_worktree import close_worktree, move_worktree
from forktool.engine.patches.refresh_write import review_range, write_refreshed
from forktool.errors import FatalError, command_line
from forktool.fork import Fork, Patch
from forktool.git import Git
from forktool.model.patchfile import touched_paths
from forktool.model.revision import tag_of

_MARKERS = ("<<<<<<< ", ">>>>>>> ")


def refresh_continue(
    fork: Fork,
    git: Git,
    *,
    pin_commit: str,
    command: str = "refresh",
    drop_files: Sequence[str] = (),
) -> RefreshResult:
    """Take the worktree's content as the resolution of the conflicting patch, and go on.

    ``command`` is the one the user runs (``refresh``, or ``sync`` while a sync is
    stopped on this refresh): the hints name its ``--continue`` and ``--abort``.
    ``drop_files``: the files of the patch the user confirmed the resolution drops.
    """
    state = require_state(git)
    if state.finished:
        return _finish_interrupted(fork, git, state)
    wt = _live_worktree(fork, state, command)
    patch = fork.patch(state.conflict)
    resolved = _commit_resolution(git, wt, state, patch, pin_commit, command, drop_files)
    done = [
        *state.done,
        RefreshEntry(
            patch.name, patch.rel, "resolved", "resolved by hand in the worktree", commit=resolved
        ),
    ]
    rest = fork.patches[len(done) :]
    series = Series.of(fork, pin_commit)
    base_name = f"{state.onto} + the resolution"
    with git.temp_index(keep_objects=True) as index:
        chain = refresh_chain(index, resolved, rest, series, base_name=base_name)
    later = chain_entries(chain, series.keeps_offsets)
    _refuse_present(chain, state, command)
    if not chain.complete:
        first = first_conflict(later)
        base = later[first - 1].commit if first else resolved
        assert base is not None
        return move_worktree(
            fork, git, state, wt, [*done, *later[:first]], base, later[first:], series
        )
    return _write_all(fork, git, state, pin_commit, [*done, *later])


def _live_worktree(fork: Fork, state: RefreshState, command: str) -> Git:
    """The worktree of the refresh in progress, refused when the series changed since
    it started or the worktree is gone."""
    if fingerprint(fork) != state.fingerprint:
        raise FatalError(
            "the series or a patch file changed since the refresh started",
            f"run 'forktool {command} --abort' and start again",
        )
    directory = Path(state.worktree)
    if not directory.is_dir():
        raise FatalError(
            f"the refresh worktree {directory} is gone", f"run 'forktool {command} --abort'"
        )
    return Git(directory)


def _commit_resolution(
    git: Git,
    wt: Git,
    state: RefreshState,
    patch: Patch,
    pin_commit: str,
    command: str,
    drop_files: Sequence[str],
) -> str:
    """The commit of the user's resolution of ``patch`` on the worktree's base, refused
    when it changes nothing or silently drops a file of the patch."""
    tree = _resolution(wt, state, command)
    if tree == git.tree_id(state.base):
        raise FatalError(
            f"the resolution of {patch.name} changes nothing: {state.onto} already has the change",
            f"run 'forktool {command} --abort', then retire the patch ("
            + command_line("forktool", "retire", patch.name, "--tag", tag_of(state.onto), "--force")
            + f" --reason '...') or drop it, and run '{_restart(command, state.onto)}' again",
        )
    _refuse_dropped_files(git, state, patch, tree, pin_commit, command, drop_files)
    meta = commit_meta(patch)
    if isinstance(meta, str):
        raise FatalError(f"{patch.rel}: {meta}")
    return commit_tree(git, tree, state.base, meta)


def _refuse_present(chain: Chain, state: RefreshState, command: str) -> None:
    """A later patch whose change is already on the target: retired, never resolved."""
    present = [link for link in chain.links if already_on(link)]
    if present:
        raise FatalError(
            retire_first(present[0].patch, state.onto, presence(present[0].verdict.message)),
            f"run 'forktool {command} --abort', retire or drop it, and run "
            f"'{_restart(command, state.onto)}' again",
        )


def _write_all(
    fork: Fork, git: Git, state: RefreshState, pin_commit: str, done: list[RefreshEntry]
) -> RefreshResult:
    """Every patch moved: write the series, mark the state finished, remove the worktree."""
    with git.temp_index() as index:
        full = Chain(state.onto_commit, tuple(_links(fork, done)))
        generated = chain_bytes(index, full, fork.config.patch_form, fork.config.apply_rule)
        review = review_range(index, fork, pin_commit, state.onto_commit, full.tip)
    final, written = write_refreshed(fork, git, done, generated, state.fingerprint, finished=state)
    close_worktree(git, Path(state.worktree))
    return RefreshResult(
        state.onto, state.onto_commit, fork.config.pin_tag, tuple(final), written, review
    )


def _resolution(wt: Git, state: RefreshState, command: str = "refresh") -> str:
    """The tree the user left in the worktree: everything staged, no markers left.

    It is staged in a copy of the worktree's index, so a refusal stages nothing.
    """
    with wt.index_copy() as index:
        index.add_all(purpose="stage the resolution")
        _refuse_unresolved(Path(state.worktree), index.changed_names(state.base), command)
        return index.write_tree()


def _refuse_unresolved(root: Path, names: Iterable[str], command: str) -> None:
    for name in names:
        path = root / name
        if not path.is_file() or path.is_symlink():
            continue
        for number, line in enumerate(path.read_bytes().splitlines(), start=1):
            if line.startswith(tuple(m.encode() for m in _MARKERS)):
                raise FatalError(
                    f"{path}:{number}: a conflict marker is still there",
                    f"finish the resolution, then run 'forktool {command} --continue' again",
                )
        if path.name.endswith(".rej"):
            raise FatalError(
                f"{path}: a reject file is still there",
                f"apply its hunks by hand and delete it, then run 'forktool {command} "
                "--continue' again",
            )


def _refuse_dropped_files(
    git: Git,
    state: RefreshState,
    patch: Patch,
    tree: str,
    pin_commit: str,
    command: str,
    confirmed: Sequence[str],
) -> None:
    """A resolution must change every file the original patch changed, unless the user
    confirmed each one it drops (``--drop-file PATH``): a file silently left out is a
    change that no longer ships. A file upstream renamed is named with its new path."""
    original = touched_paths(patch.parsed)
    resolved = {path for _, path in git.diff_name_status(state.base, tree)}
    dropped = [path for path in original if path not in resolved]
    unknown = [path for path in confirmed if path not in dropped]
    if unknown:
        raise FatalError(
            f"--drop-file {unknown[0]}: the resolution of {patch.name} does not drop it "
            f"(it drops {', '.join(dropped) or 'no file'})",
            "name only files of the patch that the resolution leaves out; nothing was changed",
        )
    left = [path for path in dropped if path not in confirmed]
    if not left:
        return
    renamed = git.renames(pin_commit, state.onto_commit)
    named = [
        f"{path} (renamed upstream to {renamed[path]})" if path in renamed else path
        for path in left
    ]
    again = command_line("forktool", command, "--continue", *(f"--drop-file={p}" for p in left))
    raise FatalError(
        f"the resolution of {patch.name} drops {len(left)} of the {len(original)} file(s) "
        f"it changed: {', '.join(named)}",
        "carry the change into each file (a renamed file under its new name) and run "
        f"'forktool {command} --continue' again; to drop them on purpose: {again}",
    )


def _restart(command: str, onto: str) -> str:
    """The command that starts the refresh (or sync) onto ``onto`` again; a tarball's
    tree is named by its tag, with the tarball given again."""
    tag = tag_of(onto)
    again = ["sync", tag] if command == "sync" else ["refresh", "--onto", tag]
    tarball = " --tarball FILE..." if tag != onto else ""
    return command_line("forktool", *again) + tarball


def _links(fork: Fork, done: Sequence[RefreshEntry]) -> list[Link]:
    """The finished chain, each link as its patch moved, so each is written as a refresh
    with no conflict writes it: kept (``unchanged``), at an offset (``rebased``: kept
    where the fork's rule accepts one, else regenerated), or by a merge (``merged`` by
    git, ``resolved`` by hand: regenerated, never the old bytes)."""
    by_name = {p.name: p for p in fork.patches}
    return [
        Link(
            by_name[e.patch],
            PatchVerdict(e.patch, "offset" if e.status == "rebased" else "exact"),
            e.commit,
            merged=e.status in ("merged", "resolved"),
        )
        for e in done
    ]


def _finish_interrupted(fork: Fork, git: Git, state: RefreshState) -> RefreshResult:
    """A refresh whose files a killed run had written: only its worktree was left."""
    close_worktree(git, Path(state.worktree))
    return RefreshResult(
        state.onto,
        state.onto_commit,
        fork.config.pin_tag,
        state.done,
        tuple(sorted(e.path for e in state.done if e.bytes_changed)),
        message=f"the refresh onto {state.onto} was already written by a run that was "
        f"interrupted; removed its worktree {state.worktree}",
    )


def refresh_abort(fork: Fork, git: Git) -> RefreshResult:
    """Drop a refresh in progress: remove its worktree and state; no fork file changes."""
    state = require_state(git)
    if state.finished:
        return _finish_interrupted(fork, git, state)
    close_worktree(git, Path(state.worktree))
    return RefreshResult(
        state.onto,
        state.onto_commit,
        fork.config.pin_tag,
        (),
        message=f"the refresh onto {state.onto} was dropped; nothing was written",
        aborted=True,
    )
