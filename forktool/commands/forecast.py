from __future__ import annotations

import click

from forktool.app import App, notice
from forktool.engine.upstream.forecast import forecast
from forktool.engine.upstream.targets import choose_targets, fetch_targets
from forktool.options import format_option, pass_app
from forktool.report import forecast as tracking


def _tag_list(value: str | None) -> list[str] | None:
    if value is None:
        return None
    tags = [t.strip() for t in value.split(",") if t.strip()]
    if not tags:
        raise click.BadParameter("name at least one tag", param_hint="--tags")
    return tags


@click.command("forecast")
@click.option(
    "--tags",
    metavar="T1,T2,...",
    help="The target tags, in this order (default: every release tag newer than the pin); "
    "tags only: --branch takes any revision.",
)
@click.option(
    "--branch",
    metavar="REF",
    help="Also forecast upstream's branch head: REF is a branch of the upstream remote "
    "(e.g. main; fetched when it is upstream.branch) or any revision.",
)
@click.option(
    "--fetch/--no-fetch",
    default=True,
    show_default=True,
    help="Fetch upstream's tags (and upstream.branch for --branch) first, or use what is here.",
)
@click.option(
    "--keep-going",
    is_flag=True,
    help="Past a conflict, apply the later patches on the tree without the conflicting "
    "ones (their cells say so) instead of marking them not-tried.",
)
@format_option("text", "json", "markdown", "html")
@pass_app
def command(
    app: App, tags: str | None, branch: str | None, fetch: bool, keep_going: bool, fmt: str
) -> int:
    """What the next releases will absorb and break: patches down, targets across.

    Each cell says what 'absorbed --tag TARGET' would say (retire, keep, revisit,
    fork-only, pending), how the patch meets TARGET when the patches that remain are
    applied in series order (exact, offset, conflict, absorbed, or not-tried after a
    conflict), and for a patch that applied exactly at the pin but not on TARGET, the
    first upstream commit after which it stopped applying (first_break).

    Changes nothing but the fetched refs (nothing at all with --no-fetch). Exit 0
    with the report; 2 when it cannot run (an unknown tag, a commit that is not here).

    \b
    Examples:
      forktool forecast
      forktool forecast --tags v1.3.0,v1.4.0 --branch main --no-fetch
      forktool forecast --keep-going --format json
      forktool forecast --format html > forecast.html
      forktool forecast --format markdown >> "$GITHUB_STEP_SUMMARY"
    """
    fork = app.fork()
    git = app.git()
    wanted = _tag_list(tags)
    reached = None
    if fetch:
        reached = fetch_targets(fork.config, git, branch=branch == fork.config.upstream_branch)
        for line in reached.notices:
            notice(line)
    targets = choose_targets(fork.config, git, wanted, branch, reached)
    with app.output.progress(len(targets), "forecasting") as tick:
        result = forecast(fork, git, targets, fetched=fetch, progress=tick, keep_going=keep_going)
    app.emit(
        result,
        fmt,
        tracking.render_forecast,
        writers={"markdown": tracking.forecast_markdown, "html": tracking.forecast_html},
    )
    return 0
