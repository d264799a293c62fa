"""Text renderer for ``forktool map suggest``."""

from __future__ import annotations

from collections.abc import Sequence

from forktool.engine.patches.map_suggest import Suggestion, SuggestResult
from forktool.output import Output, styled
from forktool.report.table import new_table

_ACTION = {"write": "fill", "unchanged": "already mapped", "kept": "kept (map says otherwise)"}


def render_suggestions(out: Output, suggestions: Sequence[Suggestion]) -> None:
    """The suggestion table and a warning per commit that is not usable as it is."""
    if not suggestions:
        out.print("  no patch header names an upstream commit, PR or status", markup=False)
        return
    table = new_table("patch", "suggests", "from header line", "here", "map")
    for s in suggestions:
        here = "-" if not s.commits else "yes" if s.present else "NOT FETCHED"
        table.add_row(s.patch, s.entry, s.source, here, _ACTION[s.action])
    out.print(table)
    for s in suggestions:
        for name in s.unresolved:
            out.warn(
                f"{s.patch}: '{name}' names no single commit in this repository "
                "(fetch upstream, or write the full id); not suggested"
            )
        if s.commits and not s.present:
            out.warn(f"{s.patch}: {', '.join(s.commits)} not in this repository: fetch upstream")


def render_suggest(out: Output, result: SuggestResult) -> None:
    if not result.suggestions:
        out.result("No patch header names an upstream commit, PR or status.", markup=False)
        return
    render_suggestions(out, result.suggestions)
    to_fill = [s for s in result.suggestions if s.action == "write"]
    if result.write:
        if result.written:
            for change in result.written:
                before = change.old if change.old is not None else "(no line)"
                out.print(f"  {change.patch}: {before} -> {change.new}", markup=False)
            out.result(
                styled(
                    f"OK: wrote {len(result.written)} entr(y/ies) to {result.map_file}",
                    style="green",
                ),
                markup=False,
            )
        else:
            out.result(f"OK: {result.map_file} already says all of this", markup=False)
    elif to_fill:
        out.result(
            f"{len(to_fill)} entr(y/ies) to fill: run 'forktool map suggest --write'",
            markup=False,
        )
    else:
        out.result(f"OK: {result.map_file} already says all of this", markup=False)
