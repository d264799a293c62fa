from __future__ import annotations

import click

from forktool.app import App
from forktool.options import format_option, pass_app


@click.command("verify")
@click.option(
    "--base",
    metavar="REF",
    default=None,
    help="Verify onto REF (any revision: a tag, branch or commit) instead of the pinned tag.",
)
@click.option("--allow-offset", is_flag=True, help="Accept hunks that apply only at shifted lines.")
@click.option(
    "--keep-going",
    is_flag=True,
    help="Past a failing patch, try each later patch on the tree without the failed ones "
    "(reported as such) instead of stopping: every failure at once.",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="git processes side by side on file-disjoint parts of the series (default: 2 "
    "when the machine has two cores or more and one is free; 1: the series in one call).",
)
@format_option()
@pass_app
def command(
    app: App,
    base: str | None,
    allow_offset: bool,
    keep_going: bool,
    jobs: int | None,
    fmt: str,
) -> int:
    """Apply the series exactly onto the pin (or REF), revert it, prove the round trip.

    Works in a temporary index: the checkout, the index and the work tree are never
    touched. Exit 0 when every patch is exact and the revert restores the exact base
    tree, 1 when not, 2 when the series or base cannot be read.

    \b
    Examples:
      forktool verify
      forktool verify --base v1.2.0 --format json
      forktool verify --keep-going
    """
    from forktool.plain import verify  # the body, shared with a plain line's run

    return verify(app, base, allow_offset, keep_going, jobs, fmt)
