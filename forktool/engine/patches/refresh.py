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

This module is the run onto TAG; the parts are beside it: ``refresh_moves`` (how each
patch moves), ``refresh_result`` (what a refresh reports), ``refresh_state`` (the state
of a hand resolution), ``refresh_worktree`` (its worktree), ``refresh_resolution``
(``--continue`` and ``--abort``) and ``refresh_write`` (the series written, the review).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from forktool.engine.patches.canonical import Chain, chain_bytes
from forktool.engine.patches.refresh_moves import (
    Series,
    already_on,
    presence,
    refresh_chain,
    retire_all_first,
)
from forktool.engine.patches.refresh_result import (
    MOVED,
    RefreshEntry,
    RefreshResult,
    chain_entries,
    first_conflict,
    unwritten,
)
from forktool.engine.patches.refresh_state import fingerprint, load_state
from forktool.engine.patches.refresh_worktree import close_worktree, open_worktree
from forktool.engine.patches.refresh_write import review_range, write_refreshed
from forktool.errors import FatalError
from forktool.fork import Fork
from forktool.git import Git


def refresh_onto(
    fork: Fork,
    git: Git,
    onto: str,
    *,
    pin_commit: str,
    worktree: Path | None = None,
    onto_commit: str,
) -> RefreshResult:
    """Regenerate the series against ``onto`` (named so; ``onto_commit``, as resolved at
    the command, or a release tarball import); write only when every patch succeeds."""
    _refuse_to_start(fork, git, worktree)
    stamp = fingerprint(fork)
    pin = fork.config.pin_tag
    series = Series.of(fork, pin_commit)
    with git.temp_index() as index:
        chain = refresh_chain(index, onto_commit, fork.patches, series, base_name=onto)
        entries = chain_entries(chain, series.keeps_offsets)
        if chain.complete:
            generated = chain_bytes(index, chain, fork.config.patch_form, fork.config.apply_rule)
            review = review_range(index, fork, pin_commit, onto_commit, chain.tip)
    if chain.complete:
        final, written = write_refreshed(fork, git, entries, generated, stamp)
        return RefreshResult(onto, onto_commit, pin, tuple(final), written, review)
    stopped = _stopped(chain, entries, onto, onto_commit, pin, worktree)
    if stopped is not None:
        return stopped
    assert worktree is not None
    first = first_conflict(entries)
    return open_worktree(fork, git, onto, onto_commit, worktree, entries, first, stamp, pin_commit)


def _refuse_to_start(fork: Fork, git: Git, worktree: Path | None) -> None:
    """Refuse a refresh while another is in progress (one that was written already
    only loses its worktree), of an empty series, or into a non-empty ``--worktree``."""
    state = load_state(git)
    if state is not None and state.finished:
        close_worktree(git, Path(state.worktree))  # written already; only its worktree was left
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


def _stopped(
    chain: Chain,
    entries: Sequence[RefreshEntry],
    onto: str,
    onto_commit: str,
    pin: str,
    worktree: Path | None,
) -> RefreshResult | None:
    """The result of a refresh that stops at its conflicts, writing nothing: a patch
    already on ``onto`` is retired, never resolved by hand; without ``--worktree`` the
    conflicts are only listed. None when a worktree is to be opened."""
    present = [link for link in chain.links if already_on(link)]
    if present:
        told = retire_all_first(
            [(link.patch, presence(link.verdict.message)) for link in present], onto
        )
        there = {link.patch.name for link in present}
        rest = [e.patch for e in entries if e.status not in MOVED and e.patch not in there]
        if rest:  # said too: the table is not all a reader looks at
            them = "it" if len(rest) == 1 else "them"
            those = "that one is" if len(present) == 1 else "those are"
            told += (
                f"; {_conflicting(rest, onto, more=True)}: rerun with --worktree DIR to "
                f"resolve {them} by hand once {those} retired"
            )
        message = f"{told}; nothing was written"
    elif worktree is None:
        message = _conflicts_message(entries, onto)
    else:
        return None
    return RefreshResult(onto, onto_commit, pin, tuple(unwritten(entries)), message=message)


def _conflicting(names: Sequence[str], onto: str, *, more: bool = False) -> str:
    """'0002 conflicts on v2', '3 patches conflict on v2 (0002, 0004, 0005)'; ``more``
    (said after the patches already there): '0002 also conflicts on v2', '3 more
    patches conflict on v2 (...)'."""
    if len(names) == 1:
        return f"{names[0]} {'also ' if more else ''}conflicts on {onto}"
    count = f"{len(names)} more patches" if more else f"{len(names)} patches"
    return f"{count} conflict on {onto} ({', '.join(names)})"


def _conflicts_message(entries: Sequence[RefreshEntry], onto: str) -> str:
    names = [e.patch for e in entries if e.status not in MOVED]
    if len(names) == 1:
        return (
            f"{_conflicting(names, onto)}: nothing was written; "
            "rerun with --worktree DIR to resolve it by hand"
        )
    return (
        f"{_conflicting(names, onto)}: nothing was written; "
        "rerun with --worktree DIR to resolve them by hand, one after the other"
    )


def plan_refresh(
    git: Git,
    onto: str,
    series: Series,
    *,
    onto_commit: str,
    carried: Sequence[tuple[str, str, str]] = (),
) -> list[RefreshEntry]:
    """What a refresh of ``series.patches`` onto ``onto`` (named so; ``onto_commit``, as
    resolved at the command, or a release tarball import) would find; nothing is
    written. ``carried`` files (mode, blob, path) are added to ``onto``'s tree first, in
    the temporary index only."""
    with git.temp_index() as index:
        if carried:
            index.read_tree(onto_commit, cache=True)
            index.add_entries(carried)
            onto_commit = git.commit_tree(
                index.write_tree(),
                [onto_commit],
                f"{onto} with the release tarball's files\n".encode(),
                purpose="plan on the tag with the tarball's files",
                env={**index.env, **CARRIED_IDENTITY},
            )
        chain = refresh_chain(index, onto_commit, series.patches, series, base_name=onto)
        return unwritten(chain_entries(chain, series.keeps_offsets))


CARRIED_IDENTITY = {
    "GIT_AUTHOR_NAME": "forktool",
    "GIT_AUTHOR_EMAIL": "forktool@forktool.invalid",
    "GIT_AUTHOR_DATE": "1704067200 +0000",
    "GIT_COMMITTER_NAME": "forktool",
    "GIT_COMMITTER_EMAIL": "forktool@forktool.invalid",
    "GIT_COMMITTER_DATE": "1704067200 +0000",
}
