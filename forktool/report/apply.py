"""Renderers of ``apply``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from forktool.output import Output, styled

if TYPE_CHECKING:  # the result types only for annotations; keep start-up lean
    from forktool.engine.apply.target import DirResult
from forktool.report.verify import _verdict_table


def render_apply(out: Output, result: DirResult) -> None:
    what = {
        "apply": "apply",
        "verify": "verify",
        "except": "declare state",
        "verify-except": "verify state",
    }[result.mode]
    out.print(f"{what} on {result.target} (engine: {result.engine})")
    if result.state:
        for patch, state in result.state.items():
            out.print(f"  found {patch}: {state}")
    if result.patches:
        out.print(_verdict_table(result.patches))
    if result.changed:
        out.print(f"changed {len(result.changed)} file(s)")
    if result.ok:
        out.result(styled("OK" + (f": {result.message}" if result.message else ""), style="green"))
    else:
        out.result(styled(f"FAILED: {result.message}", style="red"), markup=False)
