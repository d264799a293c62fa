"""The round trip's answer: whether the revert gave the base tree back, and why not.

A tree that differs is compared path by path to say why (a file missing, left behind,
another mode, other content). Two differences come from how a patch is taken back, not
from the patch: a patch whose file diffs repeat a path (``git apply -R`` leaves a file
it created and then changed behind; forktool.engine.apply.revert), and a file a plain
diff deletes, which comes back without its mode (the diff carries none).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from forktool.config import ApplyRule
from forktool.engine.apply.series_run import apply_series
from forktool.engine.apply.verdict import PatchVerdict
from forktool.fork import Patch
from forktool.git import TempIndex

# (verdicts, whether the round trip restored the base tree, why not)
Answer = tuple[list[PatchVerdict], bool, str]


def round_trip_answer(
    index: TempIndex,
    patches: Sequence[Patch],
    verdicts: list[PatchVerdict],
    base_tree: str,
    back: bool,
    rule: ApplyRule,
) -> Answer:
    """The round trip's answer once the revert ran on ``index`` (``back``: git took every
    patch back): whether it holds the base tree again, and why not.

    A file a plain diff deletes comes back without its mode: the diff never carried it
    (git's own diffs say ``deleted file mode 100755``), and quilt restores it from its
    backup, not from the diff. Under dpkg-source's rule that alone is accepted, and the
    deleting patch's message says so; under the exact rule it is why the round trip
    failed."""
    if not back:
        return verdicts, False, "reverting the series failed: git apply -R cannot take it back"
    tree = index.write_tree()
    if tree != base_tree:
        tree = _taken_back_in_order(index, patches, base_tree) or tree
    if tree == base_tree:
        return verdicts, True, ""
    changes = index.tree_changes(base_tree, tree)
    deleted = _modeless_deletions(patches)
    lost = [c for c in changes if c.same_content and c.path in deleted]
    if rule == "dpkg" and changes and len(lost) == len(changes):
        noted: dict[str, list[str]] = {}
        for change in lost:
            noted.setdefault(deleted[change.path], []).append(change.path)
        return [_mode_note(v, noted.get(v.patch)) for v in verdicts], True, ""
    first = changes[0] if changes else None
    if first is None:
        return verdicts, False, "reverting the series did not restore the base tree exactly"
    how = first.describe()
    if first in lost:
        how += f" ({deleted[first.path]} deletes it with a plain diff, which carries no mode)"
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


def _mode_note(verdict: PatchVerdict, paths: list[str] | None) -> PatchVerdict:
    if not paths:
        return verdict
    note = (
        f"its revert brings {', '.join(paths)} back without the mode it had (a plain diff "
        "carries none; quilt restores it from its backup); accepted (dpkg rule)"
    )
    return replace(verdict, message=f"{verdict.message}; {note}" if verdict.message else note)
