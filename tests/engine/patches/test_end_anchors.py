"""A patch git places at its own lines but GNU patch holds to its file's end (a hunk
with less context after its change than before: its diff ended with the file), under
dpkg-source's rule: refresh and fmt regenerate it, import refuses it, as verify does."""

from __future__ import annotations

from pathlib import Path

import pytest
from testing.apply_support import edit_line, numbered, patch_of, writes
from testing.helpers import MiniFork, mini_fork

from forktool.builder import RepoBuilder
from forktool.git import run_gnu_patch

APP = "src/app.txt"
P = "0001-nine.patch"
DEBIAN = "patch_form: maintainers\napply_rule: dpkg\n"


@pytest.fixture
def longer(builder: RepoBuilder) -> MiniFork:
    """A fork whose patch ended its file on v1; on v2 the file goes on for five lines."""
    fork = mini_fork(builder, {APP: numbered(10)})
    patch = patch_of(builder, "v1", writes({APP: edit_line(numbered(10), "line 9", "nine")}))
    assert b"@@ -6,5 +6,5 @@" in patch  # three lines before its change, one after
    builder.commit("upstream: longer\n", {APP: numbered(15)})
    builder.tag("v2")
    fork.write(
        {P: b"Description: nine\nAuthor: A <a@example.org>\n---\n" + patch}, extra_config=DEBIAN
    )
    return fork


def gnu_applies(fork: MiniFork, tmp_path: Path, text: str) -> bool:
    probe = tmp_path / "probe"
    (probe / "src").mkdir(parents=True)
    (probe / APP).write_text(text)
    code, _ = run_gnu_patch(
        ["-p1", "-F0", "--batch", "--dry-run"], probe, fork.root / "patches" / P
    )
    return code == 0


def status_on(fork: MiniFork, base: str) -> str:
    result = fork.cli("verify", "--base", base, "--format", "json")
    return str(result.json()["patches"][0]["status"])  # type: ignore[index]


def test_refresh_regenerates_it_and_keeps_its_header(longer: MiniFork, tmp_path: Path) -> None:
    assert status_on(longer, "v2") == "fuzz"
    assert not gnu_applies(longer, tmp_path / "before", numbered(15))
    result = longer.cli("refresh", "--onto", "v2", "--format", "json")
    assert result.code == 0, result.out
    (entry,) = result.json()["patches"]  # type: ignore[misc]
    assert entry["status"] == "rebased"
    assert "holds it to the file's end, line 15" in entry["message"]
    refreshed = (longer.root / "patches" / P).read_bytes()
    assert refreshed.startswith(b"Description: nine\nAuthor: A <a@example.org>\n")
    assert b"@@ -6,7 +6,7 @@" in refreshed  # three lines of context after it now
    assert status_on(longer, "v2") == "exact"
    assert gnu_applies(longer, tmp_path / "after", numbered(15))


def test_forecast_says_what_the_refresh_does(longer: MiniFork) -> None:
    """forecast's apply column says what a refresh meets: the patch moves (offset), it
    is neither exact as it is nor a conflict."""
    result = longer.cli("forecast", "--tags", "v2", "--no-fetch", "--format", "json")
    assert result.code == 0, result.err
    (cell,) = result.json()["patches"][0]["cells"]  # type: ignore[index]
    assert cell["apply"] == "offset"
    assert (
        longer.cli("refresh", "--onto", "v2", "--format", "json").json()["patches"][0][  # type: ignore[index]
            "status"
        ]
        == "rebased"
    )


def test_fmt_on_such_a_pin_regenerates_it_and_import_refuses_it(longer: MiniFork) -> None:
    longer.pin = "v2"
    longer.write(longer.patches, extra_config=DEBIAN)
    imported = longer.cli("import", "--branch", "p")
    assert imported.code == 2
    assert "holds it to the file's end, line 15" in imported.err
    assert longer.cli("fmt", "--check").code == 1
    assert longer.cli("fmt").code == 0
    assert status_on(longer, "v2") == "exact"
    assert longer.cli("import", "--branch", "p").code == 0


def test_a_patch_the_rule_takes_at_an_offset_is_kept_and_said_so(builder: RepoBuilder) -> None:
    """In the maintainers' form under dpkg-source's rule a patch that applies at an
    offset is written as it is: refresh says so, and never "regenerated" (nor, when
    another patch stops the refresh, "would be regenerated")."""
    fork = mini_fork(builder, {APP: numbered(20)})
    patch = patch_of(builder, "v1", writes({APP: edit_line(numbered(20), "line 9", "nine")}))
    builder.commit("upstream: a header\n", {APP: "header\n" * 3 + numbered(20)})
    builder.tag("v2")
    fork.write({P: patch}, extra_config=DEBIAN)
    result = fork.cli("refresh", "--onto", "v2", "--format", "json")
    assert result.code == 0, result.out
    (entry,) = result.json()["patches"]  # type: ignore[misc]
    assert entry["status"] == "rebased"
    assert entry["message"].endswith("offsets reported); kept byte for byte")
    assert "regenerated" not in entry["message"]
    assert (fork.root / "patches" / P).read_bytes() == patch
    conflict = patch_of(builder, "v1", writes({APP: edit_line(numbered(20), "line 15", "x")}))
    builder.commit(
        "upstream: line 15\n", {APP: "header\n" * 3 + numbered(20).replace("line 15", "y")}
    )
    builder.tag("v3")
    fork.write({P: patch, "0002-x.patch": conflict}, extra_config=DEBIAN)
    stopped = fork.cli("refresh", "--onto", "v3", "--format", "json")
    assert stopped.code == 1
    first = stopped.json()["patches"][0]  # type: ignore[index]
    assert first["message"].endswith("offsets reported); kept byte for byte")
