"""Renderers for sync (text, and markdown for report.md and a pull request) and upstream poll."""

from __future__ import annotations

from rich.text import Text

from forktool.engine.poll import PollResult
from forktool.engine.sync import SyncReport, pending_patches
from forktool.output import Output
from forktool.report.table import new_table


def render_plan_body(out: Output, report: SyncReport) -> None:
    if report.retired:
        out.print(Text(f"retire ({len(report.retired)}): absorbed by {report.tag}", style="bold"))
        table = new_table("patch", "first release", "witnesses")
        for r in report.retired:
            table.add_row(r.patch, r.first_release or "-", r.witnesses)
        out.print(table)
    else:
        out.print(f"retire: nothing ({report.tag} contains no patch's upstream commit)")
    if report.refreshed:
        out.print(Text(f"refresh ({len(report.refreshed)}) onto {report.tag}", style="bold"))
        table = new_table("patch", "refresh", "note")
        for e in report.refreshed:
            style = {"conflict": "red", "rebased": "yellow"}.get(e.status, "green")
            table.add_row(e.patch, Text(e.status, style=style), e.message)
        out.print(table)
    waiting = pending_patches(report)
    if waiting:
        out.print(Text(f"waiting for upstream ({len(waiting)}): kept, never retired", style="bold"))
        for name, pr in waiting:
            out.print(f"  {name}: pending, PR {pr or '(none named)'}", markup=False)
    if report.pins:
        out.print(Text(f"pins ({len(report.pins)})", style="bold"))
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
        out.result(Text(f"conflict: {conflict}", style="red"), markup=False)
    for note in report.notes:
        out.print(Text(f"needs a human: {note}", style="yellow"), markup=False)


def render_aborted(out: Output, report: SyncReport) -> None:
    """After --abort: what was removed, one line."""
    out.result(report.message)


def render_sync(out: Output, report: SyncReport) -> None:
    head = "sync plan" if report.dry_run else "sync"
    out.print(Text(f"{head}: {report.previous_tag} -> {report.tag}", style="bold"))
    if report.branch:
        out.print(f"branch : {report.branch}")
    render_plan_body(out, report)
    if report.check is not None:
        verdict = Text("passed", style="green") if report.check_ok else Text("FAILED", style="red")
        out.print(Text.assemble("check  : ", verdict))
        for reason in check_failures(report.check):
            out.print(f"  {reason}", markup=False)
    if report.message:
        style = "green" if report.ok else "red"
        out.result(Text(report.message, style=style), markup=False)
    step = next_step(report)
    if step:
        out.print(f"next: {step}", markup=False)


def check_failures(check: dict[str, object]) -> list[str]:
    """Why the gate failed, one line per failed check's error or warning (``check``
    is the gate's JSON, as the sync report keeps it)."""
    lines: list[str] = []
    checks = check.get("checks")
    for entry in checks if isinstance(checks, list) else ():
        if not isinstance(entry, dict) or entry.get("ok") or entry.get("skipped"):
            continue
        findings = entry.get("findings")
        said = [
            f
            for f in (findings if isinstance(findings, list) else ())
            if isinstance(f, dict) and f.get("severity") in ("error", "warning")
        ]
        for finding in said:
            where = ":".join(str(finding[k]) for k in ("path", "line") if finding.get(k))
            message = str(finding.get("message", ""))
            lines.append(f"{entry.get('id')}: {where + ': ' if where else ''}{message}")
        if not said:
            lines.append(f"{entry.get('id')}: failed")
    return lines


def next_step(report: SyncReport) -> str:
    """What to run after this sync (or plan), in one line."""
    if report.dry_run and report.notes:
        return f"settle what needs a human (above), then 'forktool sync {report.tag}'"
    if report.dry_run and report.conflicts:
        return f"forktool sync {report.tag} (it stops at the conflict for you to resolve)"
    if report.dry_run:
        return f"forktool sync {report.tag}"
    if report.stage != "done":
        return "resolve what is above, then 'forktool sync --continue' (or 'forktool sync --abort')"
    if report.check_ok is False:
        return f"fix what check found on branch {report.branch}, then review it"
    return f"review branch {report.branch} and merge it (git merge {report.branch})"


def render_merged(out: Output, result: PollResult) -> None:
    for merged in result.merged:
        out.print(
            f"merged : {merged.patch}: PR {merged.pr} merged as {(merged.commit or '')[:10]} "
            f"'{merged.subject}' (record it: forktool upstream resolve --write)",
            markup=False,
        )
    if result.merged_note:
        out.print(f"note   : {result.merged_note}", markup=False)


def render_poll(out: Output, result: PollResult) -> None:
    out.print(f"pinned : {result.pin}")
    render_merged(out, result)
    if not result.newer:
        out.result(Text(f"nothing new: no release newer than {result.pin}", style="green"))
        return
    out.print("newer  : " + ", ".join(r.tag for r in result.newer))
    assert result.plan is not None
    out.print(Text(f"plan for {result.plan.tag}:", style="bold"))
    render_plan_body(out, result.plan)
    for blocker in result.blockers:
        out.print(Text(f"sync cannot start: {blocker}", style="yellow"), markup=False)
    if result.needs_hands:
        out.result(Text(f"{result.plan.tag}: a sync needs hands (exit 4)", style="yellow"))
    else:
        out.result(
            Text(
                f"{result.plan.tag}: clean plan, 'forktool sync {result.plan.tag}' can run (exit 3)",
                style="green",
            )
        )


def render_sync_markdown(report: SyncReport) -> str:
    """The sync report as a pull-request body."""
    title = "Sync plan" if report.dry_run else "Sync"
    lines = [f"# {title}: {report.previous_tag} → {report.tag}", ""]
    if report.branch:
        lines += [
            f"Branch `{report.branch}`, upstream tag `{report.tag}` ({report.tag_commit[:12]}).",
            "",
        ]
    lines += ["## Retired (absorbed by ancestry)", ""]
    if report.retired:
        lines += ["| patch | upstream commit(s) | first release | witnesses |", "|---|---|---|---|"]
        lines += [
            f"| `{r.patch}` | {', '.join(c[:12] for c in r.commits)} | {r.first_release or '-'} | {r.witnesses} |"
            for r in report.retired
        ]
    else:
        lines.append(f"None: {report.tag} contains no patch's upstream commit.")
    lines += ["", "## Kept and refreshed", ""]
    if report.refreshed:
        lines += ["| patch | refresh | note |", "|---|---|---|"]
        lines += [f"| `{e.patch}` | {e.status} | {e.message} |" for e in report.refreshed]
    else:
        lines.append("No patch left to refresh.")
    if report.range_diff:
        lines += [
            "",
            "<details><summary>range-diff of the refreshed series</summary>",
            "",
            "```",
            report.range_diff.rstrip(),
            "```",
            "</details>",
        ]
    waiting = pending_patches(report)
    if waiting:
        lines += ["", "## Waiting for upstream (pending: kept, never retired)", ""]
        lines += [f"- `{name}`: PR {pr or '(none named)'}" for name, pr in waiting]
    lines += ["", "## Pins", ""]
    if report.pins:
        lines += ["| file | line | old | new |", "|---|---|---|---|"]
        lines += [f"| `{p.file}` | {p.line} | `{p.old}` | `{p.new}` |" for p in report.pins]
    else:
        lines.append("No pin site changed.")
    if report.conflicts or report.notes:
        lines += ["", "## Needs a human", ""]
        lines += [f"- **conflict** {c}" for c in report.conflicts]
        lines += [f"- {n}" for n in report.notes]
    if report.check is not None:
        verdict = "passed" if report.check_ok else "**failed**"
        lines += ["", f"## Check: {verdict}", ""]
        checks = report.check.get("checks", [])
        if isinstance(checks, list):
            lines += ["| check | result |", "|---|---|"]
            for check in checks:
                result = (
                    "skipped"
                    if check.get("skipped")
                    else ("ok" if check.get("ok") else "**failed**")
                )
                lines.append(f"| `{check.get('id')}` | {result} |")
        failures = check_failures(report.check)
        if failures:
            lines.append("")
            lines += [f"- {reason}" for reason in failures]
    if report.message:
        lines += ["", report.message]
    return "\n".join(lines) + "\n"
