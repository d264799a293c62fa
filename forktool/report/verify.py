"""``forktool verify`` and ``forktool apply`` as text: one verdict table for both."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.table import Table

from forktool.engine.apply.verdict import acceptable
from forktool.git import short
from forktool.output import Output, styled
from forktool.report.table import new_table

if TYPE_CHECKING:  # the result types only for annotations; keep start-up lean
    from forktool.engine.apply.verdict import PatchVerdict
    from forktool.engine.apply.verify import VerifyResult


STATUS_STYLE = {
    "exact": "green",
    "offset": "yellow",
    "fuzz": "red",
    "fails": "red",
    "malformed": "red",
    "unsafe": "bold red",
    "unsupported": "red",
    "not-tried": "dim",
}


def _verdict_table(verdicts: Sequence[PatchVerdict]) -> Table:
    table = new_table("patch", "status", "detail")
    for verdict in verdicts:
        style = STATUS_STYLE.get(verdict.status, "")
        detail = verdict.message
        if verdict.without:
            left_out = ", ".join(verdict.without)
            detail = (
                f"{detail} (tried without {left_out})" if detail else f"tried without {left_out}"
            )
        table.add_row(verdict.patch, styled(verdict.status, style=style), detail)
    return table


def render_verify(out: Output, result: VerifyResult) -> None:
    out.print(f"verify on {result.base} ({short(result.base_commit)})")
    if result.patches:
        out.print(_verdict_table(result.patches))
    if result.ok:
        shifted = sum(v.status == "offset" for v in result.patches)
        exact = len(result.patches) - shifted
        how = f"{exact} patch(es) apply exactly"
        if shifted:  # --allow-offset or the fork's rule: say so, never count them as exact
            why = (
                "--allow-offset"
                if result.rule == "exact"
                else f"accepted under the {result.rule} rule"
            )
            how += f", {shifted} only at an offset ({why}),"
        out.result(
            styled(
                f"OK: {how} and the round trip restores {result.base} exactly.",
                style="green",
            )
        )
        return
    bad = [
        v
        for v in result.patches
        if v.status != "not-tried" and not acceptable(v.status, result.allow_offset)
    ]
    if bad and not out.quiet:  # the table above says why, once
        names = ", ".join(f"{v.patch}" + (f":{v.line}" if v.line else "") for v in bad)
        out.result(
            styled(f"FAILED: {len(bad)} patch(es) do not apply exactly: {names}", style="red"),
            markup=False,
        )
    for verdict in bad if out.quiet else ():
        where = f"{verdict.patch}" + (f":{verdict.line}" if verdict.line else "")
        out.result(styled(f"error: {where}: {verdict.message}", style="red"), markup=False)
    if any(v.without for v in result.patches):
        out.result(
            styled("later patches were tried on the tree without the failed ones (--keep-going)")
        )
    untried = sum(v.status == "not-tried" for v in result.patches)
    if untried:
        out.result(
            styled(f"{untried} later patch(es) not tried: fix the first failure, then verify again")
        )
    if result.message:  # the series as a whole: nothing to verify, or the round trip
        out.result(styled(f"FAILED: {result.message}", style="red"), markup=False)
    elif not result.round_trip and not bad:
        out.result(
            styled(
                "FAILED: reverting the series did not restore the base tree exactly", style="red"
            )
        )
