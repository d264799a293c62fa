from __future__ import annotations

from pathlib import Path

import click

from forktool.app import App
from forktool.engine.apply.target import apply_mode, apply_to_directory, progress_steps
from forktool.errors import require_no_errors
from forktool.options import format_option, pass_app, user_path
from forktool.report import apply as report_apply


@click.command("apply")
@click.option(
    "--target",
    "target",
    required=True,
    type=user_path(),
    metavar="DIR",
    help="Plain directory to patch (e.g. site-packages in an image); not a git checkout.",
)
@click.option(
    "--engine",
    type=click.Choice(["git", "patch"]),
    default="git",
    show_default=True,
    help="git: 'git apply' outside a repository. patch: GNU patch with strict flags.",
)
@click.option(
    "--verify",
    "verify",
    is_flag=True,
    help="Prove DIR already carries exactly the series; change nothing.",
)
@click.option(
    "--except",
    "exclude",
    multiple=True,
    metavar="PATCH",
    help="Bring DIR to 'every patch applied except PATCH' from whatever state it is in "
    "(repeatable); with --verify, prove DIR is exactly that state (PATCH absent).",
)
@click.option("--dry-run", is_flag=True, help="Decide everything, write nothing.")
@format_option()
@pass_app
def command(
    app: App,
    target: Path,
    engine: str,
    verify: bool,
    exclude: tuple[str, ...],
    dry_run: bool,
    fmt: str,
) -> int:
    """Apply the series to a plain directory, strictly and fail-closed.

    Every hunk must apply exactly (no offset, no fuzz); a patch that is already
    applied is refused, never reversed. Decisions are made in a scratch copy; DIR
    is written only once the whole series is proven, and put back on failure. No
    .orig or .rej file is ever left.

    \b
    Examples:
      forktool apply --target /usr/lib/python3/site-packages
      forktool apply --target ./site --engine patch --dry-run
      forktool apply --target ./site --verify
      forktool apply --target ./site --except 0002-retry.patch     # a minus-one arm
      forktool apply --target ./site --verify --except 0002-retry.patch   # prove that arm
    """
    fork = app.fork(strict=False)
    require_no_errors(fork.findings)
    mode = apply_mode(verify=verify, excluding=bool(exclude))
    steps = progress_steps(mode, len(fork.patches))
    with app.output.progress(steps, f"{mode} {target}") as tick:
        result = apply_to_directory(
            fork,
            target.resolve(),
            engine=engine,
            mode=mode,
            exclude=exclude,
            dry_run=dry_run,
            progress=tick,
        )
    app.emit(result, fmt, report_apply.render_apply)
    return 0 if result.ok else 1
