from __future__ import annotations

import click

from forktool.app import App
from forktool.options import format_option, pass_app


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
    from forktool.plain import status  # the body, shared with a plain line's run

    return status(app, fmt)
