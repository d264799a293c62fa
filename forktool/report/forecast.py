"""Renderers for tracking upstream: ``upstream resolve`` (text) and ``forecast`` (text,
markdown for a CI job summary, one self-contained HTML file)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from forktool.escape import html_text, md_code, md_text, script_json
from forktool.git import short
from forktool.output import Output, styled
from forktool.report.retirement import VERDICT_STYLE
from forktool.report.table import new_table

if TYPE_CHECKING:  # types for annotations only: resolve must not import forecast's engine
    from forktool.engine.upstream.first_break import FirstBreak
    from forktool.engine.upstream.forecast import Cell, ForecastResult, TargetSummary

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

_LEFT_PENDING = frozenset({"ambiguous", "other-project", "unknown-project", "in-pin"})


# -- forecast: text ---------------------------------------------------------------------


def summary_line(summary: TargetSummary) -> str:
    """'v0.27.0: retires 5, breaks 1 (0002, first broken by abc1234 '...'), 2 carry over'."""
    parts = [f"retires {len(summary.retires)}"]
    if summary.breaks:
        named = []
        for name, first in summary.breaks:
            there = name in summary.present
            why = ", already applied" if there else ""
            if first:
                how = "already there since" if there else "first broken by"
                if name in summary.merged:  # where it stopped applying, not where it came
                    how = "already applied; first broken by"
                why = f", {how} {first.commit[:7]} '{first.subject}'"
            named.append(f"{name}{why}")
        parts.append(f"breaks {len(summary.breaks)} ({'; '.join(named)})")
    else:
        parts.append("breaks 0")
    parts.append(f"{summary.carry} carry over")
    if summary.not_tried:
        parts.append(f"{summary.not_tried} not tried")
    return f"{summary.ref}: " + ", ".join(parts)


def _cell_text(cell: Cell) -> Text:
    text = styled(cell.verdict, style=VERDICT_STYLE.get(cell.verdict, ""))
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
    table = new_table("patch", *(target.name for target in result.targets))
    for row in result.patches:
        table.add_row(row.patch, *(_cell_text(c) for c in row.cells))
    out.print(table)
    legend = styled("legend: ")
    for word, style in (*VERDICT_STYLE.items(), *APPLY_STYLE.items()):
        legend.append(word, style=style)
        legend.append(" ")
    legend.append("(verdict / apply; @commit: the first commit that broke it)")
    out.print(legend)
    for summary in result.summaries():
        style = "red" if summary.breaks else "green"
        out.result(styled(summary_line(summary), style=style))


# -- forecast: markdown ------------------------------------------------------------------


_MD_MARK = {"exact": "✅", "offset": "⚠️", "conflict": "❌", "absorbed": "🗑️", "not-tried": "⏸️"}


def forecast_markdown(result: ForecastResult) -> str:
    """The matrix for a CI job summary (GitHub-flavoured markdown)."""
    lines = [f"## Forecast from {md_text(result.pin)}", ""]
    if not result.targets:
        return "\n".join([*lines, f"No release newer than {md_text(result.pin)}.", ""])
    for summary in result.summaries():
        lines.append(f"- {md_text(summary_line(summary))}")
    lines += ["", "| patch | " + " | ".join(md_text(t.name) for t in result.targets) + " |"]
    lines.append("|---" * (len(result.targets) + 1) + "|")
    for row in result.patches:
        cells = []
        for cell in row.cells:
            text = f"{_MD_MARK.get(cell.apply, '')} {md_text(cell.verdict)} / {md_text(cell.apply)}"
            if cell.first_break:
                text += f" (first broken by {md_code(cell.first_break.commit[:7], table=True)})"
            cells.append(text)
        lines.append(f"| {md_code(row.patch, table=True)} | " + " | ".join(cells) + " |")
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
# A verdict a human must settle outranks how the patch applies: never the grey of 'keep'.
_VERDICT_CSS_COLOUR = {"revisit": "#8e24aa"}


def _cell_colour(cell: Cell) -> str:
    return _VERDICT_CSS_COLOUR.get(cell.verdict) or _CSS_COLOUR.get(cell.apply, "#555")


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
var data=JSON.parse(document.getElementById('forecast-data').textContent);
document.body.dataset.patches=String(data.patches.length);
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
    esc = html_text
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
            f"<th>{esc(t.name)}<br><small>{esc(short(t.commit))}</small></th>"
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
                    f'<td class="cell apply-{esc(cell.apply)} verdict-{esc(cell.verdict)}" '
                    f'tabindex="0" style="background:{_cell_colour(cell)}" '
                    f'data-details="{esc(_details(row.patch, cell))}">{esc(label)}</td>'
                )
            parts.append("</tr>")
        parts.append("</tbody></table>")
        parts.append('<div id="details">Hover or click a cell for its details.</div>')
        parts.append('<p class="legend">')
        parts += [
            f'<span style="background:{colour}">{esc(state)}</span> {esc(LEGEND[state])} '
            for state, colour in {**_CSS_COLOUR, **_VERDICT_CSS_COLOUR}.items()
        ]
        parts.append("</p>")
    data = script_json(result.to_json())
    parts.append(f'<script type="application/json" id="forecast-data">{data}</script>')
    parts.append(f"<script>{_SCRIPT}</script></body></html>")
    return "\n".join(parts) + "\n"
