"""The one table every text renderer draws: tokens stay whole, prose wraps.

Piped output (CI logs) is 80 columns wide. A patch name, a tag, a commit id or a URL
must stay copyable: those columns never wrap, and the prose columns (a detail, a note,
the witnesses) wrap at spaces, never inside a word (a URL in a header line stays whole).
When even that does not fit the width, the table is printed wider than the terminal
rather than cut a name in two.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.table import Table
from rich.text import Text

from forktool.console import safe_text
from forktool.escape import terminal

PROSE_COLUMNS = frozenset(
    {"detail", "note", "witnesses", "reason", "message", "subject", "from header line"}
)
PROSE_MIN_WIDTH = 24  # narrower, a sentence reads one word a line
_UNCLAMPED = 1 << 20


class TokenTable(Table):
    """A table that widens past the console rather than split a token column.

    Its cells are data: a string is shown as it is (never rich markup, its control
    characters escaped), and is measured as shown.
    """

    def add_row(self, *renderables: RenderableType | None, **kwargs: Any) -> None:
        super().add_row(*(_cell(r) for r in renderables), **kwargs)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        needed = self._needed_width(console, options)
        if needed > options.max_width:
            options = options.update_width(needed)
        yield from super().__rich_console__(console, options)

    def _needed_width(self, console: Console, options: ConsoleOptions) -> int:
        # Measured unclamped: rich caps a measurement at the console's width, and a URL
        # longer than that in a prose column would then be folded mid-token.
        unclamped = options.update_width(_UNCLAMPED)
        widths: Iterable[int] = (
            self._measure_column(console, unclamped, column)[1 if column.no_wrap else 0]
            for column in self.columns
        )
        return sum(widths) + self._extra_width


def _cell(renderable: RenderableType | None) -> RenderableType | None:
    if isinstance(renderable, str):
        return Text(terminal(renderable, keep="\n"))
    if isinstance(renderable, Text):
        return safe_text(renderable)
    return renderable


def new_table(*columns: str) -> Table:
    """A table with a bold header row and no box, its columns named ``columns``."""
    made = TokenTable(show_header=True, header_style="bold", box=None, pad_edge=False)
    for column in columns:
        prose = column in PROSE_COLUMNS
        made.add_column(
            column, overflow="fold", no_wrap=not prose, min_width=PROSE_MIN_WIDTH if prose else None
        )
    return made
