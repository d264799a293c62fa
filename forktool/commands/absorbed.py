from __future__ import annotations

from pathlib import Path

import click

from forktool.app import App, notice
from forktool.engine.apply.arms import load_arm_results
from forktool.engine.retirement.absorbed import absorbed
from forktool.engine.retirement.knowledge import fetch_missing
from forktool.engine.retirement.releases import index_history
from forktool.engine.revisions import Upstream, resolve
from forktool.options import format_option, pass_app, user_path
from forktool.report import retirement


@click.command("absorbed")
@click.option(
    "--tag",
    required=True,
    metavar="TAG",
    help="The upstream release tag to judge against (a tag: not a branch, a commit or v1.2~1).",
)
@click.option(
    "--fetch",
    is_flag=True,
    help="First fetch TAG, the pin and any missing mapped commit from the upstream remote "
    "(and deepen a shallow clone).",
)
@click.option(
    "--probe-results",
    "probe_file",
    type=user_path(dir_okay=False),
    metavar="FILE",
    help="Leave-one-out results on TAG (JSON), combined with ancestry as a second witness.",
)
@click.option(
    "--commit-graph",
    is_flag=True,
    help="Write a commit-graph first (git commit-graph write --reachable --changed-paths): "
    "faster ancestry and history scans in large histories, but it changes .git, so it is "
    "never done without this flag.",
)
@format_option()
@pass_app
def command(
    app: App, tag: str, fetch: bool, probe_file: Path | None, commit_graph: bool, fmt: str
) -> int:
    """Per patch: is its upstream commit in TAG, the first release with it, other evidence.

    A patch's verdict is 'retire' only when TAG contains every mapped commit by
    ancestry and nothing contradicts it; 'keep' when it does not; 'revisit' when the
    witnesses disagree (a cherry-pick or identical change in TAG without ancestry, or
    ancestry while the patch still applies forward on TAG); 'fork-only' when mapped to
    'none'; 'pending' when mapped to 'pending [PR-url]' (waiting for upstream, shown with
    its PR, never retired). Read-only: the repository is left byte-identical unless --fetch or
    --commit-graph is given.

    Exit 0 with the report; 1 when --probe-results shows a patch that is now harmful or
    a tag broken with and without it; 2 for an unknown tag, a mapped commit that is not
    in the repository, or a shallow clone.

    \b
    Examples:
      forktool absorbed --tag v1.2.0
      forktool absorbed --tag v1.2.0 --fetch --format json
      forktool absorbed --tag v1.2.0 --probe-results arms.json
    """
    fork = app.fork()
    git = app.git()
    probe = None
    if probe_file is not None:
        probe = load_arm_results(probe_file, "--probe-results")
    reached = None
    if fetch:
        reached = fetch_missing(fork, git, tag)
        for line in reached.notices:
            notice(line)
        for what in reached.fetched:
            app.output.detail(f"fetched {what} from {reached.source}")
    revision = resolve(git, tag, upstream=Upstream.of(fork.config, "--fetch", fetched=reached))
    if commit_graph:
        with app.lock(git):
            index_history(git)
    with app.output.progress(len(fork.patches), f"judging against {tag}") as tick:
        result = absorbed(fork, git, revision, probe=probe, progress=tick)
    app.emit(result, fmt, retirement.render_absorbed)
    return 1 if result.harmful else 0
