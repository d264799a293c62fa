"""Text renderers for ``pin show``, ``pin check`` and ``pin bump``."""

from __future__ import annotations

from rich.text import Text

from forktool.engine.release.pin_bump import BumpResult
from forktool.engine.release.pin_sites import PinsResult
from forktool.engine.release.pin_state import PinState
from forktool.engine.release.tarball import TarballImport
from forktool.errors import command_line
from forktool.git import short
from forktool.output import Output, styled
from forktool.report.table import new_table


def pin_line(pin: PinState, label: str = "pin") -> Text:
    """``pin : v1.2.0 (<commit>)  <whether the tag still peels to it>``."""
    if not pin.present:
        note = styled("tag missing: fetch upstream tags", style="red")
    elif pin.moved:
        note = styled(f"MOVED: tag now peels to {short(pin.actual)}", style="bold red")
    else:
        note = styled("tag peels to the recorded commit", style="green")
    return Text.assemble(f"{label} : ", (pin.tag, "bold"), f" ({short(pin.recorded)})  ", note)


def _pin_line(out: Output, result: PinsResult) -> None:
    out.print(pin_line(result.pin))


def render_show(out: Output, result: PinsResult) -> None:
    _pin_line(out, result)
    table = new_table("site", "line", "value", "note")
    for site in result.sites:
        if site.is_config:
            note = "pin.tag"
        elif site.problem is not None:
            note = site.problem
        elif len(site.matches) != 1:
            note = f"pattern matches {len(site.matches)} times"
        elif site.value != result.pin.tag:
            note = "differs from pin.tag"
        else:
            note = ""
        style = "red" if note and not site.is_config else ""
        table.add_row(
            site.file,
            str(site.line) if site.line else "-",
            site.value or "-",
            styled(note, style=style),
        )
    out.print(table)


def render_check(out: Output, result: PinsResult) -> None:
    _pin_line(out, result)
    for finding in result.findings:
        style = "red" if finding.severity == "error" else "yellow"
        out.result(styled(f"{finding.severity}: {finding.render()}", style=style))
        if finding.hint:
            out.print(styled(f"  hint: {finding.hint}", style="dim"))
    sites = len(result.sites)
    if result.ok:
        head = ""
        if result.head_contains_pin:
            head = "; HEAD contains it"
        elif result.layout == "overlay":
            head = "; overlay layout: HEAD is not required to contain it"
        out.result(
            styled(
                f"OK: {sites} pin site(s) name {result.pin.tag}, which peels to the recorded "
                f"commit {short(result.pin.recorded)}{head}.",
                style="green",
            )
        )
    else:
        errors = sum(1 for f in result.findings if f.severity == "error")
        out.result(styled(f"FAILED: {errors} pin problem(s).", style="red"))


def render_bump(out: Output, result: BumpResult) -> None:
    if not result.changed:
        out.result(
            styled(
                f"Already pinned: every pin site names {result.tag} ({short(result.commit)}); "
                "nothing to change.",
                style="green",
            )
        )
        return
    if result.dry_run:
        out.print(result.diff, markup=False, end="")
        out.result(
            styled(
                f"DRY RUN: would pin {result.tag} ({short(result.commit)}) in "
                f"{len({e.file for e in result.edits})} file(s); nothing was written.",
                style="yellow",
            )
        )
        return
    for edit in result.edits:
        out.print(f"  {edit.file}:{edit.line}: {edit.what} {edit.old} -> {edit.new}", markup=False)
    out.result(
        styled(
            f"Pinned {result.tag} ({short(result.commit)}), was {result.previous_tag}: "
            f"rewrote {len(result.written)} file(s).",
            style="green",
        )
    )
    if result.head_contains_tag is False:
        out.print(
            styled(
                f"next: HEAD does not contain {result.tag} yet; merge it "
                f"({command_line('git', 'merge', result.tag)}) before 'forktool pin check'.",
                style="yellow",
            )
        )


def render_import(out: Output, result: TarballImport) -> None:
    out.print(
        f"Imported {', '.join(result.tarballs)} on {result.tag} ({short(result.tag_commit)}): "
        f"{result.files} files, commit {short(result.commit)} ({result.ref}).",
        markup=False,
    )
    for name in result.skipped:
        out.print(f"  skipped (not a file or symlink): {name}", markup=False)
    if result.recorded:
        was = f" (was {short(result.previous)})" if result.previous else ""
        out.result(
            f"OK: pin.import_commit is {short(result.commit)}{was}: verify, check and status "
            "apply the series to the tarball's tree.",
            markup=False,
        )
    elif result.previous == result.commit:
        out.result(f"OK: pin.import_commit already is {short(result.commit)}.", markup=False)
    else:
        out.result(
            f"Not pinned ({result.tag} is not the pinned tag): sync to it with "
            f"'forktool sync {result.tag} --tarball FILE...'.",
            markup=False,
        )
