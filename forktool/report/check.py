"""Renderers for the CI gate: text, JSON, JUnit XML, GitHub annotations, markdown."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from forktool.engine.release.check import GateResult
from forktool.errors import Finding
from forktool.escape import github_data, github_property, json_safe, md_code, md_text, xml_text
from forktool.output import Output, styled
from forktool.report.table import new_table


def render_text(out: Output, result: GateResult) -> None:
    table = new_table("check", "result", "findings")
    table.columns[1].no_wrap = False  # a skip says why, in words
    table.columns[2].justify = "right"
    for check in result.checks:
        if check.skipped:
            verdict = styled(f"skipped: {check.skipped}", style="dim")
        else:
            verdict = styled("ok", style="green") if check.ok else styled("FAILED", style="red")
        table.add_row(f"{check.id} ({check.title})", verdict, str(len(check.findings)))
    out.print(table)
    for check in result.checks:
        for finding in check.findings:
            style = {"error": "red", "warning": "yellow"}.get(finding.severity, "cyan")
            label = "notice" if finding.severity == "info" else finding.severity
            line = styled(f"{label}: [{check.id}] {finding.render()}", style=style)
            # A notice changes no verdict: -q leaves it out, like the table.
            (out.print if finding.severity == "info" else out.result)(line)
            if finding.hint:
                out.print(styled(f"  hint: {finding.hint}", style="dim"))
    if result.ok:
        out.result(styled("OK: all checks passed", style="green"))
    else:
        out.result(styled(f"FAILED: {_failed(result)}", style="bold red"))


def _failed(result: GateResult) -> str:
    """What failed, in words: the failed checks, or that no check ran at all."""
    return result.nothing_ran or ", ".join(c.id for c in result.checks if not c.ok)


def render_json(result: GateResult) -> str:
    return json.dumps(json_safe(result.to_json()), indent=2) + "\n"


def render_junit(result: GateResult) -> str:
    failures = sum(1 for c in result.checks if not c.ok) + (1 if result.nothing_ran else 0)
    skipped = sum(1 for c in result.checks if c.skipped)
    total_time = sum(c.seconds for c in result.checks)
    tests = len(result.checks) + (1 if result.nothing_ran else 0)
    suites = ET.Element("testsuites", name="forktool", tests=str(tests))
    suite = ET.SubElement(
        suites,
        "testsuite",
        name="forktool check",
        tests=str(tests),
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
            ET.SubElement(case, "skipped", message=xml_text(check.skipped))
        elif not check.ok:
            errors = [f for f in check.findings if f.severity == "error"]
            message = xml_text(errors[0].render())
            failure = ET.SubElement(case, "failure", message=message, type="forktool")
            failure.text = xml_text("\n".join(f.render() for f in check.findings))
        elif check.findings:
            out = ET.SubElement(case, "system-out")
            out.text = xml_text("\n".join(f"{f.severity}: {f.render()}" for f in check.findings))
    if result.nothing_ran:
        # A suite of skipped cases reads as green in most CI dashboards: say it failed.
        case = ET.SubElement(suite, "testcase", classname="forktool.check", name="gate", time="0")
        ET.SubElement(case, "failure", message=xml_text(result.nothing_ran), type="forktool")
    ET.indent(suites)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
    )


def github_annotation(check_id: str, finding: Finding) -> str:
    """One workflow command: ``::error file=F,line=N,title=T::message``."""
    level = {"error": "error", "warning": "warning"}.get(finding.severity, "notice")
    props = []
    if finding.path:
        props.append(f"file={github_property(finding.path)}")
        if finding.line:
            props.append(f"line={finding.line}")
    props.append(f"title={github_property(f'forktool {check_id}')}")
    message = finding.message + (f" (hint: {finding.hint})" if finding.hint else "")
    return f"::{level} {','.join(props)}::{github_data(message)}"


def render_github(result: GateResult) -> str:
    lines = [github_annotation(c.id, f) for c in result.checks for f in c.findings]
    if result.nothing_ran:
        lines.append(github_annotation("gate", Finding("error", result.nothing_ran)))
    verdict = "all checks passed" if result.ok else "FAILED"
    if result.nothing_ran:
        verdict += f": {result.nothing_ran}"
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
        name = f"{md_code(check.id, table=True)} {md_text(check.title)}"
        lines.append(f"| {name} | {verdict} | {len(check.findings)} |")
    if result.nothing_ran:
        lines += ["", f"**failed**: {md_text(result.nothing_ran)}"]
    details = [(c.id, f) for c in result.checks for f in c.findings]
    if details:
        lines += ["", "### Findings", ""]
        for check_id, finding in details:
            where = f"{md_code(finding.location())} " if finding.path else ""
            lines.append(f"- **{finding.severity}** [{check_id}] {where}{md_text(finding.message)}")
    return "\n".join(lines) + "\n"
