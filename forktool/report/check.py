"""Renderers for the CI gate: text, JSON, JUnit XML, GitHub annotations, markdown."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from rich.text import Text

from forktool.engine.check import GateResult
from forktool.errors import Finding
from forktool.output import Output
from forktool.report.table import new_table


def render_text(out: Output, result: GateResult) -> None:
    table = new_table("check", "result", "findings")
    table.columns[1].no_wrap = False  # a skip says why, in words
    table.columns[2].justify = "right"
    for check in result.checks:
        if check.skipped:
            verdict = Text(f"skipped: {check.skipped}", style="dim")
        else:
            verdict = Text("ok", style="green") if check.ok else Text("FAILED", style="red")
        table.add_row(f"{check.id} ({check.title})", verdict, str(len(check.findings)))
    out.print(table)
    for check in result.checks:
        for finding in check.findings:
            style = {"error": "red", "warning": "yellow"}.get(finding.severity, "cyan")
            label = "notice" if finding.severity == "info" else finding.severity
            line = Text(f"{label}: [{check.id}] {finding.render()}", style=style)
            # A notice changes no verdict: -q leaves it out, like the table.
            (out.print if finding.severity == "info" else out.result)(line)
            if finding.hint:
                out.print(Text(f"  hint: {finding.hint}", style="dim"))
    if result.ok:
        out.result(Text("OK: all checks passed", style="green"))
    else:
        failed = ", ".join(c.id for c in result.checks if not c.ok)
        out.result(Text(f"FAILED: {failed}", style="bold red"))


def render_json(result: GateResult) -> str:
    return json.dumps(result.to_json(), indent=2) + "\n"


def render_junit(result: GateResult) -> str:
    failures = sum(1 for c in result.checks if not c.ok)
    skipped = sum(1 for c in result.checks if c.skipped)
    total_time = sum(c.seconds for c in result.checks)
    suites = ET.Element("testsuites", name="forktool", tests=str(len(result.checks)))
    suite = ET.SubElement(
        suites,
        "testsuite",
        name="forktool check",
        tests=str(len(result.checks)),
        failures=str(failures),
        errors="0",
        skipped=str(skipped),
        time=f"{total_time:.3f}",
    )
    for check in result.checks:
        case = ET.SubElement(
            suite,
            "testcase",
            classname="forktool.check",
            name=check.id,
            time=f"{check.seconds:.3f}",
        )
        if check.skipped:
            ET.SubElement(case, "skipped", message=check.skipped)
        elif not check.ok:
            errors = [f for f in check.findings if f.severity == "error"]
            failure = ET.SubElement(case, "failure", message=errors[0].render(), type="forktool")
            failure.text = "\n".join(f.render() for f in check.findings)
        elif check.findings:
            out = ET.SubElement(case, "system-out")
            out.text = "\n".join(f"{f.severity}: {f.render()}" for f in check.findings)
    ET.indent(suites)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
    )


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotation(check_id: str, finding: Finding) -> str:
    """One workflow command: ``::error file=F,line=N,title=T::message``."""
    level = {"error": "error", "warning": "warning"}.get(finding.severity, "notice")
    props = []
    if finding.path:
        props.append(f"file={_escape_property(finding.path)}")
        if finding.line:
            props.append(f"line={finding.line}")
    props.append(f"title={_escape_property(f'forktool {check_id}')}")
    message = finding.message + (f" (hint: {finding.hint})" if finding.hint else "")
    return f"::{level} {','.join(props)}::{_escape_data(message)}"


def render_github(result: GateResult) -> str:
    lines = [github_annotation(c.id, f) for c in result.checks for f in c.findings]
    verdict = "all checks passed" if result.ok else "FAILED"
    lines.append(f"forktool check: {verdict}")
    return "\n".join(lines) + "\n"


def render_check_markdown(result: GateResult) -> str:
    """The gate's verdict as a pull-request comment (``check --format markdown``)."""
    head = "passed" if result.ok else "failed"
    mark = "✅" if result.ok else "❌"
    lines = [
        f"## {mark} forktool check {head}",
        "",
        "| check | result | findings |",
        "|---|---|---|",
    ]
    for check in result.checks:
        verdict = "skipped" if check.skipped else ("ok" if check.ok else "**failed**")
        lines.append(f"| `{check.id}` {check.title} | {verdict} | {len(check.findings)} |")
    details = [(c.id, f) for c in result.checks for f in c.findings]
    if details:
        lines += ["", "### Findings", ""]
        for check_id, finding in details:
            where = f"`{finding.location()}` " if finding.path else ""
            lines.append(f"- **{finding.severity}** [{check_id}] {where}{finding.message}")
    return "\n".join(lines) + "\n"
