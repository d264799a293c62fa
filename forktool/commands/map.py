from __future__ import annotations

import click

from forktool.app import App
from forktool.engine.patches.map_suggest import suggest
from forktool.options import format_option, pass_app
from forktool.report import map as report


@click.group("map")
def command() -> None:
    """Read and fill upstream.map.

    \b
    Example:
      forktool map suggest
    """


@command.command("suggest")
@click.option(
    "--write",
    is_flag=True,
    help="Fill map entries that are missing, 'none' or 'pending' (never replaces commits).",
)
@format_option()
@pass_app
def suggest_command(app: App, write: bool, fmt: str) -> int:
    """The upstream commits, PRs and statuses the patch headers already name.

    Reads Debian DEP-3 (Origin, Applied-Upstream, Bug, Forwarded), Yocto
    Upstream-Status, openSUSE Git-commit/Patch-mainline, Linux stable and Android
    lines ('commit <sha> upstream.', '[ Upstream commit <sha> ]', FROMLIST:), git's
    '(cherry picked from commit <sha>)' and forktool's Upstream-Merge/Upstream-PR.
    A full 40-hex id is kept as written; an abbreviation only when it names one
    commit in this repository. --write changes upstream.map all at once, or not
    at all, and says what it changed.

    \b
    Examples:
      forktool map suggest
      forktool map suggest --write
      forktool map suggest --format json | jq '.suggestions[] | select(.present | not)'
    """
    git = app.git()
    if write:
        with app.lock(git):
            result = suggest(app.fork(strict=False), git, write=True)
    else:
        result = suggest(app.fork(strict=False), git)
    app.emit(result, fmt, report.render_suggest)
    return 0
