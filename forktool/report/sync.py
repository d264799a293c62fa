"""Renderers for sync (text, and markdown for report.md and a pull request) and upstream poll."""

from __future__ import annotations

from rich.text import Text

from forktool.engine.release.check import GateResult
from forktool.engine.release.sync_report import SyncReport
from forktool.errors import command_line
from forktool.escape import md_code, md_fence, md_text
from forktool.output import Output, styled
from forktool.report.table import new_table


def render_plan_body(out: Output, report: SyncReport) -> None:
    if report.retired:
        out.print(styled(f"retire ({len(report.retired)}): absorbed by {report.tag}", style="bold"))
        table = new_table("patch", "first release", "witnesses")
        for r in report.retired:
            table.add_row(r.patch, r.first_release or "-", r.witnesses)
        out.print(table)
    else:
        out.print(f"retire: nothing ({report.tag} contains no patch's upstream commit)")
    if report.refreshed:
        out.print(styled(f"refresh ({len(report.refreshed)}) onto {report.tag}", style="bold"))
        table = new_table("patch", "refresh", "note")
        for e in report.refreshed:
            style = {"conflict": "red", "rebased": "yellow", "merged": "yellow"}.get(
                e.status, "green"
            )
            table.add_row(e.patch, styled(e.status, style=style), e.message)
        out.print(table)
    if report.merged:
        out.print(
            Text(f"review first: moved by a 3-way merge: {', '.join(report.merged)}", style="bold"),
            markup=False,
        )
    waiting = report.pending
    if waiting:
        out.print(
            styled(f"waiting for upstream ({len(waiting)}): kept, never retired", style="bold")
        )
        for patch in waiting:
            if patch.upstream_pr:
                out.print(f"  {patch.patch}: pending, PR {patch.upstream_pr}", markup=False)
        # Those with no PR named are one 'needs a human' line (the plan's notes), not one each.
    if report.pins:
        out.print(styled(f"pins ({len(report.pins)})", style="bold"))
        for p in report.pins:
            out.print(f"  {p.file}:{p.line}: {p.old} -> {p.new}", markup=False)
    if report.merge_tag:
        verb = "merged" if report.stage in ("check", "done") and not report.dry_run else "merge"
        out.print(
            f"{verb}: the release tag {report.tag} ({report.tag_commit[:10]}) into the sync "
            "branch, never upstream's main branch",
            markup=False,
        )
    for conflict in report.conflicts:
        out.result(styled(f"conflict: {conflict}", style="red"), markup=False)
    for note in report.notes:
        out.print(styled(f"needs a human: {note}", style="yellow"), markup=False)


def render_aborted(out: Output, report: SyncReport) -> None:
    """After --abort: what was removed, one line."""
    out.result(report.message)


def render_sync(out: Output, report: SyncReport) -> None:
    head = "sync plan" if report.dry_run else "sync"
    out.print(styled(f"{head}: {report.previous_tag} -> {report.tag}", style="bold"))
    if report.branch:
        out.print(f"branch : {report.branch}")
    render_plan_body(out, report)
    if report.check is not None:
        verdict = (
            styled("passed", style="green") if report.check_ok else styled("FAILED", style="red")
        )
        out.print(Text.assemble("check  : ", verdict))
        for reason in check_failures(report.check):
            out.print(f"  {reason}", markup=False)
    if report.message:
        style = "green" if report.ok else "red"
        out.result(styled(report.message, style=style), markup=False)
    step = next_step(report)
    if step:
        out.print(f"next: {step}", markup=False)


def check_failures(gate: GateResult) -> list[str]:
    """Why the gate failed, one line per failed check's error or warning."""
    lines: list[str] = []
    for check in gate.checks:
        if check.ok or check.skipped:
            continue
        said = [f for f in check.findings if f.severity in ("error", "warning")]
        for finding in said:
            where = ":".join(str(v) for v in (finding.path, finding.line) if v)
            lines.append(f"{check.id}: {where + ': ' if where else ''}{finding.message}")
        if not said:
            lines.append(f"{check.id}: failed")
    return lines


EMPTIED = "check fails closed on an empty series: there is nothing to verify"


def next_step(report: SyncReport) -> str:
    """What to run after this sync (or plan), in one line."""
    sync = command_line("forktool", "sync", report.tag)
    if report.dry_run and report.notes:
        return f"settle what needs a human (above), then '{sync}'"
    if report.dry_run and report.conflicts:
        many = len(report.conflicts) > 1
        what = "once for the conflicts, one after the other" if many else "at the conflict"
        return f"{sync} (it stops {what} for you to resolve)"
    if report.dry_run and report.absorbs_everything:
        return f"{sync} (it retires every patch: the series will be empty, and {EMPTIED})"
    if report.dry_run:
        return sync
    if report.stage != "done":
        return "resolve what is above, then 'forktool sync --continue' (or 'forktool sync --abort')"
    if report.check_ok is False and report.absorbs_everything:
        return (
            f"{report.tag} absorbed the whole series: branch {report.branch} carries no "
            f"patches, and {EMPTIED}; build from {report.tag} itself, or add the fork's "
            "next patch on the branch before merging it"
        )
    if report.check_ok is False:
        return f"fix what check found on branch {report.branch}, then review it"
    return f"review branch {report.branch} and merge it ({command_line('git', 'merge', report.branch)})"


def render_sync_markdown(report: SyncReport) -> str:
    """The sync report as a pull-request body (data escaped: see forktool.escape)."""
    title = "Sync plan" if report.dry_run else "Sync"
    lines = [f"# {title}: {md_text(report.previous_tag)} → {md_text(report.tag)}", ""]
    if report.branch:
        lines += [
            f"Branch {md_code(report.branch)}, upstream tag {md_code(report.tag)} "
            f"({report.tag_commit[:12]}).",
            "",
        ]
    lines += _md_retired(report)
    lines += _md_refreshed(report)
    lines += _md_waiting(report)
    lines += _md_pins(report)
    lines += _md_needs_a_human(report)
    if report.check is not None:
        lines += _md_check(report.check, report.check_ok)
    if report.message:
        lines += ["", md_text(report.message)]
    return "\n".join(lines) + "\n"


def _md_table(columns: tuple[str, ...], rows: list[tuple[object, ...]]) -> list[str]:
    """A markdown table; each cell is already escaped for the medium."""
    return [
        "| " + " | ".join(columns) + " |",
        "|" + "---|" * len(columns),
        *("| " + " | ".join(str(cell) for cell in row) + " |" for row in rows),
    ]


def _md_retired(report: SyncReport) -> list[str]:
    lines = ["## Retired (absorbed by ancestry)", ""]
    if not report.retired:
        return [*lines, f"None: {md_code(report.tag)} contains no patch's upstream commit."]
    return lines + _md_table(
        ("patch", "upstream commit(s)", "first release", "witnesses"),
        [
            (
                md_code(r.patch, table=True),
                ", ".join(c[:12] for c in r.commits),
                md_text(r.first_release or "-"),
                md_text(r.witnesses),
            )
            for r in report.retired
        ],
    )


def _md_refreshed(report: SyncReport) -> list[str]:
    """The kept patches as the refresh moved them, what to review first, the range-diff."""
    lines = ["", "## Kept and refreshed", ""]
    if report.refreshed:
        lines += _md_table(
            ("patch", "refresh", "note"),
            [
                (md_code(e.patch, table=True), md_text(e.status), md_text(e.message))
                for e in report.refreshed
            ],
        )
    elif report.absorbs_everything:
        lines.append(
            f"No patch left to refresh: {md_text(report.tag)} absorbed the whole series, and {EMPTIED}."
        )
    else:
        lines.append("No patch left to refresh.")
    if report.merged:
        lines += [
            "",
            "**Review first**: moved by a 3-way merge (no conflict, proven exact): "
            + ", ".join(f"`{name}`" for name in report.merged),
        ]
    if report.range_diff:
        lines += [
            "",
            "<details><summary>range-diff of the refreshed series</summary>",
            "",
            md_fence(report.range_diff.rstrip()),
            "</details>",
        ]
    return lines


def _md_waiting(report: SyncReport) -> list[str]:
    if not report.pending:
        return []
    return ["", "## Waiting for upstream (pending: kept, never retired)", ""] + [
        f"- {md_code(p.patch)}: PR {md_text(p.upstream_pr or '(none named)')}"
        for p in report.pending
    ]


def _md_pins(report: SyncReport) -> list[str]:
    lines = ["", "## Pins", ""]
    if not report.pins:
        return [*lines, "No pin site changed."]
    return lines + _md_table(
        ("file", "line", "old", "new"),
        [
            (
                md_code(p.file, table=True),
                p.line,
                md_code(p.old, table=True),
                md_code(p.new, table=True),
            )
            for p in report.pins
        ],
    )


def _md_needs_a_human(report: SyncReport) -> list[str]:
    if not (report.conflicts or report.notes):
        return []
    return (
        ["", "## Needs a human", ""]
        + [f"- **conflict** {md_text(c)}" for c in report.conflicts]
        + [f"- {md_text(n)}" for n in report.notes]
    )


def _md_check(gate: GateResult, passed: bool | None) -> list[str]:
    """The check's verdict, a row per check, and a line per reason it failed."""
    verdict = "passed" if passed else "**failed**"
    lines = ["", f"## Check: {verdict}", ""]
    lines += _md_table(
        ("check", "result"),
        [
            (
                md_code(c.id, table=True),
                "skipped" if c.skipped else ("ok" if c.ok else "**failed**"),
            )
            for c in gate.checks
        ],
    )
    failures = check_failures(gate)
    if failures:
        lines.append("")
        lines += [f"- {md_text(reason)}" for reason in failures]
    return lines
