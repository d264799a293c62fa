from __future__ import annotations

import click

from forktool.app import App
from forktool.engine.patches.import_ import import_series
from forktool.engine.release.pin_state import require_tree
from forktool.options import format_option, pass_app
from forktool.report import patches as report


@click.command("import")
@click.option(
    "--branch", required=True, metavar="NAME", help="The branch to create (refs/heads/NAME)."
)
@click.option("--force", is_flag=True, help="Replace NAME if it exists (never a checked-out one).")
@format_option()
@pass_app
def command(app: App, branch: str, force: bool, fmt: str) -> int:
    """Build a branch of the pin plus one commit per patch, from the series.

    Each commit carries its patch's author, date and message (trailers
    included); the committer is the author, so importing the same series twice
    gives the same commit ids. Made in a temporary index with commit-tree and
    update-ref: the checkout, the index and the work tree are never touched.
    Every patch must apply on the pin under the fork's rule: exactly, or under
    apply_rule: dpkg at an offset (committed where it lands, and listed).
    'forktool export --from NAME' gives back the same files (an offset patch
    regenerated at its new lines).

    \b
    Examples:
      forktool import --branch patches/v1.1.0
      forktool import --branch patches/v1.1.0 --force --format json
    """
    git = app.git()
    with app.lock(git):
        fork = app.fork(strict=True)  # read under the lock
        commit = require_tree(fork.config, git)[1]
        result = import_series(fork, git, branch, base_commit=commit, force=force)
    app.emit(result, fmt, report.render_import)
    return 0
