from __future__ import annotations

import click

from forktool.app import App
from forktool.engine.patches.history_contract import check_history
from forktool.engine.revisions import resolve
from forktool.options import format_option, pass_app
from forktool.report import patches as report


@click.command("check-history")
@click.argument("rev", metavar="REV")
@click.option(
    "--prefix",
    "prefixes",
    multiple=True,
    metavar="PATH",
    help="Every path a commit touches must lie under PATH (repeatable; "
    "default: history.prefixes in forktool.yaml).",
)
@click.option(
    "--gnu-patch/--no-gnu-patch",
    "gnu_patch",
    default=None,
    help="Images apply patches with GNU patch: refuse renames, mode changes, symlinks, "
    "submodules and binaries (default: history.gnu_patch).",
)
@format_option()
@pass_app
def command(app: App, rev: str, prefixes: tuple[str, ...], gnu_patch: bool | None, fmt: str) -> int:
    """Check the commits between the pin and REV against the history contract.

    For forks that keep their patches as commits on a branch: no merges, no empty
    commits, the required trailers present and well-formed (Upstream-Merge is
    40-hex commits or 'none'), every path inside the configured prefixes and none
    of the fork's own files, and, with --gnu-patch, nothing GNU patch cannot
    apply. Every violation is listed. Exit 0 when the history is sound, 1 when
    not (or when there are no commits), 2 when REV or the pin cannot be read.

    \b
    Examples:
      forktool check-history patches/v1.1.0
      forktool check-history HEAD --prefix src/ --gnu-patch --format json
    """
    config = app.config()
    git = app.git()
    result = check_history(
        config,
        git,
        resolve(git, rev, kind="revision"),
        prefixes=[p.rstrip("/") for p in prefixes] or None,
        gnu_patch=gnu_patch,
    )
    app.emit(result, fmt, report.render_history)
    return 0 if result.ok else 1
