"""The round trip's answer: whether the revert gave the base tree back, and why not.

A tree that differs is compared path by path to say why (a file missing, left behind,
another mode, other content). Three differences come from how a patch is taken back,
not from the patch: a patch whose file diffs repeat a path (``git apply -R`` leaves a
file it created and then changed behind; forktool.engine.apply.revert), a file a plain
diff deletes, which comes back without its mode (the diff carries none), and a file a
plain diff creates (``--- a/X``, ``@@ -0,0``), which comes back empty, not gone.
"""

from __future__ import annotations

from collections.abc import Sequence

from forktool.config import ApplyRule
from forktool.engine.apply.series_run import apply_series
from forktool.engine.apply.verdict import PatchVerdict
from forktool.fork import Patch
from forktool.git import TempIndex
from forktool.git.index import TreeChange

# The empty blob's id (SHA-1, SHA-256): a file left behind with nothing in it.
EMPTY_BLOBS = frozenset(
    {
        "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391",
        "473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813",
    }
)

# (verdicts, whether the round trip restored the base tree, why not)
Answer = tuple[list[PatchVerdict], bool, str]


def round_trip_answer(
    index: TempIndex,
    patches: Sequence[Patch],
    verdicts: list[PatchVerdict],
    base_tree: str,
    back: bool,
    rule: ApplyRule,
    tree: str | None = None,
) -> Answer:
    """The round trip's answer once the revert ran on ``index`` (``back``: git took every
    patch back): whether it holds the base tree again, and why not.

    A file a plain diff deletes comes back without its mode: the diff never carried it
    (git's own diffs say ``deleted file mode 100755``), and quilt restores it from its
    backup, not from the diff. A file a plain diff creates comes back empty: nothing in
    the diff says the file did not exist, and dpkg-source unapplies with ``patch -E``,
    which removes it. Under dpkg-source's rule those alone are accepted, and the
    patch's message says so; under the exact rule they are why the round trip failed.
    ``tree``: what the index holds, when the revert's own thread wrote it already."""
    if not back:
        return verdicts, False, "reverting the series failed: git apply -R cannot take it back"
    tree = tree or index.write_tree()
    if tree != base_tree:
        tree = _taken_back_in_order(index, patches, base_tree) or tree
    if tree == base_tree:
        return verdicts, True, ""
    changes = index.tree_changes(base_tree, tree)
    deleted = _modeless_deletions(patches)
    created = _plain_creations(patches)
    lost = [c for c in changes if c.same_content and c.path in deleted]
    emptied = [c for c in changes if c.path in created and _left_empty(c)]
    if rule == "dpkg" and changes and len(lost) + len(emptied) == len(changes):
        notes = _dpkg_notes(
            {c.path: deleted[c.path] for c in lost}, {c.path: created[c.path] for c in emptied}
        )
        return [_noted(v, notes.get(v.patch)) for v in verdicts], True, ""
    first = changes[0] if changes else None
    if first is None:
        return verdicts, False, "reverting the series did not restore the base tree exactly"
    how = first.describe()
    if first in lost:
        how += f" ({deleted[first.path]} deletes it with a plain diff, which carries no mode)"
    elif first in emptied:
        how += (
            f", empty ({created[first.path]} creates it with a plain diff, '--- a/...' rather "
            "than '--- /dev/null', so git apply -R empties it but cannot know to remove it)"
        )
    more = f" (and {len(changes) - 1} more)" if len(changes) > 1 else ""
    return (
        verdicts,
        False,
        f"reverting the series did not restore the base tree exactly: {how}{more}",
    )


def _taken_back_in_order(index: TempIndex, patches: Sequence[Patch], base_tree: str) -> str | None:
    """The tree the series gives back when each patch whose file diffs repeat a path is
    reverted with those diffs in reverse order (:mod:`forktool.engine.apply.revert`),
    the series applied again from the base tree first; None when no patch repeats a
    path, or git refuses."""
    from forktool.engine.apply.revert import repeats_a_path, to_take_back

    if not any(repeats_a_path(patch.parsed) for patch in patches):
        return None
    index.read_tree(base_tree, cache=True)
    forward, _ = apply_series(index, patches, reverse=False, unanchored=True)
    if not forward:
        return None
    given = to_take_back(patches, index.path.parent)
    back, _ = apply_series(index, given, reverse=True, unanchored=True)
    return index.write_tree() if back else None


def _modeless_deletions(patches: Sequence[Patch]) -> dict[str, str]:
    """Each path a patch deletes with a diff that carries no mode: the patch's name."""
    return {
        diff.old_path: patch.name
        for patch in patches
        for diff in patch.parsed.files
        if diff.is_deleted and diff.old_mode is None and diff.old_path
    }


def _plain_creations(patches: Sequence[Patch]) -> dict[str, str]:
    """Each path a patch creates with a plain diff (its old side names the file, not
    ``/dev/null``; one hunk from ``-0,0``), as Debian's patches sometimes do: the
    patch's name. GNU patch creates the file; taken back, it is left empty, and
    dpkg-source unapplies with ``patch -E``, which removes it (quilt restores from its
    backup, which has none)."""
    return {
        diff.new_path: patch.name
        for patch in patches
        for diff in patch.parsed.files
        if not diff.is_new
        and not diff.is_deleted
        and diff.new_path
        and len(diff.hunks) == 1
        and diff.hunks[0].old_start == 0
        and diff.hunks[0].old_count == 0
    }


def _left_empty(change: TreeChange) -> bool:
    """A path the base tree lacks that the revert left behind as an empty file."""
    return change.left_behind and change.new_blob in EMPTY_BLOBS


def _dpkg_notes(lost: dict[str, str], emptied: dict[str, str]) -> dict[str, str]:
    """Per patch, the differences its revert leaves that quilt and dpkg-source take
    back otherwise (``lost``: paths back without their mode; ``emptied``: paths left
    empty; each path -> the patch), accepted under the dpkg rule."""
    said: dict[str, list[str]] = {}
    for patch in dict.fromkeys([*lost.values(), *emptied.values()]):
        modes = [path for path, owner in lost.items() if owner == patch]
        empty = [path for path, owner in emptied.items() if owner == patch]
        if modes:
            said.setdefault(patch, []).append(
                f"its revert brings {', '.join(modes)} back without the mode it had (a plain "
                "diff carries none; quilt restores it from its backup)"
            )
        if empty:
            said.setdefault(patch, []).append(
                f"its revert leaves {', '.join(empty)} behind empty (a plain diff creates "
                "it, not from /dev/null; dpkg-source unapplies with patch -E, which removes it)"
            )
    return {patch: "; ".join(notes) + "; accepted (dpkg rule)" for patch, notes in said.items()}


def _noted(verdict: PatchVerdict, note: str | None) -> PatchVerdict:
    if not note:
        return verdict
    return verdict._replace(message=f"{verdict.message}; {note}" if verdict.message else note)
