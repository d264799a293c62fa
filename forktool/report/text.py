"""Text renderers (rich). Each takes the Output and one result object."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text

from forktool.git import short
from forktool.output import Output
from forktool.report.table import new_table

if TYPE_CHECKING:  # renderers need the result types only for annotations; keep start-up lean
    from forktool.engine.apply_target import DirResult
    from forktool.engine.attempt import PatchVerdict
    from forktool.engine.init import InitResult
    from forktool.engine.status import StatusResult
    from forktool.engine.verify import VerifyResult


def render_init(out: Output, result: InitResult) -> None:
    from forktool.report.upstream_map import render_suggestions

    out.print(f"Pinned to {result.tag} ({short(result.commit)}).")
    for label, names in (
        ("created", result.written),
        ("appended the retirement record section to", result.appended),
        ("kept as it is", result.kept),
    ):
        for name in names:
            out.print(f"  {label}: {name}", markup=False)
    if result.quilt is not None:
        out.print(f"Adopted the quilt directory {result.quilt}; upstream.map from its headers:")
        render_suggestions(out, result.suggestions)
        out.print(
            "Next: check upstream.map ('pending' where a header says nothing: write the "
            "upstream commit, or 'none' for a fork-only patch), then run 'forktool check'.",
            markup=False,
        )
    elif result.written:
        out.print(
            "Next: add patches to patches/, list them in series, map them in upstream.map, "
            "then run 'forktool status'."
        )
    elif not result.appended:
        out.result("Nothing to do: the fork's files are all here.", markup=False)


def render_status(out: Output, result: StatusResult) -> None:
    pin = result.pin
    if not pin.present:
        pin_note = Text("tag missing: fetch upstream tags", style="red")
    elif pin.moved:
        pin_note = Text(f"MOVED: tag now peels to {short(pin.actual)}", style="bold red")
    else:
        pin_note = Text("tag peels to the recorded commit", style="green")
    out.print(
        Text.assemble("pin    : ", (pin.tag, "bold"), f" ({short(pin.recorded)})  ", pin_note)
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
        at_pin = Text(patch.apply or "-", style=_STATUS_STYLE.get(patch.apply or "", ""))
        table.add_row(str(index), patch.patch, upstream or "-", patch.upstream_pr or "-", at_pin)
    out.print(table)
    for patch in result.patches:
        if patch.apply_message:
            out.print(f"  {patch.patch}: {patch.apply_message}", markup=False)


_STATUS_STYLE = {
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
        style = _STATUS_STYLE.get(verdict.status, "")
        table.add_row(verdict.patch, Text(verdict.status, style=style), verdict.message)
    return table


def render_verify(out: Output, result: VerifyResult) -> None:
    out.print(f"verify on {result.base} ({short(result.base_commit)})")
    if result.patches:
        out.print(_verdict_table(result.patches))
    if result.ok:
        out.result(
            Text(
                f"OK: {len(result.patches)} patch(es) apply exactly and the round trip restores "
                f"{result.base} exactly.",
                style="green",
            )
        )
        return
    if result.message:
        out.result(Text(f"FAILED: {result.message}", style="red"))
        return
    bad = [v for v in result.patches if v.status not in ("exact", "not-tried")]
    if bad and not out.quiet:  # the table above says why, once
        names = ", ".join(f"{v.patch}" + (f":{v.line}" if v.line else "") for v in bad)
        out.result(
            Text(f"FAILED: {len(bad)} patch(es) do not apply exactly: {names}", style="red"),
            markup=False,
        )
    for verdict in bad if out.quiet else ():
        where = f"{verdict.patch}" + (f":{verdict.line}" if verdict.line else "")
        out.result(Text(f"error: {where}: {verdict.message}", style="red"), markup=False)
    untried = sum(v.status == "not-tried" for v in result.patches)
    if untried:
        out.result(
            Text(f"{untried} later patch(es) not tried: fix the first failure, then verify again")
        )
    if not result.round_trip and not bad:
        out.result(
            Text("FAILED: reverting the series did not restore the base tree exactly", style="red")
        )


def render_apply(out: Output, result: DirResult) -> None:
    what = {"apply": "apply", "verify": "verify", "except": "declare state"}[result.mode]
    out.print(f"{what} on {result.target} (engine: {result.engine})")
    if result.state:
        for patch, state in result.state.items():
            out.print(f"  found {patch}: {state}")
    if result.patches:
        out.print(_verdict_table(result.patches))
    if result.changed:
        out.print(f"changed {len(result.changed)} file(s)")
    if result.ok:
        out.result(Text("OK" + (f": {result.message}" if result.message else ""), style="green"))
    else:
        out.result(Text(f"FAILED: {result.message}", style="red"), markup=False)
