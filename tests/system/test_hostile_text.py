"""Every command, in every format, on a fixture upstream whose commit subjects, author
names, patch names and patch headers are hostile: rich markup (``[/b]``), ANSI and
OSC 8 sequences, ``<!--<script>``, ``<img>``, ``@mentions``, ``|``, backticks,
``%0A::error::`` and characters XML forbids. Each output must stay data in its medium
(tests/testing/media_checks.py) and no command may crash."""

from __future__ import annotations

from pathlib import Path

import pytest
from testing.helpers import CliResult, make_patch, run_cli
from testing.media_checks import github_ok, html_ok, markdown_ok, terminal_ok, xml_ok

from forktool.builder import RepoBuilder
from forktool.model.record import BEGIN, END, section_state

MARKUP = "Fix [/b] parser [bold]crash[/bold] Submitted [oe-core@lists.openembedded.org]"
ANSI = "Speed \x1b[31mred\x1b[0m up \x1b]8;;https://evil.example/\x07click\x1b]8;;\x07 (#42)"
HTML = "config: handle <!--<script> in templates </table><img src=x onerror=alert(1)> @octocat"
MISC = "a|b `tick` %0A::error::forged \x01\x0b\x1f ![i](https://evil.example/i.png)"
AUTHOR = "Eve [/b] \x1b[1mBold\x1b[0m @octocat <eve@example.org>"

P1 = "0001-a[/b]fork.patch"
P2 = "0002-b<img>`x`|y.patch"
P3 = "0003-c%0A::error::[bold].patch"

FILES = {n: "".join(f"{n}{i}\n" for i in range(1, 21)) for n in ("a", "b", "c")}


def _edit(text: str, old: str, new: str) -> str:
    assert old + "\n" in text
    return text.replace(old + "\n", new + "\n", 1)


def _header(patch: bytes, line: str) -> bytes:
    """``patch`` with ``line`` added to its message (a Yocto header)."""
    return patch.replace(b"\n\n", b"\n\n" + line.encode() + b"\n", 1)


@pytest.fixture
def hostile_fork(tmp_path: Path) -> RepoBuilder:
    upstream = RepoBuilder.init(tmp_path / "upstream")
    upstream.commit("import\n", FILES)
    upstream.tag("v1")
    fix = upstream.commit(
        MARKUP + "\n", {"a": _edit(FILES["a"], "a10", "A10 fixed")}, author=AUTHOR
    )
    upstream.commit(HTML + "\n", {"b": _edit(FILES["b"], "b9", "b9 reworked")}, author=AUTHOR)
    upstream.commit(ANSI + "\n", {"c": _edit(FILES["c"], "c5", "C5 pending")}, author=AUTHOR)
    upstream.commit(MISC + "\n", {"c": _edit(upstream.read("c"), "c20", "c20 up")})
    upstream.tag("v2")
    fork = RepoBuilder.clone(upstream.path, tmp_path / "fork")
    fork.branch("fork-history", "v1")
    fork.checkout("fork-history")
    fork.commit("Fork: \x1b[31mred\x1b[0m \x01\x08 control <!--\n", {"a": FILES["a"] + "x\n"})
    fork.checkout("main")
    patches = {
        P1: make_patch(fork, "v1", {"a": _edit(FILES["a"], "a10", "A10 fixed")}, "Fix a [/b]"),
        P2: _header(
            make_patch(fork, "v1", {"b": _edit(FILES["b"], "b10", "B10 fork")}, "Tweak b"),
            "Upstream-Status: Inappropriate [/usr/lib paths [/b] <!--<script>]",
        ),
        P3: _header(
            make_patch(fork, "v1", {"c": _edit(FILES["c"], "c5", "C5 pending")}, "Pending c"),
            "Upstream-Status: Submitted [oe-core@lists.openembedded.org]",
        ),
    }
    files: dict[str, str | bytes | None] = {f"patches/{n}": data for n, data in patches.items()}
    files["series"] = "".join(f"{n}\n" for n in patches)
    files["upstream.map"] = (
        f"{P1} {fix}\n{P2} none\n{P3} pending https://github.com/acme/app/pull/42\n"
    )
    files["forktool.yaml"] = (
        f"upstream:\n  remote: origin\n  url: https://github.com/acme/app.git\npin:\n  tag: v1\n  commit: {fork.rev('v1')}\n"
        "history:\n  branch: fork-history\n"
    )
    files["FORK.md"] = "# Fork notes\n"
    fork.commit("Add the fork's files\n", files)
    return fork


def _run(fork: RepoBuilder, *args: str) -> CliResult:
    result = run_cli("-C", fork.path, *args)
    assert result.code in (0, 1, 3, 4), (args, result.code, result.err)
    assert "Traceback" not in result.err + result.out
    terminal_ok(result.err)
    return result


TEXT_AND_JSON = [
    ("status",),
    ("verify",),
    ("absorbed", "--tag", "v2"),
    ("forecast", "--no-fetch"),
    ("check",),
    ("check-history", "fork-history"),
    ("fmt", "--check"),
    ("upstream", "resolve", "--no-fetch"),
    ("map", "suggest"),
    ("sync", "v2", "--dry-run"),
    ("align",),
    ("pin", "show"),
    ("pin", "check"),
    ("upstream", "poll", "--no-fetch"),
]


@pytest.mark.parametrize("args", TEXT_AND_JSON, ids=[" ".join(a) for a in TEXT_AND_JSON])
def test_text_and_json_keep_hostile_upstream_text_as_data(
    hostile_fork: RepoBuilder, args: tuple[str, ...]
) -> None:
    text = _run(hostile_fork, *args)
    terminal_ok(text.out)
    data = _run(hostile_fork, *args, "--format", "json").json()
    assert isinstance(data, dict)


def test_the_bracketed_part_of_a_header_is_shown(
    hostile_fork: RepoBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # one line per row: the cells read whole
    shown = _run(hostile_fork, "map", "suggest").out
    assert "[oe-core@lists.openembedded.org]" in " ".join(shown.split())
    assert "[/usr/lib paths [/b] <!--<script>]" in " ".join(shown.split())


def test_a_squash_subject_with_markup_resolves_and_is_shown(hostile_fork: RepoBuilder) -> None:
    shown = _run(hostile_fork, "upstream", "resolve", "--no-fetch").out
    assert "\\x1b[31mred" in shown and "(#42)" in shown
    data = _run(hostile_fork, "upstream", "resolve", "--no-fetch", "--format", "json").json()
    assert [p["subject"] for p in data["patches"]] == [ANSI]  # type: ignore[index]


def test_patch_names_with_markup_are_shown_whole(hostile_fork: RepoBuilder) -> None:
    shown = _run(hostile_fork, "status").out
    for name in (P1, P2, P3):
        assert name in shown


def test_forecast_page_markdown_and_json_keep_hostile_subjects(hostile_fork: RepoBuilder) -> None:
    data = _run(hostile_fork, "forecast", "--no-fetch", "--format", "json").json()
    page = _run(hostile_fork, "forecast", "--no-fetch", "--format", "html").out
    assert html_ok(page) == data
    subjects = {
        cell["first_break"]["subject"]  # type: ignore[index]
        for row in data["patches"]  # type: ignore[attr-defined]
        for cell in row["cells"]
        if cell["first_break"]
    }
    assert subjects == {HTML}
    markdown_ok(_run(hostile_fork, "forecast", "--no-fetch", "--format", "markdown").out)


def test_check_junit_github_and_markdown_stay_well_formed(hostile_fork: RepoBuilder) -> None:
    data = _run(hostile_fork, "check", "--format", "json").json()
    findings = sum(len(c["findings"]) for c in data["checks"])  # type: ignore[attr-defined]
    history = next(c for c in data["checks"] if c["id"] == "history")  # type: ignore[attr-defined]
    assert history["findings"], "the history commit breaks the contract: a finding quotes it"
    suites = xml_ok(_run(hostile_fork, "check", "--format", "junit").out)
    assert suites.find(".//testcase[@name='history']/failure") is not None
    github_ok(_run(hostile_fork, "check", "--format", "github").out, findings)
    markdown_ok(_run(hostile_fork, "check", "--format", "markdown").out)


def test_sync_report_markdown_keeps_hostile_text_as_data(
    hostile_fork: RepoBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Sync Bot [/b] \x1b[31m")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "sync@fork.example")
    markdown_ok(_run(hostile_fork, "sync", "v2", "--dry-run", "--format", "markdown").out)
    stopped = run_cli("-C", hostile_fork.path, "sync", "v2", "--no-fetch", "--format", "markdown")
    assert "Traceback" not in stopped.err + stopped.out
    # Upstream's hostile commit made one patch's change: refresh's 3-way merge finds it
    # already there, and the sync refuses before it starts (retire it first), naming the
    # patch in a terminal-safe line; nothing is left to abort.
    assert stopped.code == 2, stopped.out
    terminal_ok(stopped.err)
    assert "already" in stopped.err and "retire" in stopped.err


def test_retirement_record_row_keeps_a_hostile_patch_name(hostile_fork: RepoBuilder) -> None:
    reason = "upstream [/b] <!-- forktool:retirement-record:end --> | \x1b[31m ![i](x) \x1c"
    retired = _run(hostile_fork, "retire", P1, "--tag", "v2", "--force", "--reason", reason)
    assert retired.code == 0, retired.out
    record = (hostile_fork.path / "FORK.md").read_text()
    assert record.count(BEGIN) == 1 and record.count(END) == 1
    assert section_state(record) == "ok"
    markdown_ok(record.split(BEGIN)[1].split(END)[0], mentions=True)
    hostile_fork.commit("Retire\n", {})
    again = _run(hostile_fork, "retire", "--undo", P1, "--reason", reason, "--format", "json")
    assert again.code == 0, again.out


def test_init_from_quilt_with_yocto_headers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "400")
    upstream = RepoBuilder.init(tmp_path / "proj")
    upstream.commit("import\n", FILES)
    upstream.tag("v1")
    quilt = tmp_path / "proj" / "debian" / "patches"
    quilt.mkdir(parents=True)
    patch = make_patch(upstream, "v1", {"a": _edit(FILES["a"], "a3", "A3")}, "Fix a")
    (quilt / "a[").mkdir()
    (quilt / "a[/b]fork.patch").write_bytes(
        _header(patch, "Upstream-Status: Inappropriate [/usr/lib paths [/b]]")
    )
    (quilt / "series").write_text("a[/b]fork.patch\n")
    result = run_cli("-C", upstream.path, "init", "--pin", "v1", "--from-quilt", "debian/patches")
    assert "Traceback" not in result.err
    assert result.code == 0, result.err
    assert "[/usr/lib paths [/b]]" in " ".join(result.out.split())
    terminal_ok(result.out)


def test_a_history_subject_shows_every_control_character(hostile_fork: RepoBuilder) -> None:
    shown = _run(hostile_fork, "check-history", "fork-history").out
    assert "Fork: \\x1b[31mred\\x1b[0m \\x01\\x08 control <!--" in shown


def test_json_carries_hostile_text_unchanged(hostile_fork: RepoBuilder) -> None:
    status = _run(hostile_fork, "status", "--format", "json").json()
    assert [p["patch"] for p in status["patches"]] == [P1, P2, P3]  # type: ignore[attr-defined]
    suggest = _run(hostile_fork, "map", "suggest", "--format", "json").json()
    sources = {s["patch"]: s["source"] for s in suggest["suggestions"]}  # type: ignore[attr-defined]
    assert sources[P3] == "Upstream-Status: Submitted [oe-core@lists.openembedded.org]"
    history = _run(hostile_fork, "check-history", "fork-history", "--format", "json").json()
    subjects = [c["subject"] for c in history["commits"]]  # type: ignore[attr-defined]
    assert subjects == ["Fork: \x1b[31mred\x1b[0m \x01\x08 control <!--"]


def test_refresh_stopped_by_a_hostile_commit_shows_it_as_data(hostile_fork: RepoBuilder) -> None:
    stopped = _run(hostile_fork, "refresh", "--onto", "v2")
    assert stopped.code == 1
    terminal_ok(stopped.out)
    assert P2 in stopped.out, stopped.out
    again = _run(hostile_fork, "refresh", "--onto", "v2", "--format", "json").json()
    assert [e["patch"] for e in again["patches"]][:2] == [P1, P2]  # type: ignore[index]
