"""Text renderers for ``absorbed`` and ``retire`` (rich)."""

from __future__ import annotations

from rich.text import Text

from forktool.engine.retirement.absorption import HARMFUL_OUTCOMES, AbsorbedResult
from forktool.engine.retirement.restore import UndoResult
from forktool.engine.retirement.retire import RetireResult
from forktool.git import short
from forktool.output import Output, styled
from forktool.report.table import new_table

VERDICT_STYLE = {
    "retire": "green",
    "keep": "yellow",
    "revisit": "bold magenta",
    "fork-only": "dim",
    "pending": "cyan",
}


def render_absorbed(out: Output, result: AbsorbedResult) -> None:
    out.print(f"absorbed by {result.tag} ({short(result.tag_commit)})")
    columns = ("patch", "verdict", "upstream", "in tag", "first release")
    table = new_table(*columns, *(("probe",) if result.probe_full is not None else ()))
    for patch in result.patches:
        upstream = ",".join(short(c) for c in patch.upstream_commits) or (
            "pending" if patch.verdict == "pending" else "none"
        )
        ancestor = "-" if patch.ancestor is None else ("yes" if patch.ancestor else "no")
        row: list[str | Text] = [
            patch.patch,
            styled(patch.verdict, style=VERDICT_STYLE[patch.verdict]),
            upstream,
            ancestor,
            patch.first_release or "-",
        ]
        if patch.probe is not None:
            style = "bold red" if patch.probe.outcome in HARMFUL_OUTCOMES else ""
            row.append(styled(patch.probe.outcome, style=style))
        table.add_row(*row)
    out.print(table)
    for patch in result.patches:
        out.print(f"{patch.patch}: {patch.verdict}: {patch.reason}", markup=False)
        for evidence in patch.evidence:
            out.print(f"  {evidence.kind}: {evidence.detail}", markup=False)
        if patch.probe is not None:
            out.print(
                f"  probe (arm {patch.probe.arm}): {patch.probe.outcome}: {patch.probe.detail}",
                markup=False,
            )
    names = [p.patch for p in result.retirable()]
    summary = (
        f"{result.tag} would retire: {', '.join(names)}"
        if names
        else (f"{result.tag} retires nothing")
    )
    out.result(summary, markup=False)
    if result.harmful:
        out.result(
            styled(
                "FAILED: the probe shows a patch that breaks the tag, or a tag broken without it",
                style="red",
            )
        )


def render_retire(out: Output, result: RetireResult) -> None:
    verb = "would retire" if result.dry_run else "retired"
    for refusal in result.refused:
        out.result(
            styled(
                f"refused: {refusal.patch}: verdict '{refusal.verdict}' at {result.tag} "
                f"({refusal.reason}); to retire it anyway: --force --reason TEXT",
                style="red",
            ),
            markup=False,
        )
    if result.refused:
        out.result(styled("nothing was changed", style="red"))
        return
    if not result.retired:
        out.result(f"{result.tag} absorbed no patch: nothing to retire", markup=False)
    for item in result.retired:
        forced = " (FORCED)" if item.forced else ""
        out.result(
            f"{verb} {item.patch} at {result.tag}{forced}: {item.entry.witnesses}", markup=False
        )
    if result.retired:
        out.print(("would change: " if result.dry_run else "changed: ") + ", ".join(result.files))
    for warning in result.warnings:
        out.warn(warning)


def render_undo(out: Output, result: UndoResult) -> None:
    verb = "would restore" if result.dry_run else "restored"
    where = (
        "HEAD (the retirement is not committed)"
        if result.uncommitted
        else result.source_commit[:12]
    )
    out.result(f"{verb} {result.patch} from {where}", markup=False)
    out.print(("would change: " if result.dry_run else "changed: ") + ", ".join(result.files))
