"""Start-up and output: a Ctrl-C while the CLI loads, and an output encoding that
cannot show a patch name, never end in a traceback. The real CLI runs in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from testing.apply_support import numbered, patch_of, writes
from testing.helpers import mini_fork

from forktool.builder import RepoBuilder

NAME = "0001-café-ł.patch"  # é is in latin-1, ł is not


def forktool(root: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "forktool", "-C", str(root), *argv],
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200", **env},
        capture_output=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def fork_root(builder: RepoBuilder) -> Path:
    fork = mini_fork(builder, {"app.py": numbered(10)})
    fork.write({NAME: patch_of(builder, "v1", writes({"app.py": numbered(11)}))})
    return fork.root


@pytest.mark.parametrize(
    ("encoding", "shown"),
    [("ascii", b"0001-caf\\xe9-\\u0142.patch"), ("latin-1", b"0001-caf\xe9-\\u0142.patch")],
)
@pytest.mark.parametrize("command", ["status", "verify"])
def test_a_name_the_output_encoding_cannot_show_is_escaped(
    fork_root: Path, encoding: str, shown: bytes, command: str
) -> None:
    result = forktool(fork_root, command, PYTHONIOENCODING=encoding, LC_ALL="C")
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    assert b"Traceback" not in result.stderr
    assert shown in result.stdout


def test_an_error_naming_an_unencodable_patch_is_escaped(fork_root: Path) -> None:
    result = forktool(fork_root, "retire", "--undo", NAME, PYTHONIOENCODING="ascii")
    assert result.returncode == 2
    assert result.stderr.splitlines()[0].startswith(b"error: ")
    assert b"0001-caf" in result.stderr  # click writes its own bytes: escaped or UTF-8
    assert b"Traceback" not in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_ctrl_c_while_the_cli_loads_exits_130_quietly(fork_root: Path) -> None:
    result = forktool(fork_root, "status", FORKTOOL_FAULT="cli.import:1:INT")
    assert (result.returncode, result.stdout, result.stderr) == (130, b"", b"")


# The CLI leaves without the interpreter's teardown (forktool.cli.leave): the exit
# code, the whole output and the exit functions must survive that.


@pytest.mark.parametrize(("argv", "code"), [(("verify",), 0), (("verify", "--base", "nope"), 2)])
def test_the_exit_code_and_output_survive_the_quick_exit(
    fork_root: Path, argv: tuple[str, ...], code: int
) -> None:
    result = forktool(fork_root, *argv, "--format", "json")
    assert result.returncode == code, result.stderr.decode(errors="replace")
    assert b"Traceback" not in result.stderr
    if code == 0:
        assert json.loads(result.stdout)["ok"] is True
    else:
        assert result.stderr.startswith(b"error: ")


def test_exit_functions_run_before_the_quick_exit(tmp_path: Path) -> None:
    script = tmp_path / "leave.py"
    mark = tmp_path / "ran"
    script.write_text(
        "import atexit, sys\n"
        "from forktool.cli import leave\n"
        f"atexit.register(lambda: open({str(mark)!r}, 'w').write('yes'))\n"
        "sys.stdout.write('x' * 200000)\n"
        "leave(3)\n"
    )
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, timeout=60, check=False
    )
    assert result.returncode == 3
    assert result.stdout == b"x" * 200000  # buffered output, more than a pipe holds, is flushed
    assert mark.read_text() == "yes"
