from __future__ import annotations

import os

import click

from forktool.app import App, notice
from forktool.options import format_option, pass_app


@click.group("upstream")
def command() -> None:
    """Watch upstream: new releases, and pending PRs that have merged (for a scheduled job).

    \b
    Examples:
      forktool upstream poll --format json > poll.json; echo "exit $?"
      forktool upstream resolve --write
    """


@command.command("poll")
@click.option(
    "--fetch/--no-fetch",
    default=True,
    show_default=True,
    help="Fetch upstream's tags first, or use the tags already here.",
)
@click.option(
    "--prereleases/--no-prereleases",
    default=None,
    help="Count rc/beta tags as releases (default: 'prereleases' in forktool.yaml).",
)
@click.option(
    "--forecast",
    "with_forecast",
    is_flag=True,
    help="Add the forecast matrix (forktool forecast) for the newer releases to the report.",
)
@format_option()
@pass_app
def poll_command(
    app: App, fetch: bool, prereleases: bool | None, with_forecast: bool, fmt: str
) -> int:
    """Newer release tags than the pin, and the plan a sync to the newest would make.

    Exit codes a scheduler can branch on: 0 nothing new; 3 a new release with a
    clean plan (sync can run unattended); 4 a new release that needs hands (a patch
    conflicts on it, the witnesses disagree about one, a patch waits for upstream, or
    'sync' could not start here: no commit identity, uncommitted fork files, a sync in
    progress, broken record markers); 2 the poll could not run. The report also lists
    pending PRs that have merged upstream ('upstream resolve').

    \b
    Examples:
      forktool upstream poll
      forktool upstream poll --no-fetch --format json
      forktool upstream poll --forecast
    """
    from forktool.engine.upstream.poll import poll  # the sync planner: only poll needs it
    from forktool.report import upstream as report_upstream

    result = poll(
        app.fork(),
        app.git(),
        fetch=fetch,
        env=os.environ,
        prereleases=prereleases,
        with_forecast=with_forecast,
    )
    for line in result.upstream.notices:
        notice(line)
    app.emit(result, fmt, report_upstream.render_poll)
    return result.exit_code


@command.command("resolve")
@click.option(
    "--write",
    is_flag=True,
    help="Record each merged PR's commit in upstream.map (the PR URL stays as the note).",
)
@click.option(
    "--fetch/--no-fetch",
    default=True,
    show_default=True,
    help="Fetch upstream's branch (upstream.branch) first, or use what is here.",
)
@format_option()
@pass_app
def resolve_command(app: App, write: bool, fetch: bool, fmt: str) -> int:
    """Which pending upstream PRs have merged, and as which commit?

    For each patch mapped 'pending <PR-url>' (or with an Upstream-PR trailer and no
    commit), finds the commit that merged the PR on upstream's development branch
    (upstream.branch, default main; refs/remotes/<remote>/<branch>): a squash merge
    whose subject ends '(#N)', a 'Merge pull request #N from ...' merge commit, GitLab's
    'See merge request group/project!N', or upstream.pr_patterns. A revert or a
    follow-up that only mentions the PR does not count; when two commits claim it, the
    patch stays pending and both are listed. One git log over the branch.

    --write records the commits in upstream.map, all or nothing, and says what changed.
    Exit 0 with the report; 2 when it cannot run (no upstream branch here).

    \b
    Examples:
      forktool upstream resolve
      forktool upstream resolve --no-fetch --format json
      forktool upstream resolve --write
    """
    from forktool.engine.upstream.resolve import resolve, write_resolved

    git = app.git()
    result = resolve(app.fork(), git, fetch=fetch)
    if write and result.merged:
        with app.lock(git):
            fork = app.fork()  # read under the lock: another run may just have changed it
            result = write_resolved(fork, resolve(fork, git, fetch=False))
    from forktool.report import upstream as report_upstream

    app.emit(result, fmt, report_upstream.render_resolve)
    return 0
