"""What a new user hit in the first hour, each pinned down: copyable names in piped
tables, a failure said once, a skipped check that says why, a global option put after
the command, one verdict style."""

from __future__ import annotations

import re
from pathlib import Path

from testing.helpers import MiniFork, make_patch, mini_fork, run_cli

from forktool.builder import RepoBuilder

LONG = "0001-config-do-not-crash-on-an-empty-config-file-when-it-is-read.patch"
URL = "https://forge.example.org/upstream/project/pull/12345"


def _lines(prefix: str, count: int = 12) -> str:
    return "".join(f"{prefix}{i}\n" for i in range(1, count + 1))


def _long_named_fork(builder: RepoBuilder) -> MiniFork:
    fork = mini_fork(builder, {"app.py": _lines("a"), "lib.py": _lines("l")})
    good = make_patch(builder, "v1", {"app.py": _lines("a").replace("a3\n", "A3\n")}, "app")
    bad = make_patch(builder, "v1", {"lib.py": _lines("l").replace("l3\n", "L3\n")}, "lib")
    fork.write({LONG: good, "0002-lib.patch": bad.replace(b" l4", b" lX")})
    umap = fork.root / "upstream.map"
    umap.write_text(umap.read_text().replace(f"{LONG} none", f"{LONG} none {URL}"))
    return fork


def test_piped_tables_keep_patch_names_and_urls_whole(builder: RepoBuilder) -> None:
    fork = _long_named_fork(builder)
    for args in (("status",), ("verify",), ("absorbed", "--tag", "v1")):
        out = fork.cli(*args).out
        assert re.search(rf"^(\d+\s+)?{re.escape(LONG)}\s", out, re.MULTILINE), (args, out)
    status = fork.cli("status").out
    assert URL in status  # the PR column is whole too


def test_a_failed_verify_says_each_failure_once(builder: RepoBuilder) -> None:
    fork = _long_named_fork(builder)
    result = fork.cli("verify")
    assert result.code == 1
    flat = " ".join(result.out.split())
    assert flat.count("does not apply at line") == 1  # in the table, not again below
    assert result.out.splitlines()[-1] == (
        "FAILED: 1 patch(es) do not apply exactly: 0002-lib.patch:11"
    )
    quiet = fork.cli("-q", "verify")  # no table: the failure is said in full, once
    assert quiet.out.count("does not apply at line") == 1
    assert quiet.out.startswith("error: 0002-lib.patch:11: lib.py: hunk 1 does not apply")


def test_check_text_says_why_a_check_was_skipped(example_fork: RepoBuilder) -> None:
    result = run_cli("-C", example_fork.path, "check")
    assert result.code == 0, result.out
    row = next(line for line in result.out.splitlines() if line.startswith("history "))
    assert "skipped: the fork keeps its" in row  # the reason the JSON has, wrapped below
    assert "history.branch in" in result.out
    assert result.out.splitlines()[-1] == "OK: all checks passed"


def test_a_global_option_after_the_command_gets_a_hint(example_fork: RepoBuilder) -> None:
    result = run_cli("-C", example_fork.path, "status", "-v")
    assert result.code == 2
    assert result.error_lines == [
        "error: No such option '-v'.",
        "hint: -v is a global option: put it before the command (forktool -v status)",
    ]
    directory = run_cli("-C", example_fork.path, "pin", "show", "-C", "x")
    assert directory.error_lines[1] == (
        "hint: -C is a global option: put it before the command (forktool -C DIR pin show)"
    )


def test_demo_help_names_its_argument_one_way() -> None:
    result = run_cli("demo", "--help")
    assert result.out.startswith("Usage: forktool demo [OPTIONS] [DIR]\n")
    assert "DIRECTORY" not in result.out


def test_verdict_lines_share_one_style(example_fork: RepoBuilder) -> None:
    last = {
        args: run_cli("-C", example_fork.path, *args).out.splitlines()[-1]
        for args in (("check",), ("align",), ("verify",), ("pin", "bump", "v1.2.0", "--dry-run"))
    }
    assert {line.split(":")[0] for line in last.values()} == {"OK", "DRY RUN"}, last


def test_setup_script_skips_a_ready_venv() -> None:
    script = (Path(__file__).resolve().parents[2] / "scripts" / "setup.sh").read_text()
    assert "nothing to install" in script and "sha256sum pyproject.toml" in script
