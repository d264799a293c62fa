"""The one table every text renderer draws: a bold header, no box, no edge padding."""

from __future__ import annotations

from rich.table import Table


def new_table(*columns: str) -> Table:
    """A table with ``columns``, each folding long cells (patch names, URLs) onto more lines."""
    drawn = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    for column in columns:
        drawn.add_column(column, overflow="fold")
    return drawn
