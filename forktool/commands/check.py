from __future__ import annotations

import click

from forktool.app import App
from forktool.engine.release.check import check_ids, run_checks, select_checks
from forktool.options import format_option, pass_app
from forktool.report import check as report


@click.command("check")
@click.option("--only", multiple=True, metavar="ID", help="Run only this check (repeatable).")
@click.option("--skip", multiple=True, metavar="ID", help="Skip this check (repeatable).")
@click.option("--list", "list_checks", is_flag=True, help="List the checks and exit.")
@format_option("text", "json", "junit", "github", "markdown")
@pass_app
def command(
    app: App, only: tuple[str, ...], skip: tuple[str, ...], list_checks: bool, fmt: str
) -> int:
    """The CI gate: every check that needs no network, one verdict.

    Fails closed: a missing or empty input is a finding, never a pass. Exit 0 when
    every check passed, 1 when any found an error, 2 when the gate could not run.

    \b
    Examples:
      forktool check
      forktool check --format github          # annotations in a GitHub workflow
      forktool check --format junit > forktool.xml
      forktool check --skip apply --only files --only record
    """
    if list_checks:
        for check_id in check_ids():
            click.echo(check_id)
        return 0
    specs = select_checks(only, skip)
    config = app.config()
    git = app.git()
    with app.output.progress(len(specs), "checking") as tick:
        result = run_checks(config, git, specs, progress=tick)
    app.emit(
        result,
        fmt,
        report.render_text,
        writers={
            "json": report.render_json,
            "junit": report.render_junit,
            "github": report.render_github,
            "markdown": report.render_check_markdown,
        },
    )
    return 0 if result.ok else 1
