"""Terminal and machine output. Only the CLI layer uses this module.

Text goes to stdout through rich: colour and tables on a terminal, plain text
when piped or when ``NO_COLOR`` is set. JSON is one object on stdout and nothing
else. Errors, hints and progress go to stderr.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from rich.console import Console, ConsoleOptions, RenderableType
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.segment import Segment
from rich.text import Text

from forktool.escape import terminal

PROGRESS_DELAY_SECONDS = 1.0


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


def styled(text: str, style: str = "") -> Text:
    """``text`` in ``style`` for the terminal, its control characters shown (rich's
    ``Text`` would drop BEL, BS, VT, FF and CR unseen)."""
    return Text(terminal(text, keep="\n"), style=style)


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


def _console(stream: Any) -> Console:
    plain = bool(os.environ.get("NO_COLOR")) or not stream.isatty()
    return DataConsole(
        file=stream,
        markup=False,
        no_color=plain,
        highlight=False,
        soft_wrap=True,
        emoji=False,
        force_terminal=None if not plain else False,
    )


class Tick(Protocol):
    def __call__(self, advance: int = 1, description: str | None = None) -> None: ...


@dataclass
class Output:
    quiet: bool = False
    verbose: bool = False
    out: Console = field(default_factory=lambda: _console(sys.stdout))
    err: Console = field(default_factory=lambda: _console(sys.stderr))

    def print(self, *objects: Any, **kwargs: Any) -> None:
        if not self.quiet:
            self.out.print(*objects, **kwargs)

    def result(self, *objects: Any, **kwargs: Any) -> None:
        """The verdict line: printed even with ``-q``."""
        self.out.print(*objects, **kwargs)

    def detail(self, *objects: Any) -> None:
        """A step explained on stderr with -v (plain text: paths and refs are not markup)."""
        if self.verbose:
            self.err.print(*objects, markup=False, highlight=False)

    def json(self, payload: dict[str, Any]) -> None:
        # Written in pieces: json.dumps would hold every piece of a long result at once.
        pieces: list[str] = []
        for piece in json.JSONEncoder(indent=2).iterencode(payload):
            pieces.append(piece)
            if len(pieces) >= 8192:
                sys.stdout.write("".join(pieces))
                pieces.clear()
        sys.stdout.write("".join(pieces) + "\n")
        sys.stdout.flush()

    def warn(self, message: str) -> None:
        self.err.print(f"warning: {message}", markup=False)

    @contextmanager
    def steps(self, total: int, what: str) -> Iterator[Callable[[str], None]]:
        """Name each step of a long command as it starts: on a terminal, in the
        progress bar; piped, as one line per step on stderr (nothing with ``-q``)."""
        count = 0
        if self.quiet:
            yield lambda name: None
            return
        if not self.err.is_terminal:

            def line(name: str) -> None:
                nonlocal count
                count += 1
                self.err.print(f"{what}: {name} ({count}/{total})", markup=False)

            yield line
            return
        with self.progress(total, what) as tick:

            def start(name: str) -> None:
                nonlocal count
                tick(1 if count else 0, description=terminal(f"{what}: {name}"))
                count += 1

            yield start

    @contextmanager
    def progress(self, total: int, description: str) -> Iterator[Tick]:
        """A progress bar on stderr that appears only if the work outlasts one second."""
        if self.quiet or not self.err.is_terminal:
            yield _null_tick
            return
        bar = Progress(
            TextColumn("{task.description}", markup=False),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self.err,
            transient=True,
        )
        task = bar.add_task(description, total=total)
        timer = threading.Timer(PROGRESS_DELAY_SECONDS, bar.start)
        timer.daemon = True
        timer.start()

        def tick(advance: int = 1, description: str | None = None) -> None:
            if description is not None:
                bar.update(task, description=description)
            bar.advance(task, advance)

        try:
            yield tick
        finally:
            timer.cancel()
            bar.stop()


def _null_tick(advance: int = 1, description: str | None = None) -> None:
    del advance, description
