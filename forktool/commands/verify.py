from __future__ import annotations

import click

from forktool.app import App, format_option, pass_app
from forktool.engine.verify import resolve_base, verify_series
from forktool.errors import require_no_errors
from forktool.report import verify as report_verify


@click.command("verify")
@click.option(
    "--base", metavar="REF", default=None, help="Verify onto REF instead of the pinned tag."
)
@click.option("--allow-offset", is_flag=True, help="Accept hunks that apply only at shifted lines.")
@format_option()
@pass_app
def command(app: App, base: str | None, allow_offset: bool, fmt: str) -> int:
    """Apply the series exactly onto the pin (or REF), revert it, prove the round trip.

    Works in a temporary index: the checkout, the index and the work tree are never
    touched. Exit 0 when every patch is exact and the revert restores the exact base
    tree, 1 when not, 2 when the series or base cannot be read.

    \b
    Examples:
      forktool verify
      forktool verify --base v1.2.0 --format json
    """
    fork = app.fork(strict=False)
    require_no_errors(fork.findings)
    git = app.git()
    name, commit = resolve_base(fork, git, base)
    with app.output.progress(len(fork.patches), f"verifying on {name}") as tick:
        result = verify_series(
            fork, git, base=name, base_commit=commit, allow_offset=allow_offset, progress=tick
        )
    app.emit(result, fmt, report_verify.render_verify)
    return 0 if result.ok else 1
