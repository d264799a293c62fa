"""``refresh --onto TAG``: regenerate every patch of the series against a newer tag.

In series order and in a temporary index (no worktree), each patch is applied on
TAG plus the patches before it:

* ``unchanged``: it applies exactly (its bytes may still change: the ``index`` line
  names the blobs of TAG);
* ``rebased``: it applies only at an offset, and is regenerated at its new lines;
* ``merged``: it applies neither way, but git's 3-way merge (:mod:`forktool.engine.patches.merge_patch`:
  the patch's own pre-image on the pin, merge-ort, renames followed) moves it with no
  conflict; the result is regenerated and proven exact on TAG, and shown for review;
* ``conflict``: neither (git never fuzzes, so a patch that would need fuzz and does not
  merge is a conflict too): it needs a hand rebase.

A conflict does not stop the series: the patches after it are tried on the tree without
it, as ``git rebase`` goes on after a skipped commit, so every conflict is known at once.
``refresh.allow_merged: false`` in forktool.yaml makes a ``merged`` patch a conflict, for
forks that want a human on every move that is not an apply.

Nothing is written unless every patch succeeds. With ``worktree``, a conflict leaves
a worktree at TAG with the earlier patches committed and the conflicting one merged
with conflict markers (git's merge from its pre-image, else ``git apply --3way``: the
only place forktool uses it); ``--continue``
takes the worktree's content as the resolution (``resolved``) and goes on to the next
conflict, and ``--abort`` removes it. The state lives in ``<git-dir>/forktool/refresh/``.

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

from forktool.config import ApplyRule, PatchForm
from forktool.engine.apply.verdict import PatchVerdict
from forktool.engine.patches.canonical import (
    Chain,
    Link,
    apply_and_commit,
    build_chain,
    chain_bytes,
    commit_meta,
    commit_tree,
    meta_for_form,
    range_diff,
)
from forktool.engine.patches.merge_patch import (
    PreImages,
    merge_onto,
    merge_sides,
    prove,
    review_notes,
)
from forktool.errors import FatalError, command_line, rolled_back
from forktool.faults import faultpoint
from forktool.fork import Fork, Patch
from forktool.fsutil import write_files
from forktool.git import Git, TempIndex
from forktool.model.patchfile import touched_paths
from forktool.state import read_state, state_bytes, state_path

RefreshStatus = Literal["unchanged", "rebased", "merged", "conflict", "resolved", "not-tried"]
MOVED = ("unchanged", "rebased", "merged", "resolved")  # the statuses a written refresh has
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
        return bool(self.entries) and all(e.status in MOVED for e in self.entries)

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


def _entries(chain: Chain) -> list[RefreshEntry]:
    return [_entry(link) for link in chain.links]


@dataclass(frozen=True)
class Series:
    """What a refresh chain needs besides the patches: the pin they were made on (each
    patch's pre-image for a 3-way merge) and whether a merged patch is allowed."""

    pin_commit: str
    pin_name: str
    patches: tuple[Patch, ...]  # the whole series, for the pre-images
    allow_merged: bool = True
    rule: ApplyRule = "exact"  # the fork's apply rule (dpkg's accepts an offset)
    form: PatchForm = "canonical"  # how a chain's commits get their metadata

    def pre_images(self) -> tuple[str, tuple[Patch, ...], str]:
        """The arguments of :class:`PreImages` after its index."""
        return self.pin_commit, self.patches, self.pin_name

    @classmethod
    def of(cls, fork: Fork, pin_commit: str, patches: Sequence[Patch] | None = None) -> Series:
        config = fork.config
        return cls(
            pin_commit,
            config.pin_tag,
            tuple(fork.patches if patches is None else patches),
            config.allow_merged,
            config.apply_rule,
            config.patch_form,
        )


def refresh_chain(
    index: TempIndex,
    base_commit: str,
    patches: Sequence[Patch],
    series: Series,
    *,
    base_name: str,
) -> Chain:
    """Commit ``patches`` one by one on ``base_commit``: applied exactly, at an offset, or
    by a clean 3-way merge. A patch that moves none of these ways is skipped and the
    rest go on without it (its link has no commit)."""
    index.read_tree(f"{base_commit}^{{tree}}")
    pre = PreImages(index, *series.pre_images())
    links: list[Link] = []
    parent = base_commit
    for patch in patches:
        link = apply_and_commit(
            index,
            parent,
            patch,
            base_name=base_name,
            allow_offset=True,
            meta_for=meta_for_form(series.form),
            rule=series.rule,
        )
        if link.commit is None and _mergeable(link):
            link = _merged(index, parent, link, pre, series, base_name)
        links.append(link)
        if link.commit is not None:
            parent = link.commit
    return Chain(base_commit, tuple(links))


def _mergeable(link: Link) -> bool:
    return link.verdict.status in ("fails", "fuzz") and not already_on(link)


def _merged(
    index: TempIndex, parent: str, link: Link, pre: PreImages, series: Series, base_name: str
) -> Link:
    """``link`` (a patch that did not apply) moved by a 3-way merge, or why not."""
    patch, verdict = link.patch, link.verdict
    merge = merge_onto(index, parent, patch, pre)
    if merge.absorbed:
        message = (
            f"already applied: {base_name} has the whole change (a 3-way merge of it from "
            f"its pre-image on {series.pin_name} changes nothing)"
        )
        return Link(patch, replace(verdict, message=message), None)
    if merge.tree is None:
        return Link(patch, replace(verdict, message=f"{verdict.message}; {merge.message}"), None)
    meta = meta_for_form(series.form)(patch)
    assert not isinstance(meta, str)  # apply_and_commit read it already
    commit = commit_tree(index.git, merge.tree, parent, meta, index.env)
    data, unproven = prove(index, parent, commit, patch)
    if unproven:
        return Link(patch, replace(verdict, message=f"{verdict.message}; {unproven}"), None)
    notes = "".join(f"; {note}" for note in review_notes(patch.parsed, data))
    if not series.allow_merged:
        message = (
            f"{verdict.message}; a 3-way merge moves it with no conflict{notes}, but "
            "refresh.allow_merged is false: resolve it by hand"
        )
        return Link(patch, replace(verdict, message=message), None)
    index.read_tree(merge.tree)
    message = (
        f"{verdict.message.removesuffix('; rebase the patch by hand')}; moved by a 3-way merge "
        f"from its pre-image on {series.pin_name} (no conflict, proven exact){notes}; "
        "review it; regenerated"
    )
    return Link(patch, replace(verdict, message=message), commit, merged=True)


def already_on(link: Link) -> bool:
    """The patch failed because its change is already there (it reverse-applies): a
    hand resolution could only change nothing, so none is ever offered."""
    return link.commit is None and link.verdict.message.startswith("already applied")


def presence(message: str) -> str:
    """How a refresh saw that a patch's change is already there, from its message."""
    if "3-way merge" in message:
        return "a 3-way merge of it changes nothing"
    return "it reverse-applies exactly"


def retire_first(patch: Patch, onto: str, how: str = "it reverse-applies exactly") -> str:
    """What to do about a patch whose change ``onto`` already has (``how``: how that was
    seen, :func:`presence`). A pending patch's PR has most likely merged: recording its
    commit lets ancestry retire it, unforced."""
    name = patch.name
    force = command_line("forktool", "retire", name, "--tag", onto, "--force") + " --reason '...'"
    if patch.mapping is not None and patch.mapping.pending:
        return (
            f"{name} is already on {onto} ({how}) and is pending: "
            "record the commit that merged its PR first (forktool upstream resolve --write), "
            f"so ancestry retires it, or retire it by hand ({force})"
        )
    return f"{name} is already on {onto} ({how}): retire it first ({force}) or drop it"


def _entry(link: Link) -> RefreshEntry:
    verdict, patch = link.verdict, link.patch
    if already_on(link):
        message = f"{verdict.message}; retire it first, or drop it"
        return RefreshEntry(patch.name, patch.rel, "conflict", message)
    if link.commit is None:
        return RefreshEntry(patch.name, patch.rel, "conflict", verdict.message)
    if link.merged:
        return RefreshEntry(patch.name, patch.rel, "merged", verdict.message, commit=link.commit)
    if verdict.status == "exact":
        return RefreshEntry(patch.name, patch.rel, "unchanged", "", commit=link.commit)
    message = verdict.message.replace("; run 'forktool refresh'", "") + "; regenerated"
    return RefreshEntry(patch.name, patch.rel, "rebased", message, commit=link.commit)


def plan_refresh(
    git: Git,
    onto: str,
    series: Series,
    *,
    onto_commit: str | None = None,
    carried: Sequence[tuple[str, str, str]] = (),
) -> list[RefreshEntry]:
    """What a refresh of ``series.patches`` onto ``onto`` (``onto_commit`` when given: a
    release tarball import) would find; nothing is written. ``carried`` files (mode,
    blob, path) are added to ``onto``'s tree first, in the temporary index only."""
    onto_commit = onto_commit or _onto_commit(git, onto)
    with git.temp_index() as index:
        if carried:
            index.read_tree(f"{onto_commit}^{{tree}}")
            index.add_entries(carried)
            onto_commit = git.commit_tree(
                index.write_tree(),
                [onto_commit],
                f"{onto} with the release tarball's files\n".encode(),
                purpose="plan on the tag with the tarball's files",
                env={**index.env, **CARRIED_IDENTITY},
            )
        chain = refresh_chain(index, onto_commit, series.patches, series, base_name=onto)
        return _unwritten(_entries(chain))


CARRIED_IDENTITY = {
    "GIT_AUTHOR_NAME": "forktool",
    "GIT_AUTHOR_EMAIL": "forktool@forktool.invalid",
    "GIT_AUTHOR_DATE": "1704067200 +0000",
    "GIT_COMMITTER_NAME": "forktool",
    "GIT_COMMITTER_EMAIL": "forktool@forktool.invalid",
    "GIT_COMMITTER_DATE": "1704067200 +0000",
}


def _unwritten(entries: Sequence[RefreshEntry]) -> list[RefreshEntry]:
    """The entries of a refresh that wrote nothing: a rebased patch *would be* regenerated."""
    return [
        replace(e, message=e.message.removesuffix("; regenerated") + "; would be regenerated")
        if e.status in ("rebased", "merged")
        else e
        for e in entries
    ]


def _onto_commit(git: Git, onto: str) -> str:
    return git.find_tag_commit(onto) or git.require_commit(onto, what="tag or commit")


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
        message = entry.message
        if not changed and entry.status == "rebased":  # accepted as it is (the dpkg rule)
            message = message.removesuffix("; regenerated") + "; kept byte for byte"
        final.append(
            RefreshEntry(entry.patch, entry.path, entry.status, message, changed, entry.commit)
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
    fork: Fork,
    git: Git,
    onto: str,
    *,
    pin_commit: str,
    worktree: Path | None = None,
    onto_commit: str | None = None,
) -> RefreshResult:
    """Regenerate the series against ``onto`` (named so; ``onto_commit`` when given, e.g.
    a release tarball import); write only when every patch succeeds."""
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
    onto_commit = onto_commit or _onto_commit(git, onto)
    stamp = fingerprint(fork)
    pin = fork.config.pin_tag
    series = Series.of(fork, pin_commit)
    with git.temp_index() as index:
        chain = refresh_chain(index, onto_commit, fork.patches, series, base_name=onto)
        entries = _entries(chain)
        if not chain.complete:
            present = [link for link in chain.links if already_on(link)]
            if present:
                told = "; ".join(
                    retire_first(link.patch, onto, presence(link.verdict.message))
                    for link in present
                )
                return RefreshResult(
                    onto,
                    onto_commit,
                    pin,
                    tuple(_unwritten(entries)),
                    message=f"{told}; nothing was written",
                )
            if worktree is None:
                return RefreshResult(
                    onto,
                    onto_commit,
                    pin,
                    tuple(_unwritten(entries)),
                    message=_conflicts_message(entries, onto),
                )
        else:
            generated = chain_bytes(index, chain, fork.config.patch_form, fork.config.apply_rule)
            review = _review(index, fork, pin_commit, onto_commit, chain.tip)
    if not chain.complete:
        assert worktree is not None
        first = _first_conflict(entries)
        return _open_worktree(
            fork, git, onto, onto_commit, worktree, entries, first, stamp, pin_commit
        )
    final, written = _write(fork, git, entries, generated, stamp)
    return RefreshResult(onto, onto_commit, pin, tuple(final), written, review)


def _first_conflict(entries: Sequence[RefreshEntry]) -> int:
    return next(i for i, e in enumerate(entries) if e.status not in MOVED)


def _conflicts_message(entries: Sequence[RefreshEntry], onto: str) -> str:
    names = [e.patch for e in entries if e.status not in MOVED]
    if len(names) == 1:
        return (
            f"{names[0]} conflicts on {onto}: nothing was written; "
            "rerun with --worktree DIR to resolve it by hand"
        )
    return (
        f"{len(names)} patches conflict on {onto} ({', '.join(names)}): nothing was written; "
        "rerun with --worktree DIR to resolve them by hand, one after the other"
    )


# -- hand resolution ------------------------------------------------------------------


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


def _open_worktree(
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
    base, kept = _persisted_base(fork, git, onto, onto_commit, entries[:first], pin_commit)
    conflict = fork.patches[first]
    reason = entries[first].message
    directory = worktree.resolve()
    existed = directory.exists()
    # The state first: if this run is killed from here on, --abort finds and removes
    # the worktree (and --continue refuses a worktree without the conflict applied).
    _save_state(
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
    _drop_state(git)


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
    entries = list(kept)
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
        for e in _unwritten(later)
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
            f"run 'forktool {command} --abort', then retire the patch ("
            + command_line("forktool", "retire", patch.name, "--tag", state.onto, "--force")
            + f" --reason '...') or drop it, and run '{_restart(command, state.onto)}' again",
        )
    _refuse_dropped_files(git, state, patch, tree, pin_commit, command, drop_files)
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
    series = Series.of(fork, pin_commit)
    base_name = f"{state.onto} + the resolution"
    with git.temp_index(keep_objects=True) as index:
        chain = refresh_chain(index, resolved, rest, series, base_name=base_name)
    later = _entries(chain)
    present = [link for link in chain.links if already_on(link)]
    if present:
        raise FatalError(
            retire_first(present[0].patch, state.onto, presence(present[0].verdict.message)),
            f"run 'forktool {command} --abort', retire or drop it, and run "
            f"'{_restart(command, state.onto)}' again",
        )
    if not chain.complete:
        first = _first_conflict(later)
        base = later[first - 1].commit if first else resolved
        assert base is not None
        return _move_worktree(
            fork, git, state, wt, [*done, *later[:first]], base, later[first:], series
        )
    done += later
    with git.temp_index() as index:
        full = Chain(state.onto_commit, tuple(_links(fork, done)))
        generated = chain_bytes(index, full, fork.config.patch_form, fork.config.apply_rule)
        review = _review(index, fork, pin_commit, state.onto_commit, full.tip)
    final, written = _write(fork, git, done, generated, state.fingerprint, finished=state)
    _close(git, directory)
    return RefreshResult(
        state.onto, state.onto_commit, fork.config.pin_tag, tuple(final), written, review
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
    if command == "sync":
        return command_line("forktool", "sync", onto)
    return command_line("forktool", "refresh", "--onto", onto)


def _links(fork: Fork, done: Sequence[RefreshEntry]) -> list[Link]:
    by_name = {p.name: p for p in fork.patches}
    return [Link(by_name[e.patch], PatchVerdict(e.patch, "exact"), e.commit) for e in done]


def _move_worktree(
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
        f"{later[0].message}; {detail}",
        later[1:],
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
