from __future__ import annotations

from pathlib import Path

import click

from forktool.app import App
from forktool.engine.patches.refresh import refresh_onto
from forktool.engine.patches.refresh_resolution import refresh_abort, refresh_continue
from forktool.engine.release.pin_state import require_tree
from forktool.engine.release.tarball import import_tarballs
from forktool.engine.revisions import Upstream, resolve
from forktool.fork import Fork
from forktool.git import Git
from forktool.model.revision import tarball_tree
from forktool.options import (
    drop_file_option,
    exclusive,
    format_option,
    pass_app,
    tarball_option,
    together,
    user_path,
)
from forktool.report import patches as report


@click.command("refresh")
@click.option(
    "--onto",
    "onto",
    metavar="TAG",
    help=(
        "The upstream tag to regenerate the series against (a tag: not a branch or "
        "commit; default: the pinned tag)."
    ),
)
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
@drop_file_option()
@tarball_option("regenerate against its tree, imported on TAG (pin import-tarball --tag TAG).")
@format_option()
@pass_app
def command(
    app: App,
    onto: str | None,
    worktree: Path | None,
    resume: bool,
    abort: bool,
    drop_files: tuple[str, ...],
    tarballs: tuple[Path, ...],
    fmt: str,
) -> int:
    """Regenerate every patch of the series against TAG (default: the pinned tag).

    Works in a temporary index, never the checkout. Each patch is 'unchanged'
    (applies exactly), 'rebased' (applied only at an offset; regenerated at its
    new lines), 'merged' (git's 3-way merge from the patch's own pre-image on the
    pin moves it with no conflict; regenerated, proven exact; review it; forbidden
    by 'refresh: {allow_merged: false}') or 'conflict' (a hand rebase is needed;
    never fuzz). A conflict does not stop the series: the later patches are tried
    without it. Nothing is written unless every patch succeeds. With --worktree
    DIR, a conflict leaves DIR at TAG with the earlier patches committed and the
    conflicting one applied with 3-way markers; fix the files there and run
    --continue, which moves on to the next conflict (a resolution that leaves out a
    file the patch changed is refused, naming it, unless --drop-file PATH confirms
    it). A range-diff of the old series against
    the new is shown for review. The pin does not change: run 'forktool pin bump
    TAG' next. With no --onto, the series is regenerated on the pinned tag itself
    (patches that drifted to an offset, as 'verify' reports them). Exit 0 when
    written, 1 on a conflict, 2 on bad input.

    \b
    Examples:
      forktool refresh                  regenerate drifted patches on the pin
      forktool refresh --onto v1.3.0
      forktool refresh --onto v1.3.0 --worktree ../resolve
      forktool refresh --continue
      forktool refresh --abort
      forktool refresh --onto curl-8_0_0 --tarball ../curl_8.0.0.orig.tar.gz
    """
    exclusive({"--onto TAG": onto, "--continue": resume, "--abort": abort})
    exclusive({"--worktree": worktree, "--continue": resume, "--abort": abort})
    exclusive({"--tarball": tarballs, "--continue": resume, "--abort": abort})
    together("--drop-file", drop_files, "--continue", resume)
    git = app.git()
    with app.lock(git):
        fork = app.fork(strict=True)  # read under the lock
        pin_commit = require_tree(fork.config, git)[1]
        if abort:
            result = refresh_abort(fork, git)
        elif resume:
            result = refresh_continue(fork, git, pin_commit=pin_commit, drop_files=drop_files)
        else:
            name, commit = _target(fork, git, onto, tarballs)
            result = refresh_onto(
                fork, git, name, pin_commit=pin_commit, worktree=worktree, onto_commit=commit
            )
    app.emit(result, fmt, report.render_refresh)
    return 0 if result.ok else 1


def _target(fork: Fork, git: Git, onto: str | None, tarballs: tuple[Path, ...]) -> tuple[str, str]:
    """(name, commit) of the tree to regenerate on: TAG, TAG's tarball imported on it, or
    with neither the tree verify judges (the pin, or its tarball import)."""
    if onto is None and not tarballs:
        return require_tree(fork.config, git)
    onto = onto or fork.config.pin_tag
    revision = resolve(git, onto, upstream=Upstream.of(fork.config))
    if not tarballs:
        return revision.name, str(revision.commit)
    # the pin does not change: nothing is recorded
    imported = import_tarballs(fork.config, git, tarballs, revision, record=False)
    return tarball_tree(onto), imported.commit
