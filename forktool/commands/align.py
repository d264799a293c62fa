"""``forktool align``: divergence from the pinned tag vs the ledger."""

from __future__ import annotations

import click

from forktool.app import App
from forktool.engine.release.align import align
from forktool.options import format_option, pass_app
from forktool.report.align import render_align


@click.command("align")
@format_option()
@pass_app
def command(app: App, fmt: str) -> int:
    """Check that the fork diverges from the pinned tag only as its ledger declares.

    Compares HEAD with the pinned tag (never a merge-base with upstream's main):
    every added path needs an 'add' entry in alignment.ledger, every deleted
    path a 'del' entry; a modified or type-changed upstream file is always a
    problem (carry the change as a patch). A declared deletion that is back at
    HEAD is 'resurrected'. For layout: overlay, every tracked path needs an
    'add' entry. Entries that match nothing, and 'until:<commit>' entries whose
    commit the pinned tag contains, are warnings. Exit 1 with the undeclared
    paths when not aligned.

    \b
    Example:
      forktool align
      forktool align --format json | jq -r '.undeclared[]'
    """
    result = align(app.config(), app.git())
    app.emit(result, fmt, render_align)
    return 0 if result.ok else 1
