from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import click

from forktool.app import App, notice
from forktool.engine.release.sync import (
    abort_sync,
    continue_sync,
    next_tarball,
    start_sync,
)
from forktool.engine.release.sync_plan import plan_sync
from forktool.engine.release.sync_report import SyncReport
from forktool.engine.revisions import Upstream, resolve
from forktool.errors import Interrupted
from forktool.git import Git
from forktool.options import (
    drop_file_option,
    exclusive,
    format_option,
    pass_app,
    tarball_option,
    together,
)
from forktool.report import sync as report


@click.command("sync")
@click.argument("tag", required=False)
@click.option("--branch", metavar="NAME", help="Branch to create (default: forktool/sync-TAG).")
@click.option(
    "--dry-run", is_flag=True, help="Show the plan (retire, refresh, pins); write nothing."
)
@click.option("--continue", "resume", is_flag=True, help="Resume a sync stopped on a conflict.")
@click.option("--abort", is_flag=True, help="Drop a sync in progress: branch, worktree and state.")
@drop_file_option()
@click.option(
    "--fetch/--no-fetch",
    default=True,
    show_default=True,
    help="Fetch TAG from the upstream remote first.",
)
@tarball_option("needed when the fork pins a release tarball (pin.import_commit).")
@format_option("text", "json", "markdown")
@pass_app
def command(
    app: App,
    tag: str | None,
    branch: str | None,
    dry_run: bool,
    resume: bool,
    abort: bool,
    drop_files: tuple[str, ...],
    fetch: bool,
    tarballs: tuple[Path, ...],
    fmt: str,
) -> int:
    """The release procedure: retire what TAG absorbed, refresh the rest, bump pins, merge TAG.

    Works on a new branch in a temporary worktree; your checkout is never switched or
    dirtied. Retirement is by ancestry only. For a merged-layout fork the release
    TAG is merged (never upstream's main branch). The result is checked and a report
    (markdown for a pull request, and JSON) is written under
    .git/forktool/sync/TAG/BRANCH/.
    Every patch is refreshed (moved exactly, at an offset, or by a clean 3-way merge
    listed under "review first"); the sync then stops once for all the conflicts:
    resolve them one after the other, each followed by 'sync --continue', or 'sync --abort'.
    A fork that pins a release tarball (pin import-tarball) needs TAG's tarball:
    --tarball FILE imports it on TAG first (also with --dry-run); the patches are
    refreshed onto the tarball's tree and pin.import_commit moves with the pin.
    Exit 0 when synced and the check passed, 1 when stopped or the check failed.

    \b
    Examples:
      forktool sync v1.3.0 --dry-run
      forktool sync v1.3.0
      forktool sync --continue
      forktool sync v1.3.0 --format markdown > pr-body.md
      forktool sync curl-8_0_0 --tarball ../curl_8.0.0.orig.tar.gz
    """
    _refuse_bad_usage(tag, dry_run=dry_run, resume=resume, abort=abort, drop_files=drop_files)
    git = app.git()
    if dry_run:
        assert tag is not None
        result = _plan(app, git, tag, fetch=fetch, tarballs=tarballs)
    else:
        with app.lock(git), app.output.steps(5, "sync") as tick:
            if abort:
                result = abort_sync(git)
            elif resume:
                result = _continue(git, tick, drop_files)
            else:
                assert tag is not None
                result = _start(app, git, tick, tag, branch=branch, fetch=fetch, tarballs=tarballs)
    render = report.render_aborted if abort else report.render_sync
    app.emit(result, fmt, render, writers={"markdown": report.render_sync_markdown})
    if abort:
        return 0
    return 0 if result.ok else 1


def _refuse_bad_usage(
    tag: str | None, *, dry_run: bool, resume: bool, abort: bool, drop_files: tuple[str, ...]
) -> None:
    """One mode at a time: a TAG to start or plan, none to go on or abort."""
    exclusive({"--continue": resume, "--abort": abort, "--dry-run": dry_run})
    if (resume or abort) and tag:
        raise click.UsageError("--continue and --abort take no TAG")
    if not (resume or abort) and not tag:
        raise click.UsageError("missing TAG (or --continue / --abort)")
    together("--drop-file", drop_files, "--continue", resume)


def _plan(app: App, git: Git, tag: str, *, fetch: bool, tarballs: tuple[Path, ...]) -> SyncReport:
    """--dry-run: the plan, on TAG's tarball import when one is given (imported under
    the lock: it writes objects and a ref)."""
    upstream = Upstream.of(app.config(), "--no-fetch", fetch=fetch, notice=notice)
    revision = resolve(git, tag, upstream=upstream, pinning=True)
    tree = None
    if tarballs:
        with app.lock(git):
            tree = next_tarball(app.config(), git, revision, tarballs)
    return plan_sync(app.fork(), git, revision, tree)


def _start(
    app: App,
    git: Git,
    tick: Callable[[str], None],
    tag: str,
    *,
    branch: str | None,
    fetch: bool,
    tarballs: tuple[Path, ...],
) -> SyncReport:
    app.fork()  # the fork must be sound before anything starts
    return start_sync(
        app.config(),
        git,
        tag,
        branch=branch,
        fetch=fetch,
        env=os.environ,
        progress=tick,
        notice=notice,
        markdown=report.render_sync_markdown,
        tarballs=tarballs,
    )


def _continue(git: Git, tick: Callable[[str], None], drop_files: tuple[str, ...]) -> SyncReport:
    try:
        return continue_sync(
            git,
            env=os.environ,
            progress=tick,
            markdown=report.render_sync_markdown,
            drop_files=drop_files,
        )
    except KeyboardInterrupt:
        raise Interrupted(
            "interrupted; the sync is still in progress",
            "go on with 'forktool sync --continue' or drop it with 'forktool sync --abort'",
        ) from None
