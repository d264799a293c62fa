from __future__ import annotations

import click

from forktool.app import App, format_option, pass_app
from forktool.engine.status import fork_status
from forktool.report import status as report_status


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
    fork = app.fork(strict=False)  # fork_status refuses what a strict load would
    result = fork_status(fork, app.git())
    app.emit(result, fmt, report_status.render_status)
    return 0
