from __future__ import annotations

from pathlib import Path

import click

from forktool.app import App
from forktool.engine.init import scaffold
from forktool.git import Git
from forktool.options import format_option, pass_app
from forktool.report import init as report_init


@click.command("init")
@click.option(
    "--pin",
    "tag",
    required=True,
    metavar="TAG",
    help="Upstream release tag to pin (an existing tag: not a branch or commit).",
)
@click.option(
    "--upstream-remote",
    default="upstream",
    show_default=True,
    metavar="NAME",
    help="Remote that holds upstream history and tags.",
)
@click.option(
    "--upstream-url", default=None, metavar="URL", help="Recorded in forktool.yaml as upstream.url."
)
@click.option(
    "--layout",
    type=click.Choice(["merged", "overlay"]),
    default="merged",
    show_default=True,
    help="merged: the fork's branch merges upstream tags; overlay: fork files only.",
)
@click.option(
    "--from-quilt",
    "quilt_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    metavar="DIR",
    help="Adopt an existing quilt directory (its series and patches) in place.",
)
@format_option()
@pass_app
def command(
    app: App,
    tag: str,
    upstream_remote: str,
    upstream_url: str | None,
    layout: str,
    quilt_dir: Path | None,
    fmt: str,
) -> int:
    """Scaffold a fork's files here, pinned to TAG.

    Creates forktool.yaml (with the commit TAG peels to), series, patches/,
    upstream.map, alignment.ledger and FORK.md. Never overwrites a file: an existing
    FORK.md gets the retirement record section appended, and on a fork that already
    has forktool.yaml, init only appends that section when it is missing.

    --from-quilt DIR adopts a quilt directory (DIR/series and its patches, e.g.
    debian/patches) where it is: forktool.yaml points at it, and upstream.map is
    filled from what the patch headers say (as 'forktool map suggest' reads them;
    'pending' where a header says nothing). Only -p1 series entries are accepted.

    \b
    Examples:
      git fetch upstream --tags
      forktool init --pin v1.1.0 --upstream-url https://example.org/pulse.git
      forktool init --pin v1.1.0 --from-quilt debian/patches
    """
    git = Git(app.cwd)
    git.toplevel()  # refuses, with a hint, outside a git repository
    with app.lock(git, root=app.cwd):
        result = scaffold(
            app.cwd,
            git,
            tag=tag,
            remote=upstream_remote,
            url=upstream_url,
            layout=layout,
            quilt_dir=quilt_dir,
        )
    for warning in result.warnings:
        app.output.warn(warning)
    app.emit(result, fmt, report_init.render_init)
    return 0
