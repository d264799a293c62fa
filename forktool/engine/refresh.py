"""``refresh --onto TAG``: regenerate every patch of the series against a newer tag.

In series order and in a temporary index (no worktree), each patch is applied on
TAG plus the patches before it:

* ``unchanged``: it applies exactly (its bytes may still change: the ``index`` line
  names the blobs of TAG);
* ``rebased``: it applies only at an offset, and is regenerated at its new lines;
* ``conflict``: it does not apply (git never fuzzes, so a patch that would need fuzz
  is a conflict too): it needs a hand rebase. The patches after it are ``pending``.

Nothing is written unless every patch succeeds. With ``worktree``, a conflict leaves
a worktree at TAG with the earlier patches committed and the conflicting one applied
with 3-way markers (the only place forktool uses ``git apply --3way``); ``--continue``
takes the worktree's content as the resolution (``resolved``) and goes on, and
``--abort`` removes it. The state lives in ``<git-dir>/forktool/refresh/``.

A refresh never changes the pin: the patches are regenerated against TAG while
``forktool.yaml`` still names the old tag, and ``pin bump TAG`` follows (the sync
procedure is retire, refresh, bump).
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from forktool.engine.canonical import (
    Chain,
    Link,
    build_chain,
    chain_bytes,
    commit_meta,
    commit_tree,
    range_diff,
)
from forktool.errors import FatalError, rolled_back
from forktool.faults import faultpoint
from forktool.fork import Fork, Patch
from forktool.fsutil import write_files
from forktool.git import Git, TempIndex
from forktool.model.patchfile import touched_paths
from forktool.state import read_state, state_bytes, state_path

RefreshStatus = Literal["unchanged", "rebased", "conflict", "resolved", "not-tried"]
_MARKERS = ("<<<<<<< ", ">>>>>>> ")


@dataclass(frozen=True)
class RefreshEntry:
    patch: str
    path: str
    status: RefreshStatus
    message: str = ""
    bytes_changed: bool = False
    commit: str | None = field(default=None, compare=False)

    def to_json(self) -> dict[str, object]:
        return {
            "patch": self.patch,
            "path": self.path,
            "status": self.status,
            "message": self.message,
            "bytes_changed": self.bytes_changed,
        }


@dataclass(frozen=True)
class RefreshResult:
    onto: str
    onto_commit: str
    pin: str
    entries: tuple[RefreshEntry, ...]
    written: tuple[str, ...] = ()
    range_diff: str = ""
    worktree: str | None = None  # the hand-resolution worktree, while one is open
    message: str = ""
    aborted: bool = False

    @property
    def ok(self) -> bool:
        if self.aborted:
            return True
        return bool(self.entries) and all(
            e.status in ("unchanged", "rebased", "resolved") for e in self.entries
        )

    @property
    def in_progress(self) -> bool:
        return self.worktree is not None

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "onto": self.onto,
            "onto_commit": self.onto_commit,
            "pin": self.pin,
            "ok": self.ok,
            "patches": [e.to_json() for e in self.entries],
            "written": list(self.written),
            "range_diff": self.range_diff,
            "in_progress": self.in_progress,
            "worktree": self.worktree,
        }
        if self.message:
            data["message"] = self.message
        if self.aborted:
            data["aborted"] = True
        return data


# -- state of a hand resolution -------------------------------------------------------


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


def _state_path(git: Git) -> Path:
    return state_path(git, "refresh", shared=False)


def load_state(git: Git) -> RefreshState | None:
    path = _state_path(git)
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


def _state_bytes(state: RefreshState) -> bytes:
    return state_bytes(state.to_json())


def _save_state(git: Git, state: RefreshState) -> None:
    write_files({_state_path(git): _state_bytes(state)})


def _drop_state(git: Git) -> None:
    shutil.rmtree(_state_path(git).parent, ignore_errors=True)


def fingerprint(fork: Fork) -> str:
    """A digest of the series, the map and every patch file, to notice edits mid-refresh."""
    digest = hashlib.sha256()
    for path in (fork.config.series_path, fork.config.map_path):
        digest.update(path.read_bytes() if path.is_file() else b"")
    for patch in fork.patches:
        digest.update(patch.name.encode() + b"\0" + patch.data + b"\0")
    return digest.hexdigest()


# -- the refresh ----------------------------------------------------------------------


def _entries(chain: Chain, patches: Sequence[Patch]) -> list[RefreshEntry]:
    entries = []
    for position, patch in enumerate(patches):
        if position >= len(chain.links):
            message = "not tried: an earlier patch conflicts"
            entries.append(RefreshEntry(patch.name, patch.rel, "not-tried", message))
            continue
        link = chain.links[position]
        entries.append(_entry(link))
    return entries


def already_on(link: Link) -> bool:
    """The patch failed because its change is already there (it reverse-applies): a
    hand resolution could only change nothing, so none is ever offered."""
    return link.commit is None and link.verdict.message.startswith("already applied")


def retire_first(patch: Patch, onto: str) -> str:
    """What to do about a patch whose change ``onto`` already has. A pending patch's PR
    has most likely merged: recording its commit lets ancestry retire it, unforced."""
    name = patch.name
    force = f"forktool retire {name} --tag {onto} --force --reason '...'"
    if patch.mapping is not None and patch.mapping.pending:
        return (
            f"{name} is already on {onto} (it reverse-applies exactly) and is pending: "
            "record the commit that merged its PR first (forktool upstream resolve --write), "
            f"so ancestry retires it, or retire it by hand ({force})"
        )
    return (
        f"{name} is already on {onto} (it reverse-applies exactly): retire it first "
        f"({force}) or drop it"
    )


def _entry(link: Link) -> RefreshEntry:
    verdict, patch = link.verdict, link.patch
    if already_on(link):
        message = f"{verdict.message}; retire it first, or drop it"
        return RefreshEntry(patch.name, patch.rel, "conflict", message)
    if link.commit is None:
        return RefreshEntry(patch.name, patch.rel, "conflict", verdict.message)
    if verdict.status == "exact":
        return RefreshEntry(patch.name, patch.rel, "unchanged", "", commit=link.commit)
    message = verdict.message.replace("; run 'forktool refresh'", "") + "; regenerated"
    return RefreshEntry(patch.name, patch.rel, "rebased", message, commit=link.commit)


def plan_refresh(git: Git, onto: str, patches: Sequence[Patch]) -> list[RefreshEntry]:
    """What a refresh of ``patches`` onto ``onto`` would find; nothing is written."""
    onto_commit = _onto_commit(git, onto)
    with git.temp_index() as index:
        chain = build_chain(index, onto_commit, patches, base_name=onto)
        return _unwritten(_entries(chain, patches))


def _unwritten(entries: Sequence[RefreshEntry]) -> list[RefreshEntry]:
    """The entries of a refresh that wrote nothing: a rebased patch *would be* regenerated."""
    return [
        replace(e, message=e.message.removesuffix("; regenerated") + "; would be regenerated")
        if e.status == "rebased"
        else e
        for e in entries
    ]


def _onto_commit(git: Git, onto: str) -> str:
    return git.tag_commit(onto) or git.resolve_commit(onto, what="tag or commit")


def _review(index: TempIndex, fork: Fork, pin_commit: str, onto: str, tip: str) -> str:
    old = build_chain(index, pin_commit, fork.patches, base_name=fork.config.pin_tag)
    if not old.complete:
        return ""
    return range_diff(index, (pin_commit, old.tip), (onto, tip))


def _write(
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
        final.append(
            RefreshEntry(
                entry.patch, entry.path, entry.status, entry.message, changed, entry.commit
            )
        )
    written = tuple(sorted(fork.config.rel(p) for p in changes))
    if finished is not None:
        done = replace(finished, done=tuple(final), finished=True)
        changes[_state_path(git)] = _state_bytes(done)
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


def refresh_onto(
    fork: Fork, git: Git, onto: str, *, pin_commit: str, worktree: Path | None = None
) -> RefreshResult:
    """Regenerate the series against ``onto``; write only when every patch succeeds."""
    state = load_state(git)
    if state is not None and state.finished:
        _close(git, Path(state.worktree))  # written already; only its worktree was left
    elif state is not None:
        raise FatalError(
            "a refresh is already in progress",
            "finish it with 'forktool refresh --continue' or drop it with 'forktool refresh --abort'",
        )
    if not fork.patches:
        raise FatalError(
            f"{fork.config.series} lists no patches: there is nothing to refresh",
            "a fork with no patches only needs 'forktool pin bump'",
        )
    if worktree is not None and worktree.exists() and any(worktree.iterdir()):
        raise FatalError(f"--worktree {worktree} exists and is not empty", "pick a new directory")
    onto_commit = _onto_commit(git, onto)
    stamp = fingerprint(fork)
    pin = fork.config.pin_tag
    with git.temp_index() as index:
        chain = build_chain(index, onto_commit, fork.patches, base_name=onto)
        entries = _entries(chain, fork.patches)
        if not chain.complete:
            failed = chain.failed
            assert failed is not None
            if already_on(failed):
                return RefreshResult(
                    onto,
                    onto_commit,
                    pin,
                    tuple(_unwritten(entries)),
                    message=f"{retire_first(failed.patch, onto)}; nothing was written",
                )
            if worktree is None:
                return RefreshResult(
                    onto,
                    onto_commit,
                    pin,
                    tuple(_unwritten(entries)),
                    message=f"{failed.patch.name} conflicts on {onto}: nothing was written; "
                    "rerun with --worktree DIR to resolve it by hand",
                )
        else:
            generated = chain_bytes(index, chain)
            review = _review(index, fork, pin_commit, onto_commit, chain.tip)
    if not chain.complete:
        assert worktree is not None
        done = [e for e in entries if e.status in ("unchanged", "rebased")]
        reason = entries[len(done)].message
        return _open_worktree(fork, git, onto, onto_commit, worktree, done, stamp, reason)
    final, written = _write(fork, git, entries, generated, stamp)
    return RefreshResult(onto, onto_commit, pin, tuple(final), written, review)


# -- hand resolution ------------------------------------------------------------------


def _persisted_base(
    fork: Fork, git: Git, onto: str, onto_commit: str, done: Sequence[RefreshEntry]
) -> tuple[str, list[RefreshEntry]]:
    """Re-make the commits of the patches before the conflict with their objects kept:
    the worktree checks them out, so they must outlive the temporary index."""
    if not done:
        return onto_commit, []
    with git.temp_index(keep_objects=True) as index:
        chain = build_chain(index, onto_commit, fork.patches[: len(done)], base_name=onto)
    if not chain.complete:
        raise FatalError("the patches before the conflict no longer apply; nothing was written")
    kept = [
        RefreshEntry(e.patch, e.path, e.status, e.message, False, link.commit)
        for e, link in zip(done, chain.links, strict=True)
    ]
    return chain.tip, kept


def _open_worktree(
    fork: Fork,
    git: Git,
    onto: str,
    onto_commit: str,
    worktree: Path,
    done: list[RefreshEntry],
    stamp: str,
    reason: str,
) -> RefreshResult:
    base, kept = _persisted_base(fork, git, onto, onto_commit, done)
    conflict = fork.patches[len(kept)]
    directory = worktree.resolve()
    existed = directory.exists()
    # The state first: if this run is killed from here on, --abort finds and removes
    # the worktree (and --continue refuses a worktree without the conflict applied).
    _save_state(
        git,
        RefreshState(onto, onto_commit, str(directory), base, conflict.name, tuple(kept), stamp),
    )
    faultpoint("refresh.worktree_add")
    try:
        git.worktree_add_sparse(directory, base, touched_paths(conflict.parsed))
    except FatalError as exc:
        _undo_open(git, directory, made=not existed)
        raise rolled_back(exc, "the refresh was rolled back: nothing changed") from exc
    faultpoint("refresh.apply_3way")
    detail = _apply_3way(Git(directory), conflict, onto)
    return _pending_result(
        fork, onto, onto_commit, kept, conflict, directory, f"{reason}; {detail}"
    )


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
    _drop_state(git)


def _apply_3way(wt: Git, patch: Patch, onto: str) -> str:
    """Apply ``patch`` in the hand-resolution worktree, leaving conflict markers (or .rej),
    and say what the worktree holds afterwards: git's own words ("with conflicts") are
    not read, because a merge can end with nothing to resolve."""
    res = wt.apply_3way(patch.path)
    if not res.ok and "conflicts" not in res.err:
        wt.apply_with_rejects(patch.path)
        return "3-way merge impossible (blobs missing): the hunks that failed are in *.rej files"
    unmerged = wt.unmerged_paths()
    if unmerged:
        return f"applied with conflict markers in {', '.join(unmerged)}"
    if not wt.status_entries(["."]):
        return (
            f"applying it changed nothing, {onto} already has the change: retire the patch "
            "or drop it (--abort); nothing to resolve"
        )
    return "applied cleanly with a 3-way merge: check the result"


def _pending_result(
    fork: Fork,
    onto: str,
    onto_commit: str,
    kept: Sequence[RefreshEntry],
    conflict: Patch,
    directory: Path,
    detail: str,
) -> RefreshResult:
    entries = list(kept)
    entries.append(
        RefreshEntry(
            conflict.name,
            conflict.rel,
            "conflict",
            f"{detail} in {directory}",
        )
    )
    for patch in fork.patches[len(entries) :]:
        entries.append(RefreshEntry(patch.name, patch.rel, "not-tried", "not tried yet"))
    return RefreshResult(
        onto,
        onto_commit,
        fork.config.pin_tag,
        tuple(entries),
        worktree=str(directory),
        message=f"resolve {conflict.name} in {directory} (edit the files; no need to commit), "
        "then run 'forktool refresh --continue' (or --abort)",
    )


def _require_state(git: Git) -> RefreshState:
    state = load_state(git)
    if state is None:
        raise FatalError(
            "no refresh is in progress", "start one with 'forktool refresh --onto TAG'"
        )
    return state


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


def refresh_continue(
    fork: Fork, git: Git, *, pin_commit: str, command: str = "refresh"
) -> RefreshResult:
    """Take the worktree's content as the resolution of the conflicting patch, and go on.

    ``command`` is the one the user runs (``refresh``, or ``sync`` while a sync is
    stopped on this refresh): the hints name its ``--continue`` and ``--abort``.
    """
    state = _require_state(git)
    if state.finished:
        return _finish_interrupted(fork, git, state)
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
    wt = Git(directory)
    patch = fork.patch(state.conflict)
    tree = _resolution(wt, state, command)
    base_tree = git.tree_id(state.base)
    if tree == base_tree:
        raise FatalError(
            f"the resolution of {patch.name} changes nothing: {state.onto} already has the change",
            f"run 'forktool {command} --abort', then retire the patch (forktool retire "
            f"{patch.name} --tag {state.onto} --force --reason '...') or drop it, and "
            f"run '{_restart(command, state.onto)}' again",
        )
    meta = commit_meta(patch)
    if isinstance(meta, str):
        raise FatalError(meta)
    resolved = commit_tree(git, tree, state.base, meta)
    done = [
        *state.done,
        RefreshEntry(
            patch.name, patch.rel, "resolved", "resolved by hand in the worktree", commit=resolved
        ),
    ]
    rest = fork.patches[len(done) :]
    with git.temp_index(keep_objects=True) as index:
        chain = build_chain(index, resolved, rest, base_name=f"{state.onto} + the resolution")
    done += [_entry(link) for link in chain.links]
    if not chain.complete:
        failed = chain.failed
        assert failed is not None
        if already_on(failed):
            raise FatalError(
                retire_first(failed.patch, state.onto),
                f"run 'forktool {command} --abort', retire or drop it, and run "
                f"'{_restart(command, state.onto)}' again",
            )
        reason = done[-1].message
        return _move_worktree(fork, git, state, wt, done[:-1], chain.tip, failed.patch, reason)
    with git.temp_index() as index:
        full = Chain(state.onto_commit, tuple(_links(fork, done)))
        generated = chain_bytes(index, full)
        review = _review(index, fork, pin_commit, state.onto_commit, full.tip)
    final, written = _write(fork, git, done, generated, state.fingerprint, finished=state)
    _close(git, directory)
    return RefreshResult(
        state.onto, state.onto_commit, fork.config.pin_tag, tuple(final), written, review
    )


def _restart(command: str, onto: str) -> str:
    return f"forktool sync {onto}" if command == "sync" else f"forktool refresh --onto {onto}"


def _links(fork: Fork, done: Sequence[RefreshEntry]) -> list[Link]:
    from forktool.engine.attempt import PatchVerdict

    by_name = {p.name: p for p in fork.patches}
    return [Link(by_name[e.patch], PatchVerdict(e.patch, "exact"), e.commit) for e in done]


def _move_worktree(
    fork: Fork,
    git: Git,
    state: RefreshState,
    wt: Git,
    done: list[RefreshEntry],
    base: str,
    conflict: Patch,
    reason: str,
) -> RefreshResult:
    faultpoint("refresh.worktree_reset")
    wt.reset_hard(base, purpose="move the worktree on")
    wt.sparse_reset(base, touched_paths(conflict.parsed))
    wt.clean()
    detail = _apply_3way(wt, conflict, state.onto)
    _save_state(
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
        f"{reason}; {detail}",
    )


def _close(git: Git, directory: Path) -> None:
    faultpoint("refresh.worktree_remove")
    if directory.exists():
        git.remove_worktree(directory)
    git.worktree_prune()
    faultpoint("refresh.state_drop")
    _drop_state(git)


def _finish_interrupted(fork: Fork, git: Git, state: RefreshState) -> RefreshResult:
    """A refresh whose files a killed run had written: only its worktree was left."""
    _close(git, Path(state.worktree))
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
    state = _require_state(git)
    if state.finished:
        return _finish_interrupted(fork, git, state)
    _close(git, Path(state.worktree))
    return RefreshResult(
        state.onto,
        state.onto_commit,
        fork.config.pin_tag,
        (),
        message=f"the refresh onto {state.onto} was dropped; nothing was written",
        aborted=True,
    )
