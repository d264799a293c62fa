from __future__ import annotations

import contextlib

import click

from forktool.app import App
from forktool.engine.patches.fmt import fmt_fork
from forktool.engine.release.pin_state import require_tree
from forktool.errors import require_no_errors
from forktool.options import exclusive, format_option, pass_app
from forktool.report import patches as report


@click.command("fmt")
@click.option(
    "--check", is_flag=True, help="Change nothing; exit 1 when any patch file is not canonical."
)
@click.option(
    "--dry-run", is_flag=True, help="Show what fmt would rewrite, with the diffs; write nothing."
)
@click.option("--force", is_flag=True, hidden=True, help="Accepted for compatibility; no effect.")
@format_option()
@pass_app
def command(app: App, check: bool, dry_run: bool, force: bool, fmt: str) -> int:
    """Regenerate every patch on the pin in canonical form; --check compares only.

    Each patch is applied onto the pinned tree in a temporary index (never the
    checkout), committed with its own author, date and message, and written back
    by 'git format-patch -k --full-index --no-renames --zero-commit --no-signature
    --no-stat'. A plain-diff patch keeps its '#' header; only its diff is
    regenerated. --check fails, per file, on any byte difference and shows the
    diff. fmt rewrites every file that differs, cosmetic differences included
    (same 'git patch-id --stable', same hunks), so that afterwards --check and
    'forktool check' pass; --dry-run shows the diffs and writes nothing. Nothing
    is written unless every patch regenerates.

    \b
    Examples:
      forktool fmt --check            # the CI gate: exit 1 on any difference
      forktool fmt --dry-run          # what fmt would rewrite
      forktool fmt                    # rewrite what is not canonical
    """
    del force  # fmt rewrites cosmetic differences by default now
    exclusive({"--check": check, "--dry-run": dry_run})
    git = app.git()
    with contextlib.nullcontext() if check or dry_run else app.lock(git):
        fork = app.fork(strict=False)  # read under the lock
        require_no_errors(fork.findings)
        tag, commit = require_tree(fork.config, git)
        with app.output.progress(len(fork.patches), f"regenerating on {tag}") as tick:
            result = fmt_fork(
                fork,
                git,
                base=tag,
                base_commit=commit,
                check=check,
                dry_run=dry_run,
                progress=tick,
            )
    app.emit(result, fmt, report.render_fmt)
    return 0 if result.ok else 1
