"""The terminal's rich console, on which text is never markup and never a control sequence.

Imported only when text is drawn (:mod:`forktool.output` makes the consoles lazily,
so a command answering in JSON never loads rich).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.text import Text

from forktool.escape import terminal


def safe_text(text: Text) -> Text:
    """``text`` with its control characters and escape sequences shown (``\\x1b``),
    its styles kept on the characters they covered; line breaks stay."""
    plain = text.plain
    if plain.isprintable() or terminal(plain, keep="\n") == plain:
        return text
    cuts = sorted(
        {cut for i, ch in enumerate(plain) if terminal(ch, keep="\n") != ch for cut in (i, i + 1)}
    )
    made = text.blank_copy()
    for piece in text.divide(cuts):
        shown = terminal(piece.plain, keep="\n")
        if shown != piece.plain:
            escaped = Text(shown, style=piece.style)
            for span in piece.spans:
                escaped.stylize(span.style, 0, len(shown))
            piece = escaped
        made.append_text(piece)
    return made


class DataConsole(Console):
    """A rich console on which text is never markup and never a control sequence.

    forktool writes what others wrote (subjects, author names, patch names): a
    ``[/b]`` in it is two characters to show, an ESC is shown as ``\\x1b``. Styles
    come only from forktool's own ``Text`` objects; rich markup is off for every
    string, and the segments rich is about to write are checked once more, so a
    renderer that forgot cannot send a raw escape sequence.
    """

    def render_str(self, text: str, **kwargs: Any) -> Text:
        kwargs["markup"] = False
        return super().render_str(terminal(text, keep="\n"), **kwargs)

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterator[Segment]:
        if isinstance(renderable, Text):
            renderable = safe_text(renderable)
        for segment in super().render(renderable, options):
            if segment.control or segment.text.isprintable():
                yield segment
            else:
                yield Segment(terminal(segment.text, keep="\n"), segment.style)
