from __future__ import annotations

from pathlib import Path

import click

from forktool.app import App
from forktool.engine.apply.arms import check_arms, list_arms, load_arm_results, load_waivers
from forktool.options import format_option, pass_app, together, user_path
from forktool.report.arms import render_arms


@click.command("arms")
@click.option(
    "--check", "check", is_flag=True, help="Fail unless every patch has a result or a waiver."
)
@click.option(
    "--results",
    type=user_path(dir_okay=False),
    metavar="FILE",
    help='Arm results: {"full": "pass", "arms": {"<patch>": "fail"}, "patchless": "fail"}.',
)
@click.option(
    "--waivers",
    type=user_path(dir_okay=False),
    metavar="FILE",
    help="Waivers file ('<patch> <reason>' lines); default: image.waivers.",
)
@format_option()
@pass_app
def command(app: App, check: bool, results: Path | None, waivers: Path | None, fmt: str) -> int:
    """List the leave-one-out arms: full, minus-<patch> per patch, patchless.

    The JSON has an "include" list a CI matrix consumes directly; each entry
    carries the 'forktool image build' options that build the arm. A waived
    patch gets no arm. With --check --results FILE, exit 1 when a patch has
    neither an arm result nor a waiver. Arm results are a second witness for
    'absorbed --probe-results'; ancestry decides.

    \b
    Examples:
      forktool arms
      forktool arms --format json          # matrix: include: fromJSON(...).include
      forktool arms --check --results arm-results.json
    """
    together("--check", check, "--results FILE", results)
    together("--results FILE", results, "--check", check)
    fork = app.fork(strict=True)
    waiver_list, waivers_file = load_waivers(fork, waivers)
    report = list_arms(fork, waiver_list, waivers_file)
    if results is not None:
        report = check_arms(report, load_arm_results(results, "--results"), str(results))
    app.emit(report, fmt, render_arms)
    return 0 if report.ok else 1
