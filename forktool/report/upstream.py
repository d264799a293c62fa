"""Renderers of ``upstream``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from forktool.git import short
from forktool.output import Output, styled
from forktool.report.table import new_table

if TYPE_CHECKING:  # types for annotations only: resolve must not import forecast's engine
    from forktool.engine.upstream.resolve import ResolveResult
from forktool.engine.upstream.poll import PollResult
from forktool.errors import command_line
from forktool.report.forecast import _LEFT_PENDING
from forktool.report.sync import render_plan_body


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
        out.result(styled(f"nothing new: no release newer than {result.pin}", style="green"))
        return
    out.print("newer  : " + ", ".join(r.name for r in result.newer))
    assert result.plan is not None
    out.print(styled(f"plan for {result.plan.tag}:", style="bold"))
    render_plan_body(out, result.plan)
    for blocker in result.blockers:
        out.print(styled(f"sync cannot start: {blocker}", style="yellow"), markup=False)
    if result.needs_hands:
        out.result(styled(f"{result.plan.tag}: a sync needs hands (exit 4)", style="yellow"))
    else:
        out.result(
            styled(
                f"{result.plan.tag}: clean plan, "
                f"'{command_line('forktool', 'sync', result.plan.tag)}' can run (exit 3)",
                style="green",
            )
        )


_HOW_WORDS = {
    "squash": "squash merge '(#N)'",
    "merge": "merge commit 'Merge pull request #N'",
    "gitlab": "GitLab 'See merge request'",
    "pattern": "upstream.pr_patterns",
    "not-merged": "not merged yet",
    "ambiguous": "several commits claim it: left pending",
    "no-pr": "no PR to look for (write 'pending <PR-url>')",
    "other-project": "another project's PR: left pending",
    "unknown-project": "whose PR cannot be told: left pending",
    "in-pin": "already in the pin: left pending",
}


def render_resolve(out: Output, result: ResolveResult) -> None:
    out.print(f"upstream branch: {result.branch} ({short(result.branch_commit)})", markup=False)
    if not result.patches:
        out.result("no pending patch: nothing to resolve")
        return
    table = new_table("patch", "PR", "commit", "how", "subject")
    for p in result.patches:
        commit = styled(short(p.commit), style="green") if p.commit else styled("-", style="dim")
        how = styled(_HOW_WORDS[p.how], style="yellow" if p.how in _LEFT_PENDING else "")
        table.add_row(p.patch, p.pr or "-", commit, how, p.subject)
    out.print(table)
    for p in result.patches:
        if p.how in _LEFT_PENDING and p.candidates:
            out.print(
                f"  {p.patch}: candidates {', '.join(short(c) for c in p.candidates)}",
                markup=False,
            )
        if p.reason:
            out.print(f"  {p.patch}: {p.reason}", markup=False)
    for change in result.changes:
        out.result(f"wrote {change}", markup=False)
    for warning in result.warnings:
        out.warn(warning)
    merged = len(result.merged)
    if not result.written and merged:
        out.result(
            f"{merged} merged PR(s) found; 'forktool upstream resolve --write' records them",
            markup=False,
        )
    elif not merged:
        out.result("no pending PR has merged yet")
