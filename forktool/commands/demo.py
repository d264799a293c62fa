from __future__ import annotations

from pathlib import Path

import click

from forktool.app import App
from forktool.demo.walkthrough import run_demo
from forktool.options import pass_app, user_path


@click.command("demo")
@click.argument("directory", metavar="[DIR]", required=False, type=user_path(file_okay=False))
@pass_app
def command(app: App, directory: Path | None) -> int:
    """Build a throwaway upstream and fork, and walk the release cycle on them.

    DIR (default: ./forktool-demo) receives the upstream repository, the fork and
    the directories the demo patches. Re-running replaces an earlier demo in DIR;
    a directory the demo did not make is refused.

    \b
    Example:
      forktool demo /tmp/forktool-demo
    """
    root = (directory or app.cwd / "forktool-demo").resolve()
    return run_demo(root, app.output)
