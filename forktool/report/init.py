"""``forktool init`` as text."""

from __future__ import annotations

from typing import TYPE_CHECKING

from forktool.git import short
from forktool.output import Output

if TYPE_CHECKING:  # the result type only for annotations; keep start-up lean
    from forktool.engine.init import InitResult


def render_init(out: Output, result: InitResult) -> None:
    from forktool.report.map import render_suggestions

    out.print(f"Pinned to {result.tag} ({short(result.commit)}).")
    for label, names in (
        ("created", result.written),
        ("appended the retirement record section to", result.appended),
        ("kept as it is", result.kept),
    ):
        for name in names:
            out.print(f"  {label}: {name}", markup=False)
    if result.quilt is not None:
        out.print(f"Adopted the quilt directory {result.quilt}; upstream.map from its headers:")
        render_suggestions(out, result.suggestions)
        out.print(
            "Next: check upstream.map ('pending' where a header says nothing: write the "
            "upstream commit, or 'none' for a fork-only patch), then run 'forktool check'.",
            markup=False,
        )
        out.print(
            "Patches to files only the release tarball has (configure, ltmain.sh)? Pin the "
            "tarball: forktool pin import-tarball ../PKG_VERSION.orig.tar.*",
            markup=False,
        )
    elif result.written:
        out.print(
            "Next: add patches to patches/, list them in series, map them in upstream.map, "
            "then run 'forktool status'."
        )
    elif not result.appended:
        out.result("Nothing to do: the fork's files are all here.", markup=False)
