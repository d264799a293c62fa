from __future__ import annotations

import click

from forktool.app import App, format_option, pass_app
from forktool.engine.init import scaffold
from forktool.git import Git
from forktool.report import text


@click.command("init")
@click.option(
    "--pin", "tag", required=True, metavar="TAG", help="Upstream release tag to pin (must resolve)."
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
@format_option()
@pass_app
def command(
    app: App, tag: str, upstream_remote: str, upstream_url: str | None, layout: str, fmt: str
) -> int:
    """Scaffold a fork's files here, pinned to TAG.

    Creates forktool.yaml (with the commit TAG peels to), series, patches/,
    upstream.map, alignment.ledger and FORK.md. Refuses to overwrite anything.

    \b
    Example:
      git fetch upstream --tags
      forktool init --pin v1.1.0 --upstream-url https://example.org/pulse.git
    """
    git = Git(app.cwd)
    git.toplevel()  # refuses, with a hint, outside a git repository
    with app.lock(git, root=app.cwd):
        result = scaffold(
            app.cwd, git, tag=tag, remote=upstream_remote, url=upstream_url, layout=layout
        )
    app.emit(result, fmt, text.render_init)
    return 0
