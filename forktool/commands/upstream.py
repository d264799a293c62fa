from __future__ import annotations

import click

from forktool.app import App, format_option, pass_app
from forktool.engine.poll import poll
from forktool.report import sync as report


@click.group("upstream")
def command() -> None:
    """Watch upstream for new releases (for a scheduled job).

    \b
    Example:
      forktool upstream poll --format json > poll.json; echo "exit $?"
    """


@command.command("poll")
@click.option(
    "--fetch/--no-fetch",
    default=True,
    show_default=True,
    help="Fetch upstream's tags first, or use the tags already here.",
)
@click.option(
    "--prereleases/--no-prereleases",
    default=None,
    help="Count rc/beta tags as releases (default: 'prereleases' in forktool.yaml).",
)
@format_option()
@pass_app
def poll_command(app: App, fetch: bool, prereleases: bool | None, fmt: str) -> int:
    """Newer release tags than the pin, and the plan a sync to the newest would make.

    Exit codes a scheduler can branch on: 0 nothing new; 3 a new release with a
    clean plan (sync can run unattended); 4 a new release that needs hands (a patch
    conflicts on it, or the witnesses disagree about one); 2 the poll could not run.

    \b
    Examples:
      forktool upstream poll
      forktool upstream poll --no-fetch --format json
    """
    result = poll(app.fork(), app.git(), fetch=fetch, prereleases=prereleases)
    app.emit(result, fmt, report.render_poll)
    return result.exit_code
