"""Text renderers for the canonical-patch commands: fmt, export, import, refresh, check-history."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from forktool.engine.fmt import FmtResult
from forktool.output import Output

_STYLE = {
    "canonical": "green",
    "unchanged": "green",
    "rebased": "yellow",
    "resolved": "yellow",
    "rewrite": "yellow",
    "cosmetic": "yellow",
    "added": "green",
    "changed": "yellow",
    "conflict": "red",
    "error": "red",
    "pending": "dim",
}


def _table(*columns: str) -> Table:
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    for column in columns:
        table.add_column(column, overflow="fold")
    return table


def _status(status: str) -> Text:
    return Text(status, style=_STYLE.get(status, ""))


def _diff(out: Output, diff: str) -> None:
    for line in diff.splitlines():
        style = "green" if line.startswith("+") else "red" if line.startswith("-") else ""
        out.print(Text(line, style=style), markup=False, highlight=False)


def render_fmt(out: Output, result: FmtResult) -> None:
    verb = "check" if result.check else "fmt"
    out.print(f"{verb} on {result.base} ({result.base_commit[:10]})")
    if not result.entries:
        out.result(Text(f"FAILED: {result.message}", style="red"), markup=False)
        return
    table = _table("patch", "status", "detail")
    for entry in result.entries:
        detail = entry.message + (" (rewritten)" if entry.written else "")
        table.add_row(entry.patch, _status(entry.status), detail)
    out.print(table)
    if result.check:
        for entry in result.entries:
            if entry.diff:
                _diff(out, entry.diff)
    if result.message:
        out.result(Text(f"FAILED: {result.message}", style="red"), markup=False)
    elif result.check and result.ok:
        out.result(Text(f"OK: {len(result.entries)} patch file(s) are canonical.", style="green"))
    elif result.check:
        bad = ", ".join(e.patch for e in result.left)
        out.result(
            Text(f"FAILED: not canonical: {bad}; run 'forktool fmt'", style="red"), markup=False
        )
    else:
        written = [e for e in result.entries if e.written]
        out.result(Text(f"OK: rewrote {len(written)} patch file(s).", style="green"))
        cosmetic = [e.patch for e in result.left if e.status == "cosmetic"]
        if cosmetic:
            out.result(
                Text(
                    f"left alone (cosmetic only): {', '.join(cosmetic)}; 'forktool fmt --force' "
                    "rewrites them (fmt --check fails until then)",
                    style="yellow",
                ),
                markup=False,
            )
