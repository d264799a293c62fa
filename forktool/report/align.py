"""Text renderer for ``forktool align``: the short alignment table."""

from __future__ import annotations

from rich.text import Text

from forktool.engine.release.align import AlignResult
from forktool.output import Output, styled

_ROWS = {
    "added": ("added", "files"),
    "deleted": ("deleted", "files"),
    "modified": ("modified", "upstream files"),
    "type_changed": ("type-changed", "upstream files"),
    "tracked": ("fork files", "files"),
}
_ALWAYS = ("modified", "type_changed")


def _row(key: str, total: int, failing: int) -> Text:
    label, noun = _ROWS[key]
    if key in _ALWAYS:
        state = ""
    else:
        state = ", declared" if not failing else f", {failing} undeclared"
    if total == 1 and noun.endswith("files"):
        noun = noun[:-1]
    body = f"  {label:<12} {total:>4} {noun}{state}"
    verdict = styled("OK", style="green") if not failing else styled("FAIL", style="bold red")
    return Text.assemble(f"{body:<44}", verdict)


def render_align(out: Output, result: AlignResult) -> None:
    out.print("fork alignment")
    out.print(f"  upstream base : {result.tag} ({result.tag_commit[:10]})")
    for key, counts in result.summary().items():
        out.print(_row(key, counts["total"], counts["undeclared"]))
    if result.resurrected:
        out.print(
            Text.assemble(
                f"{'  resurrected  ' + format(len(result.resurrected), '>4') + ' declared deletions':<44}",
                ("FAIL", "bold red"),
            )
        )
    if result.tarball is not None:
        _render_tarball(out, result)
    newest = result.newest_release
    if newest is not None:
        base = "the pinned tag" if result.layout == "overlay" else "HEAD"
        behind = "up to date" if newest.behind == 0 else f"{newest.behind} commit(s) not in {base}"
        out.print(f"  newest release: {newest.tag} ({behind})")
    for finding in result.findings:
        style = "red" if finding.severity == "error" else "yellow"
        out.result(styled(f"{finding.severity}: {finding.render()}", style=style))
        if finding.hint:
            out.print(styled(f"  hint: {finding.hint}", style="dim"))
    if result.ok:
        out.result(
            styled(
                f"OK: divergence from {result.tag} is exactly what the ledger declares.",
                style="green",
            )
        )
    else:
        paths = result.undeclared
        out.result(
            styled(
                f"FAILED: {len(paths)} path(s) diverge from {result.tag} other than as "
                f"declared: {', '.join(paths)}",
                style="red",
            )
        )


def _render_tarball(out: Output, result: AlignResult) -> None:
    """What the release tarball adds to the tag: its own category, never a finding."""
    delta = result.tarball
    assert delta is not None
    merged = sum(1 for c in result.changes if c.tarball)
    out.print(f"  release tarball: {delta.commit[:10]} (pin.import_commit)", markup=False)
    for label, paths in (
        ("adds", delta.added),
        ("changes", delta.modified),
        ("lacks", delta.deleted),
    ):
        if paths:
            shown = ", ".join(paths[:5]) + (
                f", ... ({len(paths) - 5} more)" if len(paths) > 5 else ""
            )
            out.print(f"    {label:<8}{len(paths):>5}  {shown}", markup=False)
    if merged:
        out.print(
            f"    {merged} path(s) at HEAD are as the tarball has them (declared by the import)"
        )
