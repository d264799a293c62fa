from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING

import click

from forktool.app import App, format_option, pass_app
from forktool.errors import FatalError, require_no_errors
from forktool.head_start import verifying

if TYPE_CHECKING:
    from forktool.engine.apply.early import Verifying
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
    # git starts on the series file alone (before the command line was parsed, when
    # it is a plain one: forktool.head_start); the fork is loaded, and the engine that
    # judges its patches imported, while git works (forktool.engine.apply.early).
    with _started(app, base, jobs) as run:
        fork = app.fork(strict=False)
        require_no_errors(fork.findings)
        from forktool.engine.apply.verify import verify_series

        with app.output.progress(len(fork.patches), f"verifying on {run.name}") as tick:
            result = verify_series(
                fork,
                run.git,
                base=run.name,
                base_commit=run.commit,
                allow_offset=allow_offset,
                progress=tick,
                keep_going=keep_going,
                jobs=run.workers,
                early=run.early,
            )
    app.emit(result, fmt, _render)
    return 0 if result.ok else 1


@contextmanager
def _started(app: App, base: str | None, jobs: int | None) -> Iterator[Verifying]:
    """git's work on the series: taken over from the head start, or started now."""
    with ExitStack() as stack:
        try:
            run = stack.enter_context(verifying("verify", app, base, jobs))
        except FatalError:  # the fork's own problems are said first, as a load says them
            require_no_errors(app.fork(strict=False).findings)
            raise
        yield run


def _render(output: Output, result: VerifyResult) -> None:
    from forktool.report.verify import render_verify  # rich: only when text is drawn

    render_verify(output, result)
