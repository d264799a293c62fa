"""How each patch of a series moves onto a new base: applied exactly, at an offset, or
by git's 3-way merge from its pre-image on the pin (:mod:`merge_patch`), in order, in
a temporary index. A patch that moves none of these ways is skipped, and one whose
change the base already has is told apart (it is retired, never resolved by hand)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from forktool.config import ApplyRule, PatchForm
from forktool.engine.apply.attempt import already_there, made_twice_verdict
from forktool.engine.apply.verdict import allows_offset, says_already_applied
from forktool.engine.patches.canonical import Chain, Link, apply_and_commit, commit_tree
from forktool.engine.patches.commit_meta import meta_for_form
from forktool.engine.patches.merge_patch import (
    PreImages,
    absorbed_message,
    merge_onto,
    prove,
    review_notes,
    seen_by_merge,
)
from forktool.engine.release.pin_state import tree_name
from forktool.errors import command_line, some_names
from forktool.fork import Fork, Patch
from forktool.git import TempIndex
from forktool.model.revision import tag_of


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

    @property
    def keeps_offsets(self) -> bool:
        """Whether a patch that applies at an offset is written as it is: the
        maintainers' form keeps every patch the fork's rule accepts byte for byte."""
        return self.form == "maintainers" and allows_offset(self.rule)

    def pre_images(self) -> tuple[str, tuple[Patch, ...], str, ApplyRule]:
        """The arguments of :class:`PreImages` after its index."""
        return self.pin_commit, self.patches, self.pin_name, self.rule

    @classmethod
    def of(cls, fork: Fork, pin_commit: str, patches: Sequence[Patch] | None = None) -> Series:
        """``pin_commit``: the tree the series applies on (:func:`require_tree`), the
        release tarball's import on a tarball-import pin, named as reports name it."""
        config = fork.config
        tarball = config.pin_import is not None and pin_commit == config.pin_import
        return cls(
            pin_commit,
            tree_name(config) if tarball else config.pin_tag,
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
        if link.verdict.status == "offset" and (there := _already_there(index, parent, link)):
            link = there
        if link.commit is None and _mergeable(link):
            link = _merged(index, parent, link, pre, series, base_name)
        links.append(link)
        if link.commit is not None:
            parent = link.commit
    return Chain(base_commit, tuple(links))


def _already_there(index: TempIndex, parent: str, link: Link) -> Link | None:
    """The refusal of a patch that applied only at an offset (``link``, committed, on
    ``index``) but is there already on ``parent``, the tree before it
    (:func:`~forktool.engine.apply.attempt.already_there`): the index is then left at
    ``parent``; None, and the index as it was, when it is not. Asked only of a patch
    that moved, so the tree before it is loaded again only then."""
    after = index.snapshot()
    index.read_tree(f"{parent}^{{tree}}")
    if not already_there(index, link.patch, link.verdict.hunks):
        after()
        return None
    return Link(link.patch, made_twice_verdict(link.verdict), None)


def _mergeable(link: Link) -> bool:
    return link.verdict.status in ("fails", "fuzz") and not already_on(link)


def _merged(
    index: TempIndex, parent: str, link: Link, pre: PreImages, series: Series, base_name: str
) -> Link:
    """``link`` (a patch that did not apply) moved by a 3-way merge, or why not."""
    patch, verdict = link.patch, link.verdict
    merge = merge_onto(index, parent, patch, pre)
    if merge.absorbed:
        message = absorbed_message(base_name, series.pin_name)
        return Link(patch, verdict._replace(message=message), None)
    if merge.tree is None:
        return Link(patch, verdict._replace(message=f"{verdict.message}; {merge.message}"), None)
    meta = meta_for_form(series.form)(patch)
    assert not isinstance(meta, str)  # apply_and_commit read it already
    commit = commit_tree(index.git, merge.tree, parent, meta, index.env)
    data, unproven = prove(index, parent, commit, patch)
    if unproven:
        return Link(patch, verdict._replace(message=f"{verdict.message}; {unproven}"), None)
    notes = "".join(f"; {note}" for note in review_notes(patch.parsed, data))
    if not series.allow_merged:
        message = (
            f"{verdict.message}; a 3-way merge moves it with no conflict{notes}, but "
            "refresh.allow_merged is false: resolve it by hand"
        )
        return Link(patch, verdict._replace(message=message), None)
    index.read_tree(merge.tree)
    message = (
        f"{verdict.message.removesuffix('; rebase the patch by hand')}; moved by a 3-way merge "
        f"from its pre-image on {series.pin_name} (no conflict, proven exact){notes}; "
        "review it; regenerated"
    )
    return Link(patch, verdict._replace(message=message), commit, merged=True)


def already_on(link: Link) -> bool:
    """The patch failed because its change is already there (it reverse-applies): a
    hand resolution could only change nothing, so none is ever offered."""
    return link.commit is None and says_already_applied(link.verdict.message)


def presence(message: str) -> str:
    """How a refresh saw that a patch's change is already there, from its message."""
    if seen_by_merge(message):
        return "a 3-way merge of it changes nothing"
    if "only at an offset" in message:
        return "it reverse-applies, and forward only at an offset"
    return "it reverse-applies exactly"


def retire_first(patch: Patch, onto: str, how: str = "it reverse-applies exactly") -> str:
    """What to do about a patch whose change ``onto`` already has (``how``: how that was
    seen, :func:`presence`). A pending patch's PR has most likely merged: recording its
    commit lets ancestry retire it, unforced."""
    name = patch.name
    force = command_line("forktool", "retire", name, "--tag", tag_of(onto), "--force")
    force += " --reason '...'"
    if _awaits_pr(patch):
        return (
            f"{name} is already on {onto} ({how}) and is pending: "
            "record the commit that merged its PR first (forktool upstream resolve --write), "
            f"so ancestry retires it, or retire it by hand ({force})"
        )
    if patch.mapping is not None and patch.mapping.pending:  # no PR to resolve
        return (
            f"{name} is already on {onto} ({how}) and is pending with no PR: map it to the "
            f"upstream commit that carries it ({patch.name} <commit> in upstream.map), so "
            f"ancestry retires it, or retire it by hand ({force})"
        )
    return f"{name} is already on {onto} ({how}): retire it first ({force}) or drop it"


def _awaits_pr(patch: Patch) -> bool:
    """Pending on a PR that ``upstream resolve`` can turn into its merged commit."""
    return patch.mapping is not None and patch.mapping.pending and patch.mapping.pr is not None


def retire_all_first(present: Sequence[tuple[Patch, str]], onto: str) -> str:
    """:func:`retire_first` for the patches ``onto`` already has (each with how that was
    seen): one patch as it says, several in one sentence per kind (pending, the rest),
    so twenty patches a release absorbed make a readable line, not twenty."""
    if len(present) == 1:
        patch, how = present[0]
        return retire_first(patch, onto, how)
    pending = [p.name for p, _ in present if _awaits_pr(p)]
    others = [p.name for p, _ in present if p.name not in pending]
    by_hand = f"forktool retire PATCH... --tag {tag_of(onto)} --force --reason '...'"

    def record(count: int) -> str:
        commits, its, them = (
            ("commit", "its PR", "it") if count == 1 else ("commits", "their PRs", "them")
        )
        return (
            f"record the {commits} that merged {its} first (forktool upstream resolve "
            f"--write), so ancestry retires {them}, or retire {them} by hand ({by_hand})"
        )

    def retire(count: int) -> str:
        them = "it" if count == 1 else "them"
        return f"retire {them} first ({by_hand}) or drop {them}"

    head = f"{len(present)} patches are already on {onto}"
    if not others:
        return f"{head}, all pending ({some_names(pending)}): {record(len(pending))}"
    if not pending:
        return f"{head} ({some_names(others)}): {retire(len(others))}"
    return (
        f"{head}: {len(pending)} pending ({some_names(pending)}): {record(len(pending))}; "
        f"{len(others)} more ({some_names(others)}): {retire(len(others))}"
    )
