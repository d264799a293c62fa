"""Every output medium keeps data as data: the escaping function of each medium, and
every renderer of each medium fed hostile strings (rich markup, ANSI/OSC sequences,
``<!--<script>``, ``</table>``, ``|``, backticks, ``%0A::error::``, characters XML
forbids, line breaks, very long tokens)."""

from __future__ import annotations

import html
import io
import json
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.text import Text
from testing.media_checks import (
    HOSTILE_PIECES,
    MARKDOWN,
    github_ok,
    html_ok,
    markdown_ok,
    terminal_ok,
    xml_ok,
)

from forktool.console import DataConsole
from forktool.engine.patches.refresh_result import RefreshEntry
from forktool.engine.release.check import CheckResult, GateResult
from forktool.engine.release.sync_report import PinChange, Retired, SyncReport
from forktool.engine.retirement.absorption import PatchAbsorption
from forktool.engine.upstream.first_break import FirstBreak
from forktool.engine.upstream.forecast import Cell, ForecastResult, PatchRow
from forktool.engine.upstream.targets import Target
from forktool.errors import Finding
from forktool.escape import (
    github_data,
    html_text,
    json_safe,
    md_code,
    md_fence,
    md_text,
    script_json,
    terminal,
    xml_text,
)
from forktool.model.record import BEGIN, END, RecordEntry, parse_record, with_section
from forktool.model.revision import CommitId, Revision
from forktool.output import Output, json_lines
from forktool.report.check import (
    render_check_markdown,
    render_github,
    render_junit,
    render_text,
)
from forktool.report.forecast import forecast_html, forecast_markdown, render_forecast
from forktool.report.sync import render_sync, render_sync_markdown

hostile = st.lists(
    st.one_of(st.sampled_from(HOSTILE_PIECES), st.text(max_size=12)), min_size=1, max_size=6
).map("".join)
SHA = "0123456789abcdef0123456789abcdef01234567"
PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _outputs(*, colour: bool = False) -> tuple[Output, io.StringIO]:
    buffer = io.StringIO()
    console = DataConsole(
        file=buffer, markup=False, highlight=False, width=80, force_terminal=colour, emoji=False
    )
    return Output(out=console, err=console), buffer


# -- one function per medium --------------------------------------------------------


def test_terminal_shows_escape_sequences_instead_of_sending_them() -> None:
    assert terminal("a\x1b[31mb\x07\u202e") == "a\\x1b[31mb\\x07\\u202e"
    assert terminal("two\nlines", keep="\n") == "two\nlines"
    assert terminal("two\nlines") == "two\\nlines"
    assert terminal("[/b] plain") == "[/b] plain"


@PROPERTY
@given(hostile)
def test_terminal_output_is_printable(text: str) -> None:
    terminal_ok(terminal(text))


def test_names_that_only_look_alike_are_told_apart_in_every_medium() -> None:
    """A zero-width space, joiner, BOM or soft hyphen makes two different patch names
    print the same: every medium shows it as an escape (and JUnit drops no C1 control)."""
    twin = "0001-fix\u200b.patch"
    assert terminal(twin) == "0001-fix\\u200b.patch"
    assert terminal("a\u200dz\ufeff\u00ad") == "a\\u200dz\\ufeff\\xad"
    assert xml_text("a\u202e\x9b\x7fb\nc") == "a\\u202e\\x9b\\x7fb\nc"
    assert html_text(twin) == "0001-fix\\u200b.patch"
    assert md_text(twin) == "0001-fix\\u200b.patch"


def test_markdown_prose_forms_no_autolink() -> None:
    assert md_text("see https://evil.example/x") == "see https\\:\\/\\/evil.example/x"
    assert md_text("WWW.evil.example") == "WWW\\.evil.example"
    markdown_ok("- " + md_text("see https://evil.example/x and www.evil.example"))


def test_json_strings_are_valid_unicode_for_every_parser() -> None:
    """A patch path that is not UTF-8 reaches JSON as ``\\xff`` text, not as a lone
    surrogate that one parser keeps and another reads as U+FFFD."""
    payload = {"patches": [{"path": "new/\udcff\udcfe.txt", "ok": "emoji \U0001f600"}]}
    text = "\n".join(json_lines(payload))
    back = json.loads(text)
    assert back == {"patches": [{"path": "new/\\xff\\xfe.txt", "ok": "emoji \U0001f600"}]}
    assert json_safe({"k\udcc3": ["\ud800"]}) == {"k\\xc3": ["\\ud800"]}


def test_script_json_cannot_end_or_escape_the_script_element() -> None:
    payload = {"subject": "config: handle <!--<script> in templates </script> & more"}
    text = script_json(payload)
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == payload


@PROPERTY
@given(hostile)
def test_script_json_round_trips(text: str) -> None:
    made = script_json({"s": text, text[:20]: [text]})
    assert not set(made) & set("<>&\u2028\u2029")
    assert json.loads(made) == {"s": text, text[:20]: [text]}


@PROPERTY
@given(hostile)
def test_html_text_is_character_data_only(text: str) -> None:
    page = f'<p title="{html_text(text)}">{html_text(text)}</p>'
    assert page.count("<") == 2 and page.count(">") == 2
    assert html.unescape(html_text(text)) == html.unescape(html_text(text))  # parses


def _md_expected(text: str) -> str:
    """What the reader sees of ``md_text(text)``: the text, on one line."""
    shown = "".join(" " if ch in "\r\n\u2028\u2029\x85" else terminal(xml_text(ch)) for ch in text)
    return shown.replace("@", "@\u200b")


def _one_paragraph_text(rendered: str, open_tag: str, close_tag: str) -> str:
    assert rendered.startswith(open_tag) and rendered.endswith(close_tag), rendered
    inner = rendered[len(open_tag) : -len(close_tag)]
    assert "<" not in inner, f"markup from data: {inner!r}"
    return html.unescape(inner)


@PROPERTY
@given(hostile)
def test_markdown_text_renders_as_the_same_text_in_a_list_item_and_a_table_cell(
    text: str,
) -> None:
    item = MARKDOWN.render("- " + md_text(text) + ".")
    assert _one_paragraph_text(item, "<ul>\n<li>", "</li>\n</ul>\n") == _md_expected(text) + "."
    cell = MARKDOWN.render("| h |\n|---|\n| " + md_text(text) + " |\n")
    start = cell.index("<td>") + 4
    assert "<" not in cell[start : cell.index("</td>")]
    markdown_ok("- " + md_text(text))


@PROPERTY
@given(hostile)
def test_markdown_code_span_holds_the_text_and_nothing_renders(text: str) -> None:
    rendered = MARKDOWN.render("| h |\n|---|\n| " + md_code(text, table=True) + " |\n")
    cell = rendered[rendered.index("<td>") + 4 : rendered.index("</td>")]
    assert cell.startswith("<code>") and cell.endswith("</code>"), cell
    assert "<" not in cell[6:-7]
    markdown_ok("- " + md_code(text))


@PROPERTY
@given(hostile)
def test_markdown_fence_cannot_be_closed_by_its_text(text: str) -> None:
    tokens = MARKDOWN.parse("before\n\n" + md_fence(text) + "\n\nafter\n")
    assert [t.type for t in tokens if t.type == "fence"] == ["fence"]
    assert tokens[-2].content == "after"


@PROPERTY
@given(hostile)
def test_xml_text_parses_in_an_element_and_an_attribute(text: str) -> None:
    import xml.etree.ElementTree as ET

    root = ET.Element("r", message=xml_text(text))
    root.text = xml_text(text)
    xml_ok(ET.tostring(root, encoding="unicode"))


@PROPERTY
@given(hostile)
def test_github_data_never_ends_a_command_line(text: str) -> None:
    assert "\n" not in github_data(text) and "\r" not in github_data(text)


# -- renderers, fed hostile data ---------------------------------------------------------


def _gate(text: str) -> GateResult:
    return GateResult(
        (
            CheckResult(
                "series",
                "series and patches",
                (
                    Finding("error", text, f"patches/{text}", 3, hint=text),
                    Finding("warning", text),
                ),
                0.01,
            ),
            CheckResult("history", "history contract", (), 0.0, skipped=text),
            CheckResult("pins", "pin sites", (Finding("info", text, "x"),), 0.0),
        )
    )


@PROPERTY
@given(hostile)
def test_check_renderers_keep_hostile_findings_as_data(text: str) -> None:
    gate = _gate(text)
    out, buffer = _outputs()
    render_text(out, gate)
    terminal_ok(buffer.getvalue())
    suites = xml_ok(render_junit(gate))
    assert suites.find(".//failure") is not None
    markdown_ok(render_check_markdown(gate))
    github_ok(render_github(gate), findings=3)


def _forecast(text: str) -> ForecastResult:
    first = FirstBreak(SHA, text, text, "2024-01-01", text, 3, 4)
    cells = (
        Cell("v2", "keep", "conflict", first, text, text),
        Cell("v2", "retire", "absorbed", None, text, ""),
    )
    return ForecastResult(
        text,
        SHA,
        (Target(Revision("v2", CommitId(SHA))),),
        (PatchRow(text, cells[:1]), PatchRow(text + "2", cells[1:])),
    )


@PROPERTY
@given(hostile)
def test_forecast_renderers_keep_hostile_text_as_data(text: str) -> None:
    result = _forecast(text)
    data = html_ok(forecast_html(result))
    assert data == json.loads(json.dumps(result.to_json()))
    markdown_ok(forecast_markdown(result))
    out, buffer = _outputs()
    render_forecast(out, result)
    terminal_ok(buffer.getvalue())


def _sync(text: str) -> SyncReport:
    return SyncReport(
        tag=text,
        tag_commit=SHA,
        previous_tag=text,
        branch=text,
        stage="check",
        retired=(Retired(text, (SHA,), text, text),),
        refreshed=(RefreshEntry(text, text, "conflict", text),),
        range_diff=f"1:  abc = 1:  def {text}\n```\n</details>",
        pins=(PinChange(text, 1, text, text),),
        conflicts=(text,),
        notes=(text,),
        kept=(PatchAbsorption(text, (), "pending", None, None, (), text, upstream_pr=text),),
        check=GateResult(
            (
                CheckResult(text, text, (Finding("error", text, text, 3, text),), 0.0),
                CheckResult(text + "2", text, (), 0.0, skipped=text),
            )
        ),
        check_ok=False,
        message=text,
    )


@PROPERTY
@given(hostile)
def test_sync_renderers_keep_hostile_text_as_data(text: str) -> None:
    report = _sync(text)
    rendered = markdown_ok(render_sync_markdown(report))
    assert rendered.count("<details>") == 1 and rendered.count("</details>") == 1
    out, buffer = _outputs()
    render_sync(out, report)
    terminal_ok(buffer.getvalue())


@PROPERTY
@given(hostile)
def test_fork_md_cells_read_back_and_never_form_a_marker(text: str) -> None:
    entry = RecordEntry("2024-01-01", "retired", text, text, (SHA,), text, text, text)
    record = parse_record(with_section("# notes\n"), add_missing=True).with_entry(entry)
    written = record.render()
    again = parse_record(written)
    assert len(again.entries) == 1
    flat = "".join(
        " " if ch in "\u2028\u2029" or unicodedata.category(ch) in ("Cc", "Cf") else ch
        for ch in text
    )
    assert again.entries[0].witnesses == flat.strip()
    assert written.count(BEGIN) == 1 and written.count(END) == 1
    section = written.split(BEGIN + "\n")[1].split(END)[0]
    assert len(section.splitlines()) == 3  # header, rule, the entry: one line whatever it held
    markdown_ok(section, mentions=True)


# -- the terminal: rich markup is never read from data -----------------------------------


@pytest.mark.parametrize("colour", [False, True])
def test_terminal_tables_and_lines_show_markup_and_escapes_as_text(colour: bool) -> None:
    from forktool.report.table import new_table

    out, buffer = _outputs(colour=colour)
    table = new_table("patch", "subject")
    table.add_row("a[/b]fork.patch", "Submitted [oe-core@lists.openembedded.org] \x1b]8;;x\x07")
    table.add_row(Text("x\x1b[2J", style="red"), "[bold]b[/bold]")
    out.print(table)
    out.print("Upstream-Status: Inappropriate [/usr/lib paths]")
    out.result(Text("done \x1b[31m[/]", style="green"))
    out.warn("warned \x1b[31m")
    shown = buffer.getvalue()
    terminal_ok(shown, colour=colour)
    plain = shown if not colour else __import__("re").sub(r"\x1b\[[0-9;]*m", "", shown)
    for piece in (
        "a[/b]fork.patch",
        "Submitted [oe-core@lists.openembedded.org] \\x1b]8;;x\\x07",
        "x\\x1b[2J",
        "[bold]b[/bold]",
        "Inappropriate [/usr/lib paths]",
        "done \\x1b[31m[/]",
        "warning: warned \\x1b[31m",
    ):
        assert piece in plain
    if colour:
        assert "\x1b[32m" in shown  # forktool's own styles still colour


def test_a_styled_text_keeps_its_styles_around_an_escaped_character() -> None:
    from forktool.console import safe_text

    text = Text("ok ")
    text.append("bad\x1b[31m", style="red")
    text.append(" end", style="bold")
    made = safe_text(text)
    assert made.plain == "ok bad\\x1b[31m end"
    styles = {made.plain[s.start : s.end]: str(s.style) for s in made.spans}
    assert styles == {"bad": "red", "\\x1b": "red", "[31m": "red", " end": "bold"}


def test_a_progress_bar_shows_a_step_named_with_markup_and_escapes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import time

    from forktool import output

    monkeypatch.setattr(output, "PROGRESS_DELAY_SECONDS", 0.0)
    out, buffer = _outputs(colour=True)
    with out.steps(2, "verify") as start:
        start("a[/b]fork.patch")
        time.sleep(0.3)
        start("b\x1b]8;;x\x07.patch")
        time.sleep(0.3)
    shown = buffer.getvalue()
    assert "verify: a[/b]fork.patch" in shown
    assert "verify: b\\x1b]8;;x\\x07.patch" in shown
    assert "\x1b]8" not in shown and "\x07" not in shown


@pytest.mark.parametrize("text", ["0", "7", "123456789", "\xa0", "a\xa0", "\xa0a", " 0", "\u2003"])
def test_markdown_text_that_a_following_dot_or_trimming_would_change(text: str) -> None:
    """Found by the property test above: digits alone become an ordered list once the
    caller writes a '.' after them, and markdown trims no-break spaces at the ends."""
    item = MARKDOWN.render("- " + md_text(text) + ".")
    assert _one_paragraph_text(item, "<ul>\n<li>", "</li>\n</ul>\n") == _md_expected(text) + "."
