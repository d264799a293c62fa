"""The tree sync's merge commit records: TAG (or TAG's tarball import) plus the fork's
own files, minus what the ledger says the fork deletes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from forktool.config import Config
from forktool.engine.release.sync_state import SyncState
from forktool.fork import Fork
from forktool.git import Git
from forktool.model.ledger import Ledger


@dataclass(frozen=True)
class FileVersion:
    """A file as a tree holds it: its mode and its blob."""

    mode: str
    oid: str


@dataclass(frozen=True)
class MergedTree:
    """The merge's tree, or None with the conflicts that stop it; notes for a human."""

    tree: str | None
    conflicts: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def files_of(git: Git, rev: str) -> dict[str, FileVersion]:
    """Every file of ``rev``'s tree, by path."""
    return {path: FileVersion(mode, oid) for mode, oid, path in git.ls_tree(rev)}


def fork_paths(
    ledger: Ledger, files: Mapping[str, FileVersion], config: Config | None = None
) -> dict[str, FileVersion]:
    """The fork's own paths: declared ``add`` in the ledger, or its bookkeeping files."""
    return {
        path: version
        for path, version in files.items()
        if ledger.declaring("add", path) or (config is not None and config.owns(path))
    }


def merged_tree(fork: Fork, wt: Git, state: SyncState) -> MergedTree:
    """TAG (or TAG's tarball import, on a branch that merged the pinned one) plus the
    fork's own files minus declared deletions, written in ``wt``'s object store."""
    ledger = fork.ledger
    prefix = f"{state.fork_dir}/" if state.fork_dir else ""
    head = files_of(wt, "HEAD")
    tag_files = files_of(wt, state.merge_commit)
    ours = fork_paths(
        ledger,
        {path[len(prefix) :]: v for path, v in head.items() if path.startswith(prefix)},
        fork.config,
    )
    conflicts = tuple(
        f"{prefix}{path}: upstream {state.tag} ships this path too, but the fork owns it "
        "(ledger 'add'); move the fork's file or drop it from the ledger"
        for path, version in ours.items()
        if f"{prefix}{path}" in tag_files and tag_files[f"{prefix}{path}"] != version
    )
    if conflicts:
        return MergedTree(None, conflicts)
    notes: list[str] = []
    with wt.temp_index(state.merge_commit, keep_objects=True) as index:
        for path, version in ours.items():
            index.add_entry(version.mode, version.oid, f"{prefix}{path}")
        for path in tag_files:
            rel = path[len(prefix) :] if path.startswith(prefix) else None
            if rel is not None and ledger.declaring("del", rel):
                index.remove_entry(path)
                if path in head:
                    notes.append(
                        f"{path}: the fork deletes it (ledger 'del'); {state.tag} still ships it"
                    )
        notes += [
            f"{path}: was edited in place on the fork; the merge takes {state.tag}'s version"
            for path in _edited_in_place(wt, state, ledger, prefix, head)
        ]
        return MergedTree(index.write_tree(), (), tuple(notes))


def _edited_in_place(
    wt: Git, state: SyncState, ledger: Ledger, prefix: str, head: Mapping[str, FileVersion]
) -> Iterable[str]:
    """Upstream files the fork changed in place since the pin (the pinned import, or the
    pinned tag): the merge takes the tag's version of each."""
    previous = state.previous_import or wt.find_tag_commit(state.report.previous_tag)
    pinned = files_of(wt, previous) if previous else {}
    return [
        path
        for path, version in head.items()
        if path in pinned
        and version != pinned[path]
        and not (path.startswith(prefix) and ledger.declaring("add", path[len(prefix) :]))
    ]
