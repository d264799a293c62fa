"""forecast: the matrix of verdicts, cumulative applies and first breaks, on fixture
histories built with the repository builder.

The main history (``forecast_fork``), after the pin v1.0.0::

    c1  b.txt line 1              (touches b.txt: 1 of 5)
    c2  c.txt line 20
    c3  b.txt line 20             (2 of 5)
        -> v1.0.1
    X   a.txt: 0001's fix, upstream's commit it is mapped to
    c4  b.txt line 9: 0002's context changes   (3 of 5: the break)
    c5  b.txt line 2              (4 of 5)
    c6  b.txt line 19             (5 of 5)
        -> v1.1.0

Series: 0001 (mapped to X), 0002 (fork-only, b.txt line 10), 0003 (pending PR,
c.txt), 0004 (fork-only, d.txt).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pytest
from testing.helpers import MiniFork, make_patch, snapshot_tree

from forktool.builder import RepoBuilder


def lines(name: str, count: int = 20) -> str:
    return "".join(f"{name}{i}\n" for i in range(1, count + 1))


def edit(text: str, old: str, new: str) -> str:
    assert old + "\n" in text
    return text.replace(old + "\n", new + "\n", 1)


FILES = {n: lines(n) for n in ("a", "b", "c", "d")}
PR = "https://github.com/acme/app/pull/41"


def _change(repo: RepoBuilder, path: str, old: str, new: str, subject: str) -> str:
    return repo.commit(subject + "\n", {path: edit(repo.read(path), old, new)})


def write_series(repo: RepoBuilder, base: str, x: str, pin: str = "v1.0.0") -> MiniFork:
    base_files = {n: repo.git.blob(base, n).decode() for n in ("a", "b", "c", "d")}  # type: ignore[union-attr]
    patches = {
        "0001-fix-a.patch": make_patch(
            repo, base, {"a": edit(base_files["a"], "a10", "A10 fixed")}, "Fix a"
        ),
        "0002-tweak-b.patch": make_patch(
            repo, base, {"b": edit(base_files["b"], "b10", "B10 tweaked")}, "Tweak b"
        ),
        "0003-pending-c.patch": make_patch(
            repo, base, {"c": edit(base_files["c"], "c5", "C5 pending")}, "Pending c"
        ),
        "0004-fork-d.patch": make_patch(
            repo, base, {"d": edit(base_files["d"], "d5", "D5 fork")}, "Fork d"
        ),
    }
    fork = MiniFork(repo, pin)
    fork.write(patches, commits={"0001-fix-a.patch": x})
    umap = (repo.path / "upstream.map").read_text()
    umap = umap.replace("0003-pending-c.patch none", f"0003-pending-c.patch pending {PR}")
    (repo.path / "upstream.map").write_text(umap)
    return fork


@pytest.fixture
def forecast_fork(builder: RepoBuilder) -> tuple[MiniFork, dict[str, str]]:
    repo = builder
    repo.commit("import\n", FILES)
    repo.tag("v1.0.0")
    c = {}
    c["c1"] = _change(repo, "b", "b1", "b1 upstream", "Touch b line 1")
    c["c2"] = _change(repo, "c", "c20", "c20 upstream", "Touch c line 20")
    c["c3"] = _change(repo, "b", "b20", "b20 upstream", "Touch b line 20")
    repo.tag("v1.0.1")
    c["x"] = _change(repo, "a", "a10", "A10 fixed", "Fix a upstream (#12)")
    c["c4"] = repo.commit(
        "Rework b around line 9 (#13)\n",
        {"b": edit(repo.read("b"), "b9", "b9 reworked")},
        author="Bea Breaker <bea@example.org>",
    )
    c["c5"] = _change(repo, "b", "b2", "b2 upstream", "Touch b line 2")
    c["c6"] = _change(repo, "b", "b19", "b19 upstream", "Touch b line 19")
    repo.tag("v1.1.0")
    return write_series(repo, repo.rev("v1.0.0"), c["x"]), c


def _cells(data: dict[str, object]) -> dict[tuple[str, str], dict[str, object]]:
    found = {}
    for row in data["patches"]:  # type: ignore[attr-defined]
        for cell in row["cells"]:
            found[(row["patch"], cell["ref"])] = cell
    return found


def test_forecast_matrix_verdicts_applies_and_the_first_break(forecast_fork) -> None:
    fork, c = forecast_fork
    res = fork.cli("forecast", "--no-fetch", "--format", "json")
    assert res.code == 0, res.err
    data = res.json()
    assert data["pin"] == "v1.0.0"
    assert data["targets"] == [
        {"ref": "v1.0.1", "commit": fork.repo.rev("v1.0.1")},
        {"ref": "v1.1.0", "commit": fork.repo.rev("v1.1.0")},
    ]
    cells = _cells(data)
    shape = {k: (v["verdict"], v["apply"]) for k, v in cells.items()}
    assert shape == {
        ("0001-fix-a.patch", "v1.0.1"): ("keep", "exact"),
        ("0002-tweak-b.patch", "v1.0.1"): ("fork-only", "exact"),
        ("0003-pending-c.patch", "v1.0.1"): ("pending", "exact"),
        ("0004-fork-d.patch", "v1.0.1"): ("fork-only", "exact"),
        ("0001-fix-a.patch", "v1.1.0"): ("retire", "absorbed"),
        ("0002-tweak-b.patch", "v1.1.0"): ("fork-only", "conflict"),
        ("0003-pending-c.patch", "v1.1.0"): ("pending", "not-tried"),
        ("0004-fork-d.patch", "v1.1.0"): ("fork-only", "not-tried"),
    }
    first = cells[("0002-tweak-b.patch", "v1.1.0")]["first_break"]
    assert first == {
        "commit": c["c4"],
        "subject": "Rework b around line 9 (#13)",
        "author": "Bea Breaker <bea@example.org>",
        "date": first["date"],  # type: ignore[index]
        "pr": "#13",
        "checks": first["checks"],  # type: ignore[index]
        "touching": 5,
    }
    assert first["checks"] <= math.ceil(math.log2(5)) + 2  # type: ignore[index,operator]
    assert all(
        v["first_break"] is None for k, v in cells.items() if k != ("0002-tweak-b.patch", "v1.1.0")
    )


def test_forecast_verdicts_are_what_absorbed_says(forecast_fork) -> None:
    fork, _ = forecast_fork
    cells = _cells(fork.cli("forecast", "--no-fetch", "--format", "json").json())
    for tag in ("v1.0.1", "v1.1.0"):
        absorbed = fork.cli("absorbed", "--tag", tag, "--format", "json").json()
        for patch in absorbed["patches"]:  # type: ignore[attr-defined]
            cell = cells[(patch["patch"], tag)]
            assert (cell["verdict"], cell["reason"]) == (patch["verdict"], patch["reason"])


def test_forecast_branch_head_and_explicit_tags(forecast_fork) -> None:
    fork, c = forecast_fork
    fork.repo.commit("Later work on main\n", {"e": "e\n"})
    res = fork.cli(
        "forecast", "--no-fetch", "--tags", "v1.1.0", "--branch", "main", "--format", "json"
    )
    assert res.code == 0, res.err
    data = res.json()
    assert [t["ref"] for t in data["targets"]] == ["v1.1.0", "main"]  # type: ignore[attr-defined]
    cells = _cells(data)
    assert cells[("0002-tweak-b.patch", "main")]["first_break"]["commit"] == c["c4"]  # type: ignore[index]


def test_forecast_from_a_pin_on_a_release_branch_starts_at_the_branch_point(
    builder: RepoBuilder,
) -> None:
    repo = builder
    repo.commit("import\n", FILES)
    point = repo.rev("HEAD")
    repo.branch("release-1.0")
    repo.checkout("release-1.0")
    repo.commit(
        "Backport a fix to d (cherry picked)\n", {"d": edit(repo.read("d"), "d20", "d20 bp")}
    )
    repo.tag("v1.0.1")
    repo.checkout("main")
    breaker = None
    for n, line in enumerate(("b1", "b20", "b9", "b2", "b19"), start=1):
        sha = _change(repo, "b", line, f"{line} main", f"Touch b {line} ({n})")
        if line == "b9":
            breaker = sha
        repo.commit(f"Unrelated {n}\n", {"e": f"{n}\n"})
    repo.tag("v1.1.0")
    fork = write_series(repo, repo.rev("v1.0.1"), point, pin="v1.0.1")
    # 0001 is mapped to the branch point (an ancestor of both): retire on v1.1.0.
    data = fork.cli("forecast", "--no-fetch", "--format", "json").json()
    cells = _cells(data)
    first = cells[("0002-tweak-b.patch", "v1.1.0")]["first_break"]
    assert first is not None and first["commit"] == breaker  # type: ignore[index]
    assert first["touching"] == 5  # type: ignore[index]
    del point


def test_forecast_with_nothing_newer_says_so(builder: RepoBuilder) -> None:
    repo = builder
    repo.commit("import\n", FILES)
    repo.tag("v1.0.0")
    fork = write_series(repo, repo.rev("v1.0.0"), repo.rev("v1.0.0"))
    res = fork.cli("forecast", "--no-fetch")
    assert res.code == 0, res.err
    assert "nothing to forecast: no release newer than v1.0.0" in res.out
    assert fork.cli("forecast", "--no-fetch", "--format", "json").json()["targets"] == []


def test_forecast_text_summary_lines(forecast_fork) -> None:
    fork, c = forecast_fork
    res = fork.cli("forecast", "--no-fetch")
    assert res.code == 0, res.err
    assert "v1.0.1: retires 0, breaks 0, 4 carry over" in res.out
    assert (
        f"v1.1.0: retires 1, breaks 1 (0002-tweak-b.patch, first broken by {c['c4'][:7]} "
        "'Rework b around line 9 (#13)'), 0 carry over, 2 not tried"
    ) in res.out
    assert "legend:" in res.out


def test_forecast_markdown_for_a_job_summary(forecast_fork) -> None:
    fork, c = forecast_fork
    res = fork.cli("forecast", "--no-fetch", "--format", "markdown")
    assert res.code == 0, res.err
    lines = res.out.splitlines()
    assert lines[0] == "## Forecast from v1.0.0"
    assert "| patch | v1.0.1 | v1.1.0 |" in lines
    row = next(line for line in lines if line.startswith("| `0002-tweak-b.patch`"))
    assert row == (
        f"| `0002-tweak-b.patch` | ✅ fork-only / exact | ❌ fork-only / conflict "
        f"(first broken by `{c['c4'][:7]}`) |"
    )


class _Matrix(HTMLParser):
    """What a browser would see: cells, their details, and anything loaded from outside."""

    def __init__(self) -> None:
        super().__init__()
        self.cells: list[dict[str, str | None]] = []
        self.external: list[str] = []
        self.scripts = 0
        self.in_json = False
        self.json = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        for key in ("src", "href"):
            if found.get(key):
                self.external.append(f"{tag} {key}={found[key]}")
        if tag == "link":
            self.external.append("link")
        if tag == "td" and "cell" in (found.get("class") or ""):
            self.cells.append(found)
        if tag == "script":
            self.scripts += 1
            self.in_json = found.get("type") == "application/json"

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self.in_json = False

    def handle_data(self, data: str) -> None:
        if self.in_json:
            self.json += data


def test_forecast_html_is_one_self_contained_file(forecast_fork) -> None:
    fork, c = forecast_fork
    res = fork.cli("forecast", "--no-fetch", "--format", "html")
    assert res.code == 0, res.err
    page = _Matrix()
    page.feed(res.out)
    page.close()
    assert res.out.startswith("<!DOCTYPE html>")
    assert page.external == []
    assert len(page.cells) == 8
    broken = [cell for cell in page.cells if "conflict" in (cell.get("class") or "")]
    assert len(broken) == 1
    details = broken[0]["data-details"] or ""
    assert f"first broken by {c['c4']} 'Rework b around line 9 (#13)'" in details
    assert json.loads(page.json)["pin"] == "v1.0.0"


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _browser_dom(page: Path, tmp_path: Path) -> str:
    """Render ``page`` in headless Chromium: check a screenshot is drawn and return the
    DOM after the page's script ran."""
    browser = _chromium()
    if browser is None:
        if os.environ.get("CI"):
            pytest.fail("CI installs chromium (.ci/run): the browser check must run there")
        pytest.skip("no chromium here (apt-get install chromium)")
    shot = tmp_path / "forecast.png"
    common = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1000,700"]
    # Chromium puts its singleton socket under TMPDIR: a test's deep temp path is
    # longer than a unix socket path may be, so give it a short private one.
    short_tmp = tempfile.mkdtemp(prefix="ft-", dir="/tmp")
    try:
        env = {**os.environ, "HOME": str(tmp_path), "TMPDIR": short_tmp}
        subprocess.run(
            [*common, f"--screenshot={shot}", page.as_uri()],
            check=True,
            capture_output=True,
            timeout=120,
            env=env,
        )
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        return subprocess.run(
            [*common, "--dump-dom", page.as_uri()],
            check=True,
            capture_output=True,
            timeout=120,
            env=env,
            text=True,
        ).stdout
    finally:
        shutil.rmtree(short_tmp, ignore_errors=True)


def test_forecast_html_renders_in_a_headless_browser(forecast_fork, tmp_path: Path) -> None:
    fork, c = forecast_fork
    page = tmp_path / "forecast.html"
    page.write_text(fork.cli("forecast", "--no-fetch", "--format", "html").out)
    dom = _browser_dom(page, tmp_path)
    assert dom.count('class="cell apply-') == 8
    assert "Hover or click a cell for its details." in dom
    assert '<body data-patches="4">' in dom  # the script ran and read the embedded JSON
    del c


HOSTILE_SUBJECT = (
    "config: handle <!--<script> in templates </script><img src=x "
    "onerror=\"document.title='pwned'\"> & </table> @octocat \x1b[31m"
)


def test_forecast_html_with_hostile_subjects_runs_its_script_in_a_browser(
    builder: RepoBuilder, tmp_path: Path
) -> None:
    repo = builder
    repo.commit("import\n", FILES)
    repo.tag("v1.0.0")
    x = _change(repo, "a", "a10", "A10 fixed", "Fix a <!--<script> (#12)")
    breaker = repo.commit(
        HOSTILE_SUBJECT + "\n",
        {"b": edit(repo.read("b"), "b9", "b9 reworked")},
        author="Eve \"' & [/b] @octocat <eve@example.org>",
    )
    repo.tag("v1.1.0")
    fork = write_series(repo, repo.rev("v1.0.0"), x)
    out = fork.cli("forecast", "--no-fetch", "--format", "html").out
    page = tmp_path / "forecast.html"
    page.write_text(out)
    dom = _browser_dom(page, tmp_path)
    assert '<body data-patches="4">' in dom  # the script ran and parsed the embedded JSON
    assert "<title>forktool forecast from v1.0.0</title>" in dom  # onerror never ran
    assert "<img" not in dom and dom.count("<script") == 2
    data = json.loads(fork.cli("forecast", "--no-fetch", "--format", "json").out)
    first = next(
        cell["first_break"]
        for row in data["patches"]
        for cell in row["cells"]
        if cell["first_break"]
    )
    assert first["commit"] == breaker and first["subject"] == HOSTILE_SUBJECT
    page_parser = _Matrix()
    page_parser.feed(out)
    assert json.loads(page_parser.json) == data
    broken = next(cell for cell in page_parser.cells if "conflict" in (cell.get("class") or ""))
    assert "</script><img src=x" in (broken["data-details"] or "")


def test_forecast_names_the_commit_that_moved_a_patch_to_an_offset(builder: RepoBuilder) -> None:
    repo = builder
    repo.commit("import\n", FILES)
    repo.tag("v1.0.0")
    _change(repo, "b", "b20", "b20 upstream", "Touch b line 20")
    mover = repo.commit("Add a header to b (#7)\n", {"b": "header\n" + repo.read("b")})
    _change(repo, "b", "b1", "b1 upstream", "Touch b line 1")
    repo.tag("v1.1.0")
    fork = write_series(repo, repo.rev("v1.0.0"), repo.rev("v1.0.0"))
    cells = _cells(fork.cli("forecast", "--no-fetch", "--format", "json").json())
    cell = cells[("0002-tweak-b.patch", "v1.1.0")]
    assert cell["apply"] == "offset"
    assert "applies only at offset +1" in str(cell["message"])
    assert cell["first_break"]["commit"] == mover  # type: ignore[index]
    assert cell["first_break"]["pr"] == "#7"  # type: ignore[index]
    # An offset is not a conflict: the patches after it are still tried.
    assert cells[("0003-pending-c.patch", "v1.1.0")]["apply"] == "exact"


def test_forecast_refuses_an_unknown_tag(forecast_fork) -> None:
    fork, _ = forecast_fork
    res = fork.cli("forecast", "--no-fetch", "--tags", "v1.0.1,v9.9.9")
    assert res.code == 2
    assert res.error_lines[0] == "error: unknown tag 'v9.9.9'"


def test_forecast_without_fetch_leaves_the_repository_byte_identical(forecast_fork) -> None:
    fork, _ = forecast_fork
    before = snapshot_tree(fork.root)
    for fmt in ("text", "json", "markdown", "html"):
        assert fork.cli("forecast", "--no-fetch", "--branch", "main", "--format", fmt).code == 0
    assert snapshot_tree(fork.root) == before


def test_forecast_json_keeps_the_documented_shape(forecast_fork) -> None:
    from testing.contract_shapes import assert_contract

    fork, _ = forecast_fork
    res = fork.cli("forecast", "--no-fetch", "--format", "json")
    assert res.code == 0, res.err
    data = res.json()
    assert any(c["first_break"] for row in data["patches"] for c in row["cells"])
    assert_contract("forecast", data)


def test_forecast_text_keeps_a_long_patch_name_whole_in_piped_output(
    builder: RepoBuilder,
) -> None:
    """Six releases and a real format-patch name: the name stays copyable on one line."""
    builder.commit("import\n", FILES)
    builder.tag("v1.0.0")
    name = "0001-Fix-handling-of-options-which-set-both-is_flag-False.patch"
    patch = make_patch(builder, "v1.0.0", {"d": edit(FILES["d"], "d5", "D5 fork")}, "Fork d")
    for minor in range(1, 7):
        builder.commit(f"release {minor}\n", {"c": lines("c", 20 + minor)})
        builder.tag(f"v1.0.{minor}")
    fork = MiniFork(builder, "v1.0.0")
    fork.write({name: patch})
    res = fork.cli("forecast", "--no-fetch")
    assert res.code == 0, res.err
    row = next(line for line in res.out.splitlines() if line.startswith("0001-"))
    assert row.split() == [name, *["fork-only", "/", "exact"] * 6]


def test_forecast_keep_going_applies_the_rest_without_the_conflict(forecast_fork) -> None:
    fork, _ = forecast_fork
    res = fork.cli("forecast", "--no-fetch", "--keep-going", "--format", "json")
    assert res.code == 0, res.err
    cells = _cells(res.json())
    shape = {k: (v["apply"], v.get("without")) for k, v in cells.items() if k[1] == "v1.1.0"}
    assert shape == {
        ("0001-fix-a.patch", "v1.1.0"): ("absorbed", None),
        ("0002-tweak-b.patch", "v1.1.0"): ("conflict", None),
        ("0003-pending-c.patch", "v1.1.0"): ("exact", ["0002-tweak-b.patch"]),
        ("0004-fork-d.patch", "v1.1.0"): ("exact", ["0002-tweak-b.patch"]),
    }
    # A target with no conflict: the same cells as without the flag.
    plain = _cells(fork.cli("forecast", "--no-fetch", "--format", "json").json())
    assert {k: v for k, v in cells.items() if k[1] == "v1.0.1"} == {
        k: v for k, v in plain.items() if k[1] == "v1.0.1"
    }


def test_forecast_reads_a_hunk_moved_from_the_top_as_verify_does(builder: RepoBuilder) -> None:
    """A patch whose hunk starts at line 1, on a tag that added a line above it (Debian's
    bluez): git alone holds such a hunk to the top, GNU patch finds it a line lower.
    The forecast says offset, as verify does, and goes on with the series."""
    repo = builder
    repo.commit("import\n", FILES)
    repo.tag("v1.0.0")
    repo.commit("Add a licence line to b (#8)\n", {"b": "licence\n" + repo.read("b")})
    repo.tag("v1.1.0")
    top = make_patch(repo, "v1.0.0", {"b": edit(FILES["b"], "b4", "B4 tweaked")}, "Tweak b")
    assert b"@@ -1,7 +1,7 @@" in top
    fork = write_series(repo, repo.rev("v1.0.0"), repo.rev("v1.0.0"))
    (repo.path / "patches" / "0002-tweak-b.patch").write_bytes(top)
    cells = _cells(fork.cli("forecast", "--no-fetch", "--format", "json").json())
    cell = cells[("0002-tweak-b.patch", "v1.1.0")]
    assert cell["apply"] == "offset", cell
    assert "applies only at offset +1" in str(cell["message"])
    assert cells[("0003-pending-c.patch", "v1.1.0")]["apply"] == "exact"
    verify = fork.cli("verify", "--base", "v1.1.0", "--allow-offset", "--format", "json").json()
    statuses = {p["patch"]: p["status"] for p in verify["patches"]}
    assert statuses["0002-tweak-b.patch"] == "offset" and verify["ok"] is True


def test_forecast_says_a_conflict_applies_with_fuzz_as_verify_does(builder: RepoBuilder) -> None:
    """A tag that edited the first context line of a hunk: GNU patch places it with
    fuzz, git refuses it. The cell is a conflict (a refresh must rebase it), and its
    message says fuzz, as verify's does, not that its lines are not there (Debian's
    curl onto trixie: CVE-2026-3783.patch)."""
    repo = builder
    repo.commit("import\n", FILES)
    repo.tag("v1.0.0")
    _change(repo, "c", "c2", "c2 upstream", "Touch c line 2")
    repo.tag("v1.1.0")
    fork = write_series(repo, repo.rev("v1.0.0"), repo.rev("v1.0.0"))
    cells = _cells(fork.cli("forecast", "--no-fetch", "--format", "json").json())
    cell = cells[("0003-pending-c.patch", "v1.1.0")]
    assert cell["apply"] == "conflict"
    said = "c: hunk 1 applies only with reduced context (fuzz) on v1.1.0"
    assert str(cell["message"]).startswith(said)
    verify = fork.cli("verify", "--base", "v1.1.0", "--format", "json").json()
    (fuzzy,) = [p for p in verify["patches"] if p["status"] == "fuzz"]
    assert str(fuzzy["message"]).startswith(said)


def test_forecast_says_a_pending_patch_the_target_carries_is_already_applied(
    builder: RepoBuilder,
) -> None:
    """A pending patch whose change the target already has (it reverse-applies exactly)
    is a conflict, as a refresh says, and its message says why: "already applied", not
    that its lines are not there. The first break names the commit that brought it."""
    repo = builder
    repo.commit("import\n", FILES)
    repo.tag("v1.0.0")
    took = _change(repo, "c", "c5", "C5 pending", "Take the pending fix for c (#41)")
    repo.tag("v1.1.0")
    fork = write_series(repo, repo.rev("v1.0.0"), repo.rev("v1.0.0"))
    cells = _cells(fork.cli("forecast", "--no-fetch", "--format", "json").json())
    cell = cells[("0003-pending-c.patch", "v1.1.0")]
    assert cell["verdict"] == "pending" and cell["apply"] == "conflict"
    assert cell["message"] == (
        "already applied: the change is present on v1.1.0 (it reverse-applies exactly)"
    )
    assert cell["first_break"]["commit"] == took  # type: ignore[index]
    (summary,) = fork.cli("forecast", "--no-fetch", "--format", "json").json()["summary"]  # type: ignore[misc]
    assert summary["already_applied"] == ["0003-pending-c.patch"]
    text = fork.cli("forecast", "--no-fetch").out
    assert f"0003-pending-c.patch, already there since {took[:7]} 'Take the pending" in text


def test_the_summary_line_names_a_break_the_target_already_carries() -> None:
    """With or without the commit that brought it, a patch the target already has is
    said to be already applied, not left to read as a plain break."""
    from forktool.engine.upstream.forecast import TargetSummary
    from forktool.report.forecast import summary_line

    summary = TargetSummary(
        "v2", (), (("0001-x.patch", None), ("0002-y.patch", None)), 3, 0, ("0001-x.patch",)
    )
    assert summary_line(summary) == (
        "v2: retires 0, breaks 2 (0001-x.patch, already applied; 0002-y.patch), 3 carry over"
    )


def test_a_backport_the_release_carries_is_already_applied_by_a_three_way_merge(
    builder: RepoBuilder,
) -> None:
    """tcpdump 4.99.5: the release branch carries main's fix as a backport, after a
    change in its context, so the patch neither applies nor reverse-applies there. Its
    verdict is ``revisit`` (the cherry-pick line); as the sync's refresh does, the 3-way
    merge from its pre-image changes nothing: already applied, not a break."""
    lines = "".join(f"line {n}\n" for n in range(1, 31))
    builder.commit("import\n", {"f.c": lines})
    builder.tag("v1")
    fixed = lines.replace("line 10\n", "LINE 10\n")
    fix = builder.commit("fix line 10\n", {"f.c": fixed})
    builder.git.run(["checkout", "-q", "-b", "maint", "v1"], purpose="the release branch")
    near = lines.replace("line 13\n", "line thirteen\n")  # in the patch's context
    builder.commit("tidy line 13\n", {"f.c": near})
    backport = builder.commit(
        f"fix line 10\n\n(cherry picked from commit {fix})\n",
        {"f.c": near.replace("line 10\n", "LINE 10\n")},
    )
    builder.tag("v1.1")
    builder.git.run(["checkout", "-q", "main"], purpose="back")
    fork = MiniFork(builder, "v1")
    fork.write({"0001-fix.patch": make_patch(builder, "v1", {"f.c": fixed}, "fix line 10")},
               commits={"0001-fix.patch": fix})  # fmt: skip
    result = fork.cli("forecast", "--no-fetch", "--tags", "v1.1", "--format", "json")
    assert result.code == 0, result.err
    (cell,) = result.json()["patches"][0]["cells"]  # type: ignore[index]
    assert (cell["verdict"], cell["apply"]) == ("revisit", "conflict")
    assert cell["message"] == (
        "already applied: v1.1 has the whole change (a 3-way merge of it from its pre-image "
        "on v1 changes nothing)"
    )
    (summary,) = result.json()["summary"]  # type: ignore[misc]
    assert summary["already_applied"] == ["0001-fix.patch"]
    text = fork.cli("forecast", "--no-fetch", "--tags", "v1.1").out
    assert "0001-fix.patch, already applied; first broken by" in text
    assert backport not in text  # nothing claims the backport brought it: the bisection


def test_the_first_break_of_a_patch_built_on_one_the_target_retires(
    builder: RepoBuilder,
) -> None:
    """0002 is made on top of 0001, whose fix upstream takes before the target: the
    target retires 0001, and 0002 stops applying later. The search applies 0001 first
    where upstream's fix is not in yet, so 0002 applies at the pin and the first break is
    the commit that broke it, not "none"."""
    repo = builder
    repo.commit("import\n", FILES)
    repo.tag("v1.0.0")
    fixed = edit(FILES["a"], "a10", "A10 fixed")
    x = _change(repo, "a", "a10", "A10 fixed", "Fix a upstream (#12)")
    breaker = _change(repo, "a", "a9", "a9 reworked", "Rework a around line 9 (#13)")
    _change(repo, "b", "b1", "b1 upstream", "Touch b line 1")
    repo.tag("v1.1.0")
    pin = repo.rev("v1.0.0")
    fork = MiniFork(repo, "v1.0.0")
    fork.write(
        {
            "0001-fix-a.patch": make_patch(repo, pin, {"a": fixed}, "Fix a"),
            "0002-more-a.patch": make_patch(
                repo, x, {"a": edit(fixed, "A10 fixed", "A10 fixed twice")}, "More a"
            ),
        },
        commits={"0001-fix-a.patch": x},
    )
    assert fork.cli("verify").code == 0
    cells = _cells(fork.cli("forecast", "--no-fetch", "--format", "json").json())
    assert cells[("0001-fix-a.patch", "v1.1.0")]["verdict"] == "retire"
    cell = cells[("0002-more-a.patch", "v1.1.0")]
    assert cell["apply"] == "conflict"
    assert cell["first_break"]["commit"] == breaker  # type: ignore[index]
