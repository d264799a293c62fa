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
from typing import TYPE_CHECKING, Any, Protocol

from forktool.escape import json_safe, terminal

if TYPE_CHECKING:  # rich is imported only when text is drawn (JSON output never loads it)
    from rich.console import Console
    from rich.text import Text

PROGRESS_DELAY_SECONDS = 1.0


def styled(text: str, style: str = "") -> Text:
    """``text`` in ``style`` for the terminal, its control characters shown (rich's
    ``Text`` would drop BEL, BS, VT, FF and CR unseen)."""
    from rich.text import Text

    return Text(terminal(text, keep="\n"), style=style)


def _console(stream: Any) -> Console:
    from forktool.console import DataConsole

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


def say(prefix: str, message: str) -> None:
    """One line on stderr, ``prefix: message`` (``error``, ``hint``, ``notice``), its
    control characters shown escaped; never wrapped, never styled."""
    stream = sys.stderr
    if stream is None:  # no stderr at all (a detached run): nothing to say it on
        return
    stream.write(f"{prefix}: {terminal(message)}\n")
    stream.flush()


class Tick(Protocol):
    def __call__(self, advance: int = 1, description: str | None = None) -> None: ...


class Output:
    """Where a command's answer goes. The rich consoles are made when first drawn on,
    so a command answering in JSON never imports rich."""

    def __init__(
        self,
        quiet: bool = False,
        verbose: bool = False,
        out: Console | None = None,
        err: Console | None = None,
    ) -> None:
        self.quiet = quiet
        self.verbose = verbose
        self._out = out
        self._err = err

    @property
    def out(self) -> Console:
        if self._out is None:
            self._out = _console(sys.stdout)
        return self._out

    @property
    def err(self) -> Console:
        if self._err is None:
            self._err = _console(sys.stderr)
        return self._err

    def _err_is_terminal(self) -> bool:
        # stderr not a tty: no console is made to say so (_console makes it plain).
        if self._err is None and not sys.stderr.isatty():
            return False
        return self.err.is_terminal

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
        # Written in pieces: one string would hold every line of a long result at once.
        pieces: list[str] = []
        for line in json_lines(payload):
            pieces.append(line)
            if len(pieces) >= 1024:
                sys.stdout.write("\n".join(pieces) + "\n")
                pieces.clear()
        sys.stdout.write("\n".join(pieces) + "\n")
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
        if not self._err_is_terminal():

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
        if self.quiet or not self._err_is_terminal():
            yield _null_tick
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

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


def json_lines(payload: dict[str, Any]) -> Iterator[str]:
    """``payload`` as JSON, a line at a time: a line per top-level key, and a line per
    element of a top-level list (a series' patches), each value on its line compact.
    Every line is made by json's C encoder (an indented dump goes through its pure
    Python one: 10x slower on a long series). Every string is valid Unicode: the bytes
    of a name that are not UTF-8 (lone surrogates, as Python reads them) are written
    ``\\xff`` as text, which every JSON parser reads the same way."""
    plain = json.JSONEncoder().encode

    def encode(value: object) -> str:
        text = plain(value)  # ASCII: a surrogate, paired or not, shows as \udxxx
        return text if "\\ud" not in text else plain(json_safe(value))

    yield "{"
    last = len(payload) - 1
    for number, (key, value) in enumerate(payload.items()):
        comma = "," if number < last else ""
        if isinstance(value, list) and value:
            yield f"  {encode(key)}: ["
            end = len(value) - 1
            for position, element in enumerate(value):
                yield f"    {encode(element)}" + ("," if position < end else "")
            yield "  ]" + comma
        else:
            yield f"  {encode(key)}: {encode(value)}{comma}"
    yield "}"
