from __future__ import annotations

from pathlib import Path

import click

from forktool.app import App, exclusive, format_option, pass_app, together, user_path
from forktool.engine.pin_state import require_pin
from forktool.engine.refresh import refresh_abort, refresh_continue, refresh_onto
from forktool.report import patches as report


@click.command("refresh")
@click.option("--onto", "onto", metavar="TAG", help="The tag to regenerate the series against.")
@click.option(
    "--worktree",
    type=user_path(file_okay=False),
    metavar="DIR",
    help="On a conflict, leave a worktree in DIR with the conflicting patch applied 3-way.",
)
@click.option(
    "--continue", "resume", is_flag=True, help="Take the worktree's resolution and go on."
)
@click.option("--abort", is_flag=True, help="Drop the refresh in progress and its worktree.")
@format_option()
@pass_app
def command(
    app: App, onto: str | None, worktree: Path | None, resume: bool, abort: bool, fmt: str
) -> int:
    """Regenerate every patch of the series against TAG, in series order.

    Works in a temporary index, never the checkout. Each patch is 'unchanged'
    (applies exactly), 'rebased' (applied only at an offset; regenerated at its
    new lines) or 'conflict' (does not apply: a hand rebase is needed; a patch
    that would need fuzz is a conflict). Nothing is written unless every patch
    succeeds. With --worktree DIR, a conflict leaves DIR at TAG with the earlier
    patches committed and the conflicting one applied with 3-way markers; fix
    the files there and run --continue. A range-diff of the old series against
    the new is shown for review. The pin does not change: run 'forktool pin bump
    TAG' next. Exit 0 when written, 1 on a conflict, 2 on bad input.

    \b
    Examples:
      forktool refresh --onto v1.3.0
      forktool refresh --onto v1.3.0 --worktree ../resolve
      forktool refresh --continue
      forktool refresh --abort
    """
    exclusive({"--onto TAG": onto, "--continue": resume, "--abort": abort}, required=True)
    together("--worktree", worktree, "--onto", onto)
    git = app.git()
    with app.lock(git):
        fork = app.fork(strict=True)  # read under the lock
        pin_commit = require_pin(fork.config, git)
        if abort:
            result = refresh_abort(fork, git)
        elif resume:
            result = refresh_continue(fork, git, pin_commit=pin_commit)
        else:
            assert onto is not None
            result = refresh_onto(fork, git, onto, pin_commit=pin_commit, worktree=worktree)
    app.emit(result, fmt, report.render_refresh)
    return 0 if result.ok else 1
