"""Renderers of ``arms``."""

from __future__ import annotations

from forktool.engine.apply.arms import ArmsReport
from forktool.errors import command_line
from forktool.output import Output, styled


def render_arms(out: Output, report: ArmsReport) -> None:
    out.print(f"pin {report.pin}, patch set {report.patch_set}")
    for arm in report.arms:
        build = command_line("forktool", "image", "build", *arm.args)
        out.print(f"  {arm.name:<50} {build}".rstrip(), markup=False)
    for waiver in report.waivers:
        out.print(f"  waived {waiver.patch}: {waiver.reason}", markup=False)
    if not report.checked:
        return
    for finding in report.findings:
        out.result(styled(f"error: {finding.render()}", style="red"), markup=False)
    if report.ok:
        out.result(styled("OK: every patch has an arm result or a waiver", style="green"))
