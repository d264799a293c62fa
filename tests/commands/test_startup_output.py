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


@pytest.mark.parametrize(
    ("argv", "fault"),
    [
        (("status",), "plain.import:1:INT"),  # a plain line: runs without click
        (("-v", "status"), "cli.import:1:INT"),  # any other: through click
    ],
)
def test_ctrl_c_while_the_cli_loads_exits_130_quietly(
    fork_root: Path, argv: tuple[str, ...], fault: str
) -> None:
    result = forktool(fork_root, *argv, FORKTOOL_FAULT=fault)
    assert (result.returncode, result.stdout, result.stderr) == (130, b"", b"")


# The CLI leaves without the interpreter's teardown (forktool.entry.leave): the exit
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
        "from forktool.entry import leave\n"
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


def _python(script: str, tmp_path: Path) -> subprocess.CompletedProcess[bytes]:
    path = tmp_path / "script.py"
    path.write_text(script)
    return subprocess.run(
        [sys.executable, str(path)], env={**os.environ, "TMPDIR": str(tmp_path)},
        capture_output=True, timeout=60, check=False,
    )  # fmt: skip


def test_a_ctrl_c_python_dropped_still_exits_130(tmp_path: Path) -> None:
    """Python drops an exception raised in a finalizer (Popen.__del__): a Ctrl-C that
    lands there does not stop the run. The run ends, and exits 130 all the same."""
    result = _python(
        "import os, signal, forktool.entry as entry\n"
        "def run(argv=None):\n"
        "    try:\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "        for _ in range(100000): pass\n"
        "    except KeyboardInterrupt:\n"
        "        pass  # as Popen.__del__ drops it\n"
        "    print('OK')\n"
        "    return 0\n"
        "entry.run = run\n"
        "entry.main()\n",
        tmp_path,
    )
    assert result.returncode == 130
    assert result.stdout == b"OK\n"
    assert result.stderr == b"error: interrupted (the run had finished: its output is complete)\n"


def test_a_scratch_directory_left_behind_goes_at_exit(tmp_path: Path) -> None:
    """A Ctrl-C inside its removal, or a worker thread's git writing into it after, can
    leave a scratch directory: it goes at exit, once worker threads are joined."""
    result = _python(
        "from forktool.entry import leave\n"
        "from forktool.git.runner import scratch_dir\n"
        "made = scratch_dir('forktool-index')\n"
        "(made / 'objects' / '55').mkdir(parents=True)\n"
        "(made / 'objects' / '55' / 'late').write_text('written after the removal')\n"
        "print(made)\n"
        "leave(0)\n",
        tmp_path,
    )
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    made = Path(result.stdout.decode().strip())
    assert made.parent == tmp_path and not made.exists()
