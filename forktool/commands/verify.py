from __future__ import annotations

from typing import TYPE_CHECKING

import click

from forktool.app import App, format_option, pass_app
from forktool.engine.apply.early import default_jobs, early_start, resolve_base
from forktool.errors import FatalError, require_no_errors

if TYPE_CHECKING:
    from forktool.engine.apply.verify import VerifyResult
    from forktool.output import Output


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
    try:
        git = app.git()
        name, commit = resolve_base(app.config(), git, base)
    except FatalError:  # the fork's own problems are said first, as a load says them
        require_no_errors(app.fork(strict=False).findings)
        raise
    workers = default_jobs() if jobs is None else jobs
    # git starts on the series file alone; the fork is loaded, and the engine that
    # judges its patches imported, while git works (forktool.engine.apply.early).
    with early_start(git, app.config(), commit, workers) as early:
        fork = app.fork(strict=False)
        require_no_errors(fork.findings)
        from forktool.engine.apply.verify import verify_series

        with app.output.progress(len(fork.patches), f"verifying on {name}") as tick:
            result = verify_series(
                fork,
                git,
                base=name,
                base_commit=commit,
                allow_offset=allow_offset,
                progress=tick,
                keep_going=keep_going,
                jobs=workers,
                early=early,
            )
    app.emit(result, fmt, _render)
    return 0 if result.ok else 1


def _render(output: Output, result: VerifyResult) -> None:
    from forktool.report.verify import render_verify  # rich: only when text is drawn

    render_verify(output, result)
