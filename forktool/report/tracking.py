"""Renderers for tracking upstream: ``upstream resolve`` (text) and ``forecast`` (text,
markdown for a CI job summary, one self-contained HTML file)."""

from __future__ import annotations

import html
import json
from typing import TYPE_CHECKING

from rich.text import Text

from forktool.git import short
from forktool.output import Output
from forktool.report.retirement import VERDICT_STYLE
from forktool.report.table import new_table

if TYPE_CHECKING:  # types for annotations only: resolve must not import forecast's engine
    from forktool.engine.forecast import Cell, FirstBreak, ForecastResult, TargetSummary
    from forktool.engine.resolve import ResolveResult

# One colour per apply state (verdicts keep absorbed's colours).
APPLY_STYLE = {
    "exact": "green",
    "offset": "yellow",
    "conflict": "bold red",
    "absorbed": "dim",
    "not-tried": "dim",
}
LEGEND = {
    "retire": "absorbed by ancestry: a sync retires it",
    "keep": "not absorbed",
    "revisit": "the witnesses disagree: decide by hand",
    "fork-only": "mapped to 'none'",
    "pending": "waiting for an upstream PR",
    "exact": "applies exactly after the patches before it",
    "offset": "applies only at shifted lines: refresh it",
    "conflict": "does not apply: the refresh stops here",
    "absorbed": "retired on this target, not applied",
    "not-tried": "after a conflict, not tried",
}


# -- upstream resolve -------------------------------------------------------------------

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
_LEFT_PENDING = frozenset({"ambiguous", "other-project", "unknown-project", "in-pin"})


def render_resolve(out: Output, result: ResolveResult) -> None:
    out.print(f"upstream branch: {result.branch} ({short(result.branch_commit)})", markup=False)
    if not result.patches:
        out.result("no pending patch: nothing to resolve")
        return
    table = new_table("patch", "PR", "commit", "how", "subject")
    for p in result.patches:
        commit = Text(short(p.commit), style="green") if p.commit else Text("-", style="dim")
        how = Text(_HOW_WORDS[p.how], style="yellow" if p.how in _LEFT_PENDING else "")
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


# -- forecast: text ---------------------------------------------------------------------


def summary_line(summary: TargetSummary) -> str:
    """'v0.27.0: retires 5, breaks 1 (0002, first broken by abc1234 '...'), 2 carry over'."""
    parts = [f"retires {len(summary.retires)}"]
    if summary.breaks:
        named = []
        for name, first in summary.breaks:
            why = f", first broken by {first.commit[:7]} '{first.subject}'" if first else ""
            named.append(f"{name}{why}")
        parts.append(f"breaks {len(summary.breaks)} ({'; '.join(named)})")
    else:
        parts.append("breaks 0")
    parts.append(f"{summary.carry} carry over")
    if summary.not_tried:
        parts.append(f"{summary.not_tried} not tried")
    return f"{summary.ref}: " + ", ".join(parts)


def _cell_text(cell: Cell) -> Text:
    text = Text(cell.verdict, style=VERDICT_STYLE.get(cell.verdict, ""))
    text.append(" / ")
    text.append(cell.apply, style=APPLY_STYLE.get(cell.apply, ""))
    if cell.first_break:
        text.append(f" @{cell.first_break.commit[:7]}", style="red")
    return text


def render_forecast(out: Output, result: ForecastResult) -> None:
    out.print(f"pin: {result.pin} ({short(result.pin_commit)})", markup=False)
    if not result.targets:
        out.result(f"nothing to forecast: no release newer than {result.pin}", markup=False)
        return
    table = new_table("patch", *(target.ref for target in result.targets))
    for row in result.patches:
        table.add_row(row.patch, *(_cell_text(c) for c in row.cells))
    out.print(table)
    legend = Text("legend: ")
    for word, style in (*VERDICT_STYLE.items(), *APPLY_STYLE.items()):
        legend.append(word, style=style)
        legend.append(" ")
    legend.append("(verdict / apply; @commit: the first commit that broke it)")
    out.print(legend)
    for summary in result.summaries():
        style = "red" if summary.breaks else "green"
        out.result(Text(summary_line(summary), style=style))


# -- forecast: markdown ------------------------------------------------------------------


_MD_MARK = {"exact": "✅", "offset": "⚠️", "conflict": "❌", "absorbed": "🗑️", "not-tried": "⏸️"}


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def forecast_markdown(result: ForecastResult) -> str:
    """The matrix for a CI job summary (GitHub-flavoured markdown)."""
    lines = [f"## Forecast from {_md(result.pin)}", ""]
    if not result.targets:
        return "\n".join([*lines, f"No release newer than {_md(result.pin)}.", ""])
    for summary in result.summaries():
        lines.append(f"- {_md(summary_line(summary))}")
    lines += ["", "| patch | " + " | ".join(_md(t.ref) for t in result.targets) + " |"]
    lines.append("|---" * (len(result.targets) + 1) + "|")
    for row in result.patches:
        cells = []
        for cell in row.cells:
            text = f"{_MD_MARK.get(cell.apply, '')} {cell.verdict} / {cell.apply}"
            if cell.first_break:
                text += f" (first broken by `{cell.first_break.commit[:7]}`)"
            cells.append(_md(text))
        lines.append(f"| `{_md(row.patch)}` | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Legend: " + "; ".join(f"{_MD_MARK.get(k, '')} **{k}**: {v}" for k, v in LEGEND.items()),
        "",
    ]
    return "\n".join(lines)


# -- forecast: one self-contained HTML file ------------------------------------------------

_CSS_COLOUR = {
    "exact": "#2e7d32",
    "offset": "#f9a825",
    "conflict": "#c62828",
    "absorbed": "#9e9e9e",
    "not-tried": "#bdbdbd",
}
_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:.3em .6em;text-align:left}
th{background:#f4f4f4}td.cell{cursor:pointer;color:#fff;font-weight:600}
td.cell:hover,td.cell:focus{outline:3px solid #333}
#details{margin-top:1em;padding:.8em;border:1px solid #ccc;background:#fafafa;min-height:3em;
white-space:pre-wrap}ul.summary li{margin:.2em 0}.legend span{display:inline-block;
padding:.1em .5em;margin:.1em;color:#fff;border-radius:3px}
"""
_SCRIPT = """
document.querySelectorAll('td.cell').forEach(function(td){
  var show=function(){document.getElementById('details').textContent=td.dataset.details;};
  td.addEventListener('click',show);td.addEventListener('mouseenter',show);
  td.addEventListener('keydown',function(e){if(e.key==='Enter'){show();}});
});
"""


def _details(row: str, cell: Cell) -> str:
    lines = [f"{row} on {cell.ref}", f"verdict: {cell.verdict}: {cell.reason}"]
    lines.append(f"apply: {cell.apply}" + (f": {cell.message}" if cell.message else ""))
    first: FirstBreak | None = cell.first_break
    if first:
        lines.append(
            f"first broken by {first.commit} '{first.subject}' ({first.author}, {first.date}"
            + (f", PR {first.pr}" if first.pr else "")
            + f"; {first.checks} apply checks over {first.touching} commits)"
        )
    return "\n".join(lines)


def forecast_html(result: ForecastResult) -> str:
    """The matrix as one HTML file: no network, no external assets; each cell's details
    show on hover, click or Enter. The JSON result is embedded for scripts."""
    esc = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>forktool forecast from {esc(result.pin)}</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>Forecast from {esc(result.pin)} <small>({esc(short(result.pin_commit))})</small></h1>",
    ]
    if not result.targets:
        parts.append(f"<p>No release newer than {esc(result.pin)}.</p>")
    else:
        parts.append('<ul class="summary">')
        parts += [f"<li>{esc(summary_line(s))}</li>" for s in result.summaries()]
        parts.append("</ul>")
        parts.append('<table id="matrix"><thead><tr><th>patch</th>')
        parts += [
            f"<th>{esc(t.ref)}<br><small>{esc(short(t.commit))}</small></th>"
            for t in result.targets
        ]
        parts.append("</tr></thead><tbody>")
        for row in result.patches:
            parts.append(f"<tr><th>{esc(row.patch)}</th>")
            for cell in row.cells:
                label = f"{cell.verdict} / {cell.apply}"
                if cell.first_break:
                    label += f" @{cell.first_break.commit[:7]}"
                parts.append(
                    f'<td class="cell apply-{esc(cell.apply)}" tabindex="0" '
                    f'style="background:{_CSS_COLOUR.get(cell.apply, "#555")}" '
                    f'data-details="{esc(_details(row.patch, cell))}">{esc(label)}</td>'
                )
            parts.append("</tr>")
        parts.append("</tbody></table>")
        parts.append('<div id="details">Hover or click a cell for its details.</div>')
        parts.append('<p class="legend">')
        parts += [
            f'<span style="background:{colour}">{esc(state)}</span> {esc(LEGEND[state])} '
            for state, colour in _CSS_COLOUR.items()
        ]
        parts.append("</p>")
    data = json.dumps(result.to_json()).replace("</", "<\\/")
    parts.append(f'<script type="application/json" id="forecast-data">{data}</script>')
    parts.append(f"<script>{_SCRIPT}</script></body></html>")
    return "\n".join(parts) + "\n"
