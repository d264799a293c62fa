"""``verify`` and ``status``: their bodies, and their run without click.

A CI gate and a fork's developers run these two all day, and on a short series
importing click and parsing the line with it is about a tenth of the run (12-19 ms
of 120-165 ms on 5 patches: docs/performance.md). So their bodies
live here, free of click: the click commands (``forktool/commands/verify.py``,
``status.py``) call them with what click parsed, and for a plain line, one whose git
the head start began (:func:`forktool.head_start.begin`), the entry point calls them
with what :func:`forktool.head_start.read_line` read (:func:`run_line`). A property
test holds that reading to click's, option by option
(``tests/commands/test_head_start.py``); any other line, ``--help`` or a value click
would refuse included, goes through click.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING

from forktool.app import App, current_app, start_app
from forktool.error_handler import handled
from forktool.errors import FatalError, require_no_errors
from forktool.faults import faultpoint
from forktool.head_start import HeadStart, verifying

if TYPE_CHECKING:
    from forktool.engine.apply.early import EarlyStart, Verifying
    from forktool.engine.apply.verify import VerifyResult
    from forktool.git import Git
    from forktool.output import Output

faultpoint("plain.import", write=False)  # where the tests press Ctrl-C while it loads


def run_line(started: HeadStart) -> int:
    """Run the plain command line the head start began (``started``: the line, the
    directory and config file it runs with, git's work) as click would, and return
    its exit code; expected failures are said in one line, as always."""
    line = started.line
    current_app.set(None)  # as click's run starts: no App until this line's is made

    def command() -> int:
        app = start_app(started.cwd, started.config_file, quiet=line.quiet, verbose=False)
        if line.command == "status":
            return status(app, line.fmt)
        return verify(app, line.base, line.allow_offset, line.keep_going, line.jobs, line.fmt)

    return handled(command)


def verify(
    app: App, base: str | None, allow_offset: bool, keep_going: bool, jobs: int | None, fmt: str
) -> int:
    """``forktool verify``: 0 when every patch is exact and the revert restores the
    exact base tree, 1 when not (a problem reading the series or the base: exit 2)."""
    # git starts on the series file alone (before the command line was parsed, when
    # it is a plain one: forktool.head_start); the fork is loaded, and the engine that
    # judges its patches imported, while git works (forktool.engine.apply.early).
    with _verify_started(app, base, jobs) as run:
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
    app.emit(result, fmt, _render_verify)
    return 0 if result.ok else 1


@contextmanager
def _verify_started(app: App, base: str | None, jobs: int | None) -> Iterator[Verifying]:
    """git's work on the series: taken over from the head start, or started now."""
    with ExitStack() as stack:
        try:
            run = stack.enter_context(verifying("verify", app, base, jobs))
        except FatalError:  # the fork's own problems are said first, as a load says them
            require_no_errors(app.fork(strict=False).findings)
            raise
        yield run


def _render_verify(output: Output, result: VerifyResult) -> None:
    from forktool.report.verify import render_verify  # rich: only when text is drawn

    render_verify(output, result)


def status(app: App, fmt: str) -> int:
    """``forktool status``: one screen on the pin, the series and each patch (exit 0;
    a fork that cannot be read: exit 2)."""
    # As verify does: git starts at the pin on the series file alone (before the
    # command line was parsed, when it is a plain one: forktool.head_start), and the
    # fork is loaded while it works (forktool.engine.apply.early).
    with _status_started(app) as (git, early):
        fork = app.fork(strict=False)  # fork_status refuses what a strict load would
        from forktool.engine.status import fork_status
        from forktool.report import status as report_status

        result = fork_status(fork, git, early=early)
    app.emit(result, fmt, report_status.render_status)
    return 0


@contextmanager
def _status_started(app: App) -> Iterator[tuple[Git, EarlyStart | None]]:
    """The repository, and git's work on the series at the pin: taken over from the
    head start, or started now; None when the pin cannot be resolved (fork_status
    refuses it, after what a strict load would refuse)."""
    with ExitStack() as stack:
        try:
            run = stack.enter_context(verifying("status", app, None, None))
        except FatalError:  # outside a repository, app.git() refuses it again here
            yield app.git(), None
            return
        yield run.git, run.early
