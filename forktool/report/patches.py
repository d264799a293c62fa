"""Text renderers for the canonical-patch commands: fmt, export, import, refresh, check-history."""

from __future__ import annotations

from rich.text import Text

from forktool.engine.patches.export import ExportedPatch, ExportResult
from forktool.engine.patches.fmt import FmtResult
from forktool.engine.patches.history_contract import HistoryResult
from forktool.engine.patches.import_ import ImportResult
from forktool.engine.patches.refresh_result import RefreshResult
from forktool.errors import some_names
from forktool.output import Output, styled
from forktool.report.table import new_table

_STYLE = {
    "canonical": "green",
    "unchanged": "green",
    "rebased": "yellow",
    "merged": "yellow",
    "resolved": "yellow",
    "rewrite": "yellow",
    "cosmetic": "yellow",
    "added": "green",
    "changed": "yellow",
    "conflict": "red",
    "error": "red",
    "not-tried": "dim",
}


def _status(status: str) -> Text:
    return styled(status, style=_STYLE.get(status, ""))


def _diff(out: Output, diff: str) -> None:
    for line in diff.splitlines():
        style = "green" if line.startswith("+") else "red" if line.startswith("-") else ""
        out.print(styled(line, style=style), markup=False, highlight=False)


def render_fmt(out: Output, result: FmtResult) -> None:
    verb = "check" if result.check else "fmt"
    out.print(f"{verb} on {result.base} ({result.base_commit[:10]})")
    if not result.entries:
        out.result(styled(f"FAILED: {result.message}", style="red"), markup=False)
        return
    table = new_table("patch", "status", "detail")
    for entry in result.entries:
        detail = entry.message + (" (rewritten)" if entry.written else "")
        table.add_row(entry.patch, _status(entry.status), detail)
    out.print(table)
    if result.check or result.dry_run:
        for entry in result.entries:
            if entry.diff:
                _diff(out, entry.diff)
    if result.message:
        out.result(styled(f"FAILED: {result.message}", style="red"), markup=False)
    elif result.check and result.ok:
        out.result(styled(f"OK: {len(result.entries)} patch file(s) are canonical.", style="green"))
    elif result.check:
        out.result(styled(f"FAILED: {_not_canonical(result)}", style="red"), markup=False)
    elif result.dry_run:
        left = some_names([e.patch for e in result.left]) or "nothing"
        out.result(styled(f"DRY RUN: would rewrite {left}; nothing was written."), markup=False)
    else:
        written = [e for e in result.entries if e.written]
        out.result(styled(f"OK: rewrote {len(written)} patch file(s).", style="green"))


def _not_canonical(result: FmtResult) -> str:
    """What ``fmt --check`` left: files to rewrite, patches that cannot be regenerated,
    and those not tried after them, each named (the first few) or counted."""

    def having(*statuses: str) -> list[str]:
        return [e.patch for e in result.left if e.status in statuses]

    told = []
    if rewrite := having("rewrite", "cosmetic"):
        told.append(f"not canonical: {some_names(rewrite)}")
    if broken := having("error"):
        told.append(f"cannot be regenerated: {some_names(broken)}")
    if untried := having("pending"):
        told.append(f"{len(untried)} not tried (an earlier patch does not apply)")
    step = "run 'forktool fmt'" if not broken else "run 'forktool verify' for why"
    return "; ".join([*told, step])


def render_history(out: Output, result: HistoryResult) -> None:
    out.print(
        f"history {result.base} ({result.base_commit[:10]})..{result.rev} "
        f"({result.rev_commit[:10]}): {len(result.commits)} commit(s)"
    )
    if result.message:
        out.result(styled(f"FAILED: {result.message}", style="red"), markup=False)
        return
    for violation in result.violations:
        out.result(
            styled(
                f"error: {violation.commit[:12]} {violation.subject}: {violation.message} "
                f"[{violation.check}]",
                style="red",
            ),
            markup=False,
        )
    if result.ok:
        out.result(styled("OK: every commit keeps the history contract.", style="green"))
    else:
        out.result(
            styled(f"FAILED: {len(result.violations)} violation(s)", style="red"), markup=False
        )


def _range_diff(out: Output, text: str, note: str) -> None:
    if text:
        out.print("range-diff of the old series against the new:")
        for line in text.splitlines():
            out.print(styled("  " + line), markup=False, highlight=False)
    elif note:
        out.print(f"no range-diff: {note}", markup=False)


def _map_word(patch: ExportedPatch) -> str:
    words = ",".join(c[:10] for c in patch.upstream_commits) or patch.kind
    return (
        f"{words} {patch.upstream_pr}" if patch.kind == "pending" and patch.upstream_pr else words
    )


def render_export(out: Output, result: ExportResult) -> None:
    out.print(
        f"export {result.base}..{result.rev} ({result.rev_commit[:10]}): "
        f"{len(result.patches)} patch(es)"
    )
    table = new_table("patch", "status", "upstream", "commit")
    for patch in result.patches:
        table.add_row(patch.patch, _status(patch.status), _map_word(patch), patch.commit[:10])
    out.print(table)
    out.print("upstream.map entries derived from the commit messages:")
    for patch in result.patches:
        source = f"'{patch.source}'" if patch.source else "no upstream reference in the message"
        out.print(f"  {patch.patch}: {_map_word(patch)} <- {source}", markup=False, soft_wrap=True)
    for name in result.removed:
        out.print(f"removed {name}", markup=False)
    for name in result.orphaned_notes:
        out.warn(f"{name} belongs to no patch any more; rename or delete it")
    _range_diff(out, result.range_diff, result.message)
    written = ", ".join(result.written) or "nothing (already up to date)"
    out.result(styled(f"OK: wrote {written}", style="green"), markup=False)


def render_import(out: Output, result: ImportResult) -> None:
    out.print(f"branch {result.branch}: {result.base} ({result.base_commit[:10]}) +")
    for patch, commit in result.commits:
        out.print(f"  {commit[:10]} {patch}", markup=False)
    if result.offset:
        out.print(
            f"applied at an offset (the dpkg rule): {', '.join(result.offset)}; "
            "'forktool export --from' gives them back at their new lines",
            markup=False,
        )
    replaced = f" (was {result.replaced[:10]})" if result.replaced else ""
    out.result(
        styled(f"OK: {result.branch} is at {result.tip[:10]}{replaced}", style="green"),
        markup=False,
    )


def render_refresh(out: Output, result: RefreshResult) -> None:
    if result.aborted:
        out.result(styled(f"OK: {result.message}", style="green"), markup=False)
        return
    out.print(f"refresh onto {result.onto} ({result.onto_commit[:10]}); the pin stays {result.pin}")
    table = new_table("patch", "status", "detail")
    for entry in result.entries:
        table.add_row(entry.patch, _status(entry.status), entry.message)
    out.print(table)
    if result.ok:
        _range_diff(out, result.range_diff, "")
        written = ", ".join(result.written) or "nothing (the files were already current)"
        out.result(styled(f"OK: wrote {written}", style="green"), markup=False)
        # refreshed in place on the pin: there is nothing to bump
        step = "verify" if result.onto == result.pin else f"pin bump {result.onto}"
        out.print(f"next: forktool {step}", markup=False)
    else:
        out.result(styled(f"FAILED: {result.message}", style="red"), markup=False)
