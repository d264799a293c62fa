"""Text renderers for the image commands and arms."""

from __future__ import annotations

from rich.text import Text

from forktool.engine.image.build import BuildResult
from forktool.engine.image.freeze import FreezeResult
from forktool.engine.image.gate import GateRecord
from forktool.engine.image.promote import PromoteResult
from forktool.errors import command_line
from forktool.escape import terminal
from forktool.output import Output, styled


def render_build(out: Output, result: BuildResult) -> None:
    if result.ok:
        out.print(f"arm      : {result.arm}")
        out.print(f"revision : {result.revision}")
        for key, value in sorted(result.labels.items()):
            out.print(f"label    : {key}={value}", markup=False)
        out.result(styled(f"candidate {result.candidate} ({result.image_id})", style="green"))
        out.print(
            f"next: {command_line('forktool', 'image', 'gate', result.candidate)}", markup=False
        )
        return
    out.result(styled(f"FAILED: the build of {result.candidate} failed:", style="red"))
    for line in result.failing_lines:
        out.result(styled(f"  {terminal(line)}"), markup=False)


def render_gate(out: Output, record: GateRecord) -> None:
    out.print(f"candidate: {terminal(record.candidate)} ({record.digest})", markup=False)
    for check in record.checks:
        verdict = styled("ok  ", style="green") if check.ok else styled("FAIL", style="red")
        where = " [host]" if check.where == "host" else ""
        line = Text.assemble(
            verdict, f" {check.kind:<7} exit {check.exit_code:<3} ", " ".join(check.command), where
        )
        out.print(line)
        if not check.ok and check.output:
            for text in check.output.splitlines()[-10:]:
                out.print(styled(f"     {terminal(text)}", style="dim"))
    out.print(f"record: {record.record_path}", markup=False)
    if record.ok:
        out.result(styled(f"PASSED: the gate passed for {record.digest}", style="green"))
    else:
        out.result(styled(f"FAILED: the gate failed for {record.digest}", style="red"))


def render_promote(out: Output, result: PromoteResult) -> None:
    if not result.ok:
        out.result(styled(f"REFUSED: {terminal(result.message)}", style="red"), markup=False)
        return
    if result.pushed_as:
        out.print(
            f"pushed {result.image_id} as {result.repository}:{result.pushed_as}", markup=False
        )
    else:
        out.print(f"the registry already holds {result.image_id}: nothing pushed", markup=False)
    for tag in result.tags:
        out.print(
            f"tagged {result.repository}:{tag} on the registry: {result.digest}", markup=False
        )
    out.result(
        styled(f"PROMOTED: {result.reference} (image {result.image_id})", style="green"),
        markup=False,
    )


def render_freeze(out: Output, result: FreezeResult) -> None:
    for name, value in result.values.items():
        out.print(f"{name}: {value}", markup=False)
    if not result.ok:
        out.result(styled(f"REFUSED: {result.tag} already records something else:", style="red"))
        for name, (recorded, wanted) in result.conflicts.items():
            out.result(
                styled(f"  {name}: tag has {recorded}, this release has {wanted}"), markup=False
            )
        return
    verb = "created" if result.created else "already frozen, unchanged:"
    out.result(styled(f"{verb} {result.tag} at {result.commit[:12]}", style="green"))
