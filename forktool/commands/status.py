from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING

import click

from forktool.app import App, format_option, pass_app

if TYPE_CHECKING:
    from forktool.engine.apply.early import EarlyStart
    from forktool.git import Git


@click.command("status")
@format_option()
@pass_app
def command(app: App, fmt: str) -> int:
    """One screen: the pin, the series, and each patch's state.

    \b
    Example:
      forktool status
      forktool status --format json | jq '.patches[].patch'
    """
    # As verify does: git starts at the pin on the series file alone (before the
    # command line was parsed, when it is a plain one: forktool.head_start), and the
    # fork is loaded while it works (forktool.engine.apply.early).
    with _started(app) as (git, early):
        fork = app.fork(strict=False)  # fork_status refuses what a strict load would
        from forktool.engine.status import fork_status
        from forktool.report import status as report_status

        result = fork_status(fork, git, early=early)
    app.emit(result, fmt, report_status.render_status)
    return 0


@contextmanager
def _started(app: App) -> Iterator[tuple[Git, EarlyStart | None]]:
    """The repository, and git's work on the series at the pin: taken over from the
    head start, or started now; None when the pin cannot be resolved (fork_status
    refuses it, after what a strict load would refuse)."""
    from forktool.errors import FatalError
    from forktool.head_start import verifying

    with ExitStack() as stack:
        try:
            run = stack.enter_context(verifying("status", app, None, None))
        except FatalError:  # outside a repository, app.git() refuses it again here
            yield app.git(), None
            return
        yield run.git, run.early
