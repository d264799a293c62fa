from __future__ import annotations

import os

import click

from forktool.app import App, exclusive, format_option, notice, pass_app
from forktool.engine.sync import (
    abort_sync,
    continue_sync,
    plan_sync,
    resolve_tag,
    start_sync,
)
from forktool.errors import Interrupted
from forktool.report import sync as report


@click.command("sync")
@click.argument("tag", required=False)
@click.option("--branch", metavar="NAME", help="Branch to create (default: forktool/sync-TAG).")
@click.option(
    "--dry-run", is_flag=True, help="Show the plan (retire, refresh, pins); write nothing."
)
@click.option("--continue", "resume", is_flag=True, help="Resume a sync stopped on a conflict.")
@click.option("--abort", is_flag=True, help="Drop a sync in progress: branch, worktree and state.")
@click.option(
    "--fetch/--no-fetch",
    default=True,
    show_default=True,
    help="Fetch TAG from the upstream remote first.",
)
@format_option("text", "json", "markdown")
@pass_app
def command(
    app: App,
    tag: str | None,
    branch: str | None,
    dry_run: bool,
    resume: bool,
    abort: bool,
    fetch: bool,
    fmt: str,
) -> int:
    """The release procedure: retire what TAG absorbed, refresh the rest, bump pins, merge TAG.

    Works on a new branch in a temporary worktree; your checkout is never switched or
    dirtied. Retirement is by ancestry only. For a merged-layout fork the release
    TAG is merged (never upstream's main branch). The result is checked and a report
    (markdown for a pull request, and JSON) is written under
    .git/forktool/sync/TAG/BRANCH/.
    A conflict stops the sync: resolve it and run 'sync --continue', or 'sync --abort'.
    Exit 0 when synced and the check passed, 1 when stopped or the check failed.

    \b
    Examples:
      forktool sync v1.3.0 --dry-run
      forktool sync v1.3.0
      forktool sync --continue
      forktool sync v1.3.0 --format markdown > pr-body.md
    """
    exclusive({"--continue": resume, "--abort": abort, "--dry-run": dry_run})
    if (resume or abort) and tag:
        raise click.UsageError("--continue and --abort take no TAG")
    if not (resume or abort) and not tag:
        raise click.UsageError("missing TAG (or --continue / --abort)")
    git = app.git()
    if dry_run:
        assert tag is not None
        commit = resolve_tag(app.config(), git, tag, fetch=fetch, notice=notice)
        result = plan_sync(app.fork(), git, tag, commit)
    else:
        with app.lock(git), app.output.steps(5, "sync") as tick:
            if abort:
                result = abort_sync(git)
            elif resume:
                try:
                    result = continue_sync(
                        git, env=os.environ, progress=tick, markdown=report.render_sync_markdown
                    )
                except KeyboardInterrupt:
                    raise Interrupted(
                        "interrupted; the sync is still in progress",
                        "go on with 'forktool sync --continue' or drop it with "
                        "'forktool sync --abort'",
                    ) from None
            else:
                assert tag is not None
                app.fork()  # the fork must be sound before anything starts
                result = start_sync(
                    app.config(),
                    git,
                    tag,
                    branch=branch,
                    fetch=fetch,
                    env=os.environ,
                    progress=tick,
                    notice=notice,
                    markdown=report.render_sync_markdown,
                )
    render = report.render_aborted if abort else report.render_sync
    app.emit(result, fmt, render, writers={"markdown": report.render_sync_markdown})
    if abort:
        return 0
    return 0 if result.ok else 1
