from __future__ import annotations

from contextlib import nullcontext

import click

from forktool.app import App, format_option, pass_app


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
    from forktool.engine.apply.early import default_jobs, early_start, resolve_base
    from forktool.errors import FatalError

    git = app.git()
    try:
        _, commit = resolve_base(app.config(), git, None)
    except FatalError:  # fork_status refuses it, after what a strict load would refuse
        commit = None
    # As verify does: git starts at the pin on the series file alone, and the fork is
    # loaded while it works (forktool.engine.apply.early).
    with (
        early_start(git, app.config(), commit, default_jobs()) if commit else nullcontext() as early
    ):
        fork = app.fork(strict=False)  # fork_status refuses what a strict load would
        from forktool.engine.status import fork_status
        from forktool.report import status as report_status

        result = fork_status(fork, git, early=early)
    app.emit(result, fmt, report_status.render_status)
    return 0
