from __future__ import annotations

import contextlib

import click

from forktool.app import App, format_option, pass_app
from forktool.engine.fmt import fmt_fork
from forktool.engine.pin import require_pin
from forktool.errors import require_no_errors
from forktool.report import patches as report


@click.command("fmt")
@click.option(
    "--check", is_flag=True, help="Change nothing; exit 1 when any patch file is not canonical."
)
@click.option(
    "--force",
    is_flag=True,
    help="Also rewrite files that differ only cosmetically (same patch-id and hunks).",
)
@format_option()
@pass_app
def command(app: App, check: bool, force: bool, fmt: str) -> int:
    """Regenerate every patch on the pin in canonical form; --check compares only.

    Each patch is applied onto the pinned tree in a temporary index (never the
    checkout), committed with its own author, date and message, and written back
    by 'git format-patch -k --full-index --no-renames --zero-commit --no-signature
    --no-stat'. A plain-diff patch keeps its '#' header; only its diff is
    regenerated. --check fails, per file, on any byte difference and shows the
    diff. Without --check, files that differ only cosmetically (same 'git
    patch-id --stable', same hunks) are left alone unless --force. Nothing is
    written unless every patch regenerates.

    \b
    Examples:
      forktool fmt --check            # the CI gate: exit 1 on any difference
      forktool fmt                    # rewrite what is not canonical
      forktool fmt --force --format json
    """
    if check and force:
        raise click.UsageError("--check and --force cannot be combined")
    git = app.git()
    with contextlib.nullcontext() if check else app.lock(git):
        fork = app.fork(strict=False)  # read under the lock
        require_no_errors(fork.findings)
        commit = require_pin(fork.config, git)
        tag = fork.config.pin_tag
        with app.output.progress(len(fork.patches), f"regenerating on {tag}") as tick:
            result = fmt_fork(
                fork, git, base=tag, base_commit=commit, check=check, force=force, progress=tick
            )
    app.emit(result, fmt, report.render_fmt)
    return 0 if result.ok else 1
