from __future__ import annotations

import click

from forktool.app import App
from forktool.engine.patches.export import export_series
from forktool.engine.revisions import resolve
from forktool.options import format_option, pass_app
from forktool.report import patches as report


@click.command("export")
@click.option(
    "--from",
    "rev",
    required=True,
    metavar="REV",
    help="Any revision (branch, tag or commit) whose commits since the pin become the patches.",
)
@format_option()
@pass_app
def command(app: App, rev: str, fmt: str) -> int:
    """Write the commits between the pin and REV as patches/, series and upstream.map.

    Every commit becomes one canonical patch file. Its upstream.map line comes
    from what the commit says, and the output names the line: 'Upstream-Merge:
    <sha>' or '(cherry picked from commit <sha>)' -> that commit; 'Upstream-PR:
    <url>' alone -> 'pending <url>'; nothing -> 'none'. A merge or empty commit is
    refused; the history contract of 'forktool check-history' is enforced only
    when forktool.yaml has a 'history:' section. Patch files no longer produced
    are deleted; notes are kept. Everything is written at once, or nothing. The
    same commits, or a rebase that keeps their content, give the same bytes, and a
    branch made by 'forktool import' gives back the files it was made from. A
    range-diff of the old series against the new is shown for review.

    \b
    Examples:
      forktool export --from patches/v1.1.0
      forktool export --from HEAD --format json
    """
    git = app.git()
    with app.lock(git):
        config = app.config()  # read under the lock
        result = export_series(config, git, resolve(git, rev, kind="revision"))
    app.emit(result, fmt, report.render_export)
    return 0
