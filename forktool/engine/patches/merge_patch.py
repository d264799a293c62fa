"""A patch moved onto a new tree by git's 3-way merge: its own pre-image, no guess.

A patch that applies on the new tree neither exactly nor at an offset may still move
without a guess. The fork's repository has the tree the patch was made against (the pin
with the patches before it, :class:`PreImages`) and the tree it makes; replayed the way
``git cherry-pick`` replays a commit, git's merge machinery (merge-ort, through
``git merge-tree --write-tree``) either carries the change over with no conflict, following
upstream's renames, or says where it could not. Fuzz never enters: a hunk is placed by
the merge of whole blobs, never by dropping context lines.

git 2.39's ``merge-tree`` takes no explicit merge base, so the three sides are commits made
for the purpose: a parentless commit of the pre-image, and on it one commit of the new
tree (ours) and one of the patch's post-image (theirs). Their only common ancestor is the
pre-image, exactly the base a cherry-pick uses. All of it lives in the temporary index's
private object directory.

A merged result is then proven the way every refreshed patch is: regenerated, it must
apply exactly on the new tree, make the merged tree, and revert to the new tree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from forktool.config import ApplyRule
from forktool.engine.apply.attempt import try_patch
from forktool.engine.apply.verdict import ALREADY_APPLIED, is_exact
from forktool.engine.patches.canonical import (
    apply_and_commit,
    format_range,
    loose_patch,
    with_source_header,
)
from forktool.engine.patches.commit_meta import (
    PLACEHOLDER_DATE,
    PLACEHOLDER_EMAIL,
    PLACEHOLDER_NAME,
    lenient_meta,
)
from forktool.fork import Patch
from forktool.git import MergeTreeResult, TempIndex
from forktool.model.patch_parser import parse_patch
from forktool.model.patchfile import PatchFile, touched_paths

_IDENTITY = {
    "GIT_AUTHOR_NAME": PLACEHOLDER_NAME,
    "GIT_AUTHOR_EMAIL": PLACEHOLDER_EMAIL,
    "GIT_AUTHOR_DATE": PLACEHOLDER_DATE,
    "GIT_COMMITTER_NAME": PLACEHOLDER_NAME,
    "GIT_COMMITTER_EMAIL": PLACEHOLDER_EMAIL,
    "GIT_COMMITTER_DATE": PLACEHOLDER_DATE,
}


class PreImages:
    """Each patch's pre-image and post-image: the series committed on the pin, built
    the first time a patch needs a merge (a refresh where everything applies never
    pays for it), in an index beside ``index`` that shares its objects."""

    def __init__(
        self,
        index: TempIndex,
        pin_commit: str,
        patches: Sequence[Patch],
        pin_name: str,
        rule: ApplyRule = "exact",
    ) -> None:
        self._index = index
        self._pin_commit = pin_commit
        self._patches = tuple(patches)
        self._pin_name = pin_name
        self._rule = rule  # the fork's apply rule: what verify accepts on the pin
        self._sides: dict[str, tuple[str, str]] | None = None
        self.failed: dict[str, str] = {}  # why a patch has no pre-image

    def sides(self, name: str) -> tuple[str, str] | None:
        """(pre-image commit, post-image commit) of patch ``name``, or None when it
        does not apply on the pin."""
        if self._sides is None:
            self._sides = self._build()
        return self._sides.get(name)

    def _build(self) -> dict[str, tuple[str, str]]:
        """Each patch committed on the pin after the ones before it, under the fork's
        apply rule; a patch that does not apply there is left out (the later ones are
        built without it, as a rebase goes on after a skip), and has no pre-image. The
        commits are only the merge's sides: a header that cannot name an author (a
        maintainer's ``From: drh <>``) gets placeholders, as in the maintainers' form."""
        index = self._index.sibling("pre-images")
        index.read_tree(self._pin_commit, cache=True)
        sides = {}
        before = self._pin_commit
        for patch in self._patches:
            link = apply_and_commit(
                index,
                before,
                patch,
                base_name=self._pin_name,
                allow_offset=True,
                meta_for=lenient_meta,
                rule=self._rule,
            )
            if link.commit is None:
                self.failed[patch.name] = f"{patch.name} does not apply on {self._pin_name}"
                continue
            sides[patch.name] = (before, link.commit)
            before = link.commit
        return sides


@dataclass(frozen=True)
class Merge:
    """What a 3-way merge of one patch onto ``parent`` gave."""

    tree: str | None  # the merged tree; None when the merge conflicts or cannot be made
    message: str = ""  # why not, or what a reviewer should know about the result
    absorbed: bool = False  # the merge changes nothing: the new tree has the whole change
    data: bytes = b""  # the regenerated patch, proven exact on ``parent``


_BY_MERGE = "(a 3-way merge of it from its pre-image on"


def absorbed_message(onto: str, pin_name: str) -> str:
    """What a patch whose 3-way merge onto ``onto`` changes nothing says (refresh and
    forecast alike): the change is there, whatever its lines look like now."""
    return f"{ALREADY_APPLIED}: {onto} has the whole change {_BY_MERGE} {pin_name} changes nothing)"


def seen_by_merge(message: str) -> bool:
    """Whether an "already applied" message says a 3-way merge saw it (not a reverse
    apply): where the patch stopped applying is then not where the change came."""
    return message.startswith(ALREADY_APPLIED) and _BY_MERGE in message


def merge_sides(
    index: TempIndex, parent: str, patch: Patch, pre: PreImages
) -> MergeTreeResult | str:
    """git's 3-way merge of ``patch`` onto commit ``parent`` from its pre-image (with
    conflict markers in its tree when it is not clean), or why it cannot be made."""
    sides = pre.sides(patch.name)
    if sides is None:
        why = pre.failed.get(patch.name, f"{patch.name} is not in the series")
        return f"no 3-way merge: its pre-image is unknown ({why})"
    before, after = sides
    base = _commit(index, f"{before}^{{tree}}", [], "pre-image")
    ours = _commit(index, f"{parent}^{{tree}}", [base], "ours")
    theirs = _commit(index, f"{after}^{{tree}}", [base], "theirs")
    return index.merge_tree(ours, theirs)


def merge_onto(index: TempIndex, parent: str, patch: Patch, pre: PreImages) -> Merge:
    """Merge ``patch`` onto commit ``parent`` from its pre-image (nothing is committed
    on ``parent``; ``index`` is left as it was)."""
    result = merge_sides(index, parent, patch, pre)
    if isinstance(result, str):
        return Merge(None, result)
    if not result.clean:
        where = ", ".join(result.conflicted[:3]) or "the tree"
        return Merge(None, f"a 3-way merge conflicts too (in {where})")
    return Merge(result.tree, absorbed=result.tree == index.tree_of(parent))


def _commit(index: TempIndex, tree: str, parents: list[str], what: str) -> str:
    """A commit made only to give ``merge-tree`` its three sides."""
    return index.git.commit_tree(
        tree,
        parents,
        f"{what}\n".encode(),
        purpose=f"record the {what}",
        env={**index.env, **_IDENTITY},
    )


def prove(index: TempIndex, parent: str, commit: str, patch: Patch) -> tuple[bytes, str]:
    """The regenerated patch of ``commit`` on ``parent``, and why it is not proven ("" when
    it is): it must apply exactly on ``parent``'s tree, make ``commit``'s tree, and
    revert to ``parent``'s tree."""
    generated = format_range(index, parent, commit)
    if len(generated) != 1:
        return b"", "git format-patch could not regenerate the merged patch"
    data = with_source_header(patch.parsed, generated[0][1])
    path = index.path.with_name("merged.patch")
    path.write_bytes(data)
    candidate = loose_patch(patch.name, path, data)
    proof = index.sibling("proof")
    proof.read_tree(f"{parent}^{{tree}}")
    if not is_exact(try_patch(proof, candidate)) or proof.write_tree() != index.tree_of(commit):
        return data, "the merged patch does not apply exactly on the new tree"
    back = try_patch(proof, candidate, reverse=True)
    if not is_exact(back) or proof.write_tree() != index.tree_of(parent):
        return data, "the merged patch does not revert exactly (no round trip)"
    return data, ""


def changed_lines(parsed: PatchFile) -> int:
    """How many lines a patch adds or removes."""
    return sum(
        line[:1] in ("+", "-")
        for diff in parsed.files
        for hunk in diff.hunks
        for line in hunk.lines
    )


def review_notes(old: PatchFile, new: bytes) -> list[str]:
    """What a reviewer of a merged patch should know: a part upstream already has,
    files it now changes under other names."""
    parsed = parse_patch(new)
    notes = []
    before, after = changed_lines(old), changed_lines(parsed)
    if after < before:
        notes.append(
            f"upstream already has part of it: {after} of its {before} changed lines remain"
        )
    moved_from = sorted(set(touched_paths(old)) - set(touched_paths(parsed)))
    moved_to = sorted(set(touched_paths(parsed)) - set(touched_paths(old)))
    if moved_from and moved_to:
        notes.append(
            f"it now changes {', '.join(moved_to)} (was {', '.join(moved_from)}): "
            "upstream moved the file"
        )
    return notes
