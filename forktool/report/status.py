"""``forktool status`` as text: one screen."""

from __future__ import annotations

from typing import TYPE_CHECKING

from forktool.git import short
from forktool.output import Output, styled
from forktool.report.pin import pin_line
from forktool.report.table import new_table
from forktool.report.verify import STATUS_STYLE

if TYPE_CHECKING:  # the result type only for annotations; keep start-up lean
    from forktool.engine.status import StatusResult


def render_status(out: Output, result: StatusResult) -> None:
    out.print(pin_line(result.pin, "pin   "))
    if result.tree is not None and result.tree[1] != result.pin.recorded:
        out.print(
            f"tree   : {result.tree[0]} ({result.tree[1][:12]}): the patches apply here",
            markup=False,
        )
    out.print(f"layout : {result.layout}")
    out.print(f"series : {len(result.patches)} patch(es)")
    newest = result.newest_release
    if newest is not None:
        retires = newest.would_retire
        what = (
            f"cannot tell: {newest.note}"
            if retires is None
            else "would retire " + ", ".join(retires)
            if retires
            else "would retire nothing"
        )
        out.print(f"newest : {newest.tag} {what}", markup=False)
    if not result.patches:
        return
    table = new_table("#", "patch", "upstream", "PR", "at pin")
    for index, patch in enumerate(result.patches, start=1):
        upstream = (
            "fork-only"
            if patch.fork_only
            else "pending"
            if patch.pending
            else ",".join(short(c) for c in patch.upstream_commits)
        )
        at_pin = styled(patch.apply or "-", style=STATUS_STYLE.get(patch.apply or "", ""))
        table.add_row(str(index), patch.patch, upstream or "-", patch.upstream_pr or "-", at_pin)
    out.print(table)
    for patch in result.patches:
        if patch.apply_message:
            out.print(f"  {patch.patch}: {patch.apply_message}", markup=False)
