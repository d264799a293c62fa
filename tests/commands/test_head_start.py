"""A plain ``verify`` or ``status`` starts git before click is imported.

The entry point reads the command line for the few shapes it knows
(:func:`forktool.head_start.read_line`), starts git as the command would, and the
command takes that work over once click parsed the same line. click alone decides
what the line means: where the head start read a line, click reads the same
directory, config file, base and jobs (a property test below), and what was started
for another line is stopped, its temporary index removed. The answers are the ones a
run without a head start gives.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from testing.apply_support import series_fork
from testing.helpers import CliResult, run_cli

from forktool import head_start
from forktool.builder import RepoBuilder
from forktool.cli import cli, run
from forktool.head_start import CommandLine, begin, read_line, release, take


def leftover_indexes() -> list[str]:
    scratch = Path(os.environ["TMPDIR"])
    return [p.name for p in scratch.iterdir() if p.name.startswith("forktool-index-")]


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["verify"], CommandLine("verify")),
        (
            ["-C", "f", "verify", "--format", "json"],
            CommandLine("verify", directory="f", fmt="json"),
        ),
        (
            ["-Cf", "-q", "verify", "--format=json"],
            CommandLine("verify", directory="f", quiet=True, fmt="json"),
        ),
        (["--config=x.yaml", "status"], CommandLine("status", config_file="x.yaml")),
        (
            ["verify", "--base", "v2", "--jobs", "2", "--keep-going", "--allow-offset"],
            CommandLine("verify", base="v2", jobs=2, keep_going=True, allow_offset=True),
        ),
        (["--quiet", "status", "--format", "json"], CommandLine("status", quiet=True, fmt="json")),
        (["verify", "--format", "JSON"], None),  # click's choices are exact
        (["verify", "--format", "junit"], None),  # not a choice of verify's
        (["-v", "verify"], None),  # -v narrates every git call: click's run sets that up
        (["verify", "--help"], None),
        (["verify", "--jobs", "0"], None),
        (["verify", "--jobs", "+2"], None),
        (["verify", "--base", "a", "--base", "b"], None),  # click takes the last: not read
        (["verify", "--base", "--jobs"], None),  # a value that looks like an option
        (["verify", "--base="], None),
        (["verify", "--"], None),
        (["verify", "extra"], None),
        (["status", "--base", "v2"], None),  # not an option of status
        (["check"], None),
        (["-C"], None),
        ([], None),
        (["verify", "-q"], None),  # a global option after the command
    ],
)
def test_the_lines_read(argv: list[str], line: CommandLine | None) -> None:
    assert read_line(argv) == line


GLOBAL = st.sampled_from(
    [
        ["-C", "dir"],
        ["-Cdir"],
        ["-C=dir"],
        ["--config", "c.yaml"],
        ["--config=c.yaml"],
        ["-q"],
        ["--quiet"],
    ]
)
OPTION = st.sampled_from(
    [
        ["--base", "v1"],
        ["--base=v2"],
        ["--jobs", "2"],
        ["--jobs=3"],
        ["--jobs", "03"],
        ["--format", "json"],
        ["--format=text"],
        ["--format", "text"],
        ["--allow-offset"],
        ["--keep-going"],
    ]
)
ODD = st.sampled_from(
    [
        ["-v"],
        ["-C", "--quiet"],
        ["--config"],
        ["-qCdir"],
        ["--base"],
        ["--base", "-x"],
        ["--jobs", "0"],
        ["--jobs", "+2"],
        ["--jobs", "x"],
        ["--format", "xml"],
        ["--format", "Json"],
        ["--format="],
        ["--keep-going=1"],
        ["--"],
        ["-q"],
        ["extra"],
        ["--help"],
        ["check"],
        ["--version"],
    ]
)


@st.composite
def command_lines(draw: st.DrawFn) -> list[str]:
    """Lines shaped like the ones the head start reads, some with an odd word put in."""
    parts = draw(st.lists(GLOBAL, max_size=3))
    parts.append([draw(st.sampled_from(["verify", "status"]))])
    parts += draw(st.lists(OPTION, max_size=4))
    if draw(st.booleans()):
        parts.insert(draw(st.integers(0, len(parts))), draw(ODD))
    return [word for part in parts for word in part]


def _click_reads(argv: list[str]) -> CommandLine | None:
    """What click reads from ``argv``: the group's options, the command, its options
    (None when click refuses the line, or it names no command)."""
    try:
        ctx = cli.make_context("forktool", list(argv), resilient_parsing=False)
        rest = [*getattr(ctx, "_protected_args", []), *ctx.args]
        if not rest:
            return None
        command = cli.get_command(ctx, rest[0])
        if command is None:
            return None
        sub = command.make_context(rest[0], rest[1:], parent=ctx)
    except (click.ClickException, click.exceptions.Exit):
        return None
    directory, config = ctx.params["directory"], ctx.params["config_file"]
    return CommandLine(
        rest[0],
        directory=None if directory is None else str(directory),
        config_file=None if config is None else str(config),
        quiet=ctx.params["quiet"],
        base=sub.params.get("base"),
        jobs=sub.params.get("jobs"),
        fmt=sub.params["fmt"],
        allow_offset=sub.params.get("allow_offset", False),
        keep_going=sub.params.get("keep_going", False),
    )


@settings(max_examples=400, deadline=None)
@given(command_lines())
def test_a_line_read_is_the_line_click_reads(argv: list[str]) -> None:
    """Wherever the head start reads a line, click reads the same: the command, every
    global option and every option of the command (a plain line then runs on that
    reading without click). A line click refuses is never read."""
    line = read_line(argv)
    if line is None:
        return
    assert _click_reads(argv) == line, argv


def forktool_after(code: str, *argv: str) -> subprocess.CompletedProcess[str]:
    """``forktool ARGV`` as the command runs it, in a fresh interpreter that first runs
    ``code`` (which may replace a function to watch or to interrupt the run)."""
    script = f"import sys\n{code}sys.argv = ['forktool', *{list(argv)!r}]\n"
    script += "from forktool.__main__ import main\nmain()\n"
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )


def _in_a_fresh_interpreter(code: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return done.stdout.splitlines()


def test_git_runs_before_click_is_imported(builder: RepoBuilder) -> None:
    fork = series_fork(builder, 3)
    code = (
        "import sys\n"
        "from forktool import head_start\n"
        f"head_start.begin(['-C', {str(fork.root)!r}, 'verify', '--format', 'json'])\n"
        "started = head_start._started\n"
        "print('click' in sys.modules, 'rich' in sys.modules)\n"
        "print(started is not None and started.verifying.early is not None)\n"
        "print(started.verifying.early.trip is not None)\n"
    )
    assert _in_a_fresh_interpreter(code) == ["False False", "True", "True"]


@pytest.mark.parametrize("command", ["verify", "status"])
def test_the_command_takes_it_and_answers_as_without(builder: RepoBuilder, command: str) -> None:
    """``forktool -C FORK verify`` (and status) as a user runs it: what was started
    is taken by the command, and the answer is the one of a run without a head start."""
    fork = series_fork(builder, 4)
    told = (
        "from forktool import head_start\n"
        "real = head_start.take\n"
        "def take(*args):\n"
        "    found = real(*args)\n"
        "    print('taken' if found is not None else 'not taken', file=sys.stderr)\n"
        "    return found\n"
        "head_start.take = take\n"
    )
    done = forktool_after(told, "-C", str(fork.root), command, "--format", "json")
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1] == "taken", done.stderr
    plain = run_without_head_start("-C", str(fork.root), command, "--format", "json")
    assert json.loads(done.stdout) == plain
    assert leftover_indexes() == []


def run_without_head_start(*argv: str) -> object:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert run(list(argv)) == 0
    return json.loads(out.getvalue())


def test_what_another_line_asks_for_is_stopped(builder: RepoBuilder) -> None:
    """Started for one base, asked for another: nothing is taken, git is stopped and
    the temporary index removed at once."""
    fork = series_fork(builder, 3)
    begin(["-C", str(fork.root), "verify"])
    started = head_start._started
    assert started is not None and started.verifying.early is not None
    assert leftover_indexes() != []
    assert take("verify", started.cwd, started.config_file, "v1", None) is None
    assert head_start._started is None
    assert leftover_indexes() == []
    trip = started.verifying.early.trip
    assert trip is not None and not trip._thread.is_alive()


def test_a_line_click_refuses_leaves_nothing(builder: RepoBuilder) -> None:
    fork = series_fork(builder, 3)
    done = subprocess.run(
        [sys.executable, "-m", "forktool", "-C", str(fork.root), "verify", "--format", "xml"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "xml" in done.stderr and "Traceback" not in done.stderr
    assert leftover_indexes() == []


def test_a_problem_on_the_way_starts_nothing_and_the_command_says_it(
    builder: RepoBuilder,
) -> None:
    """A pin that is not there: nothing is started, and the command says what is
    wrong as it does without a head start."""
    fork = series_fork(builder, 3)
    config = fork.root / "forktool.yaml"
    config.write_text(config.read_text().replace("tag: v1", "tag: v9"))
    begin(["-C", str(fork.root), "verify"])
    assert head_start._started is None
    assert leftover_indexes() == []
    with_start = fork.cli("verify")
    release()
    assert with_start.code == 2 and "v9" in with_start.err


def test_ctrl_c_while_the_cli_loads_stops_what_was_started(builder: RepoBuilder) -> None:
    """A Ctrl-C after git started, while click and the command load: exit 130, no
    traceback, every git stopped and the temporary index removed."""
    fork = series_fork(builder, 3)
    press = (
        "import forktool.faults as faults\n"
        "real = faults.faultpoint\n"
        "def press(name, **kw):\n"
        "    if name == 'plain.import':\n"
        "        raise KeyboardInterrupt\n"
        "    return real(name, **kw)\n"
        "faults.faultpoint = press\n"
    )
    done = forktool_after(press, "-C", str(fork.root), "verify")
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr
    assert leftover_indexes() == []


def _through_click(*argv: str) -> tuple[int, str, str]:
    """``forktool ARGV`` through click alone (no head start, no plain run)."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run(list(argv))
    return code, out.getvalue(), err.getvalue()


PLAIN_LINES = [
    ["verify"],
    ["verify", "--format", "json"],
    ["-q", "verify", "--keep-going"],
    ["verify", "--jobs", "1", "--allow-offset", "--format=json"],
    ["verify", "--base", "v1", "--jobs", "2"],
    ["status"],
    ["--quiet", "status", "--format", "json"],
]


@pytest.mark.parametrize("argv", PLAIN_LINES)
@pytest.mark.parametrize("broken", [False, True])
def test_a_plain_line_answers_as_click_does(
    builder: RepoBuilder, argv: list[str], broken: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run without click, a plain line gives the exit code, stdout and stderr of the
    same line through click: on a sound series and on one whose third patch fails."""
    import forktool.plain

    ran: list[str] = []
    real = forktool.plain.run_line

    def run_line(started: head_start.HeadStart) -> int:
        ran.append(started.line.command)
        return real(started)

    monkeypatch.setattr(forktool.plain, "run_line", run_line)
    fork = series_fork(builder, 18)
    if broken:
        patch = fork.root / "patches" / "0003.patch"
        lines = patch.read_bytes().split(b"\n")
        removed = next(i for i, line in enumerate(lines) if line[:1] == b"-" and line[:3] != b"---")
        lines[removed] = b"-not in the base " + lines[removed][1:]
        patch.write_bytes(b"\n".join(lines))
    whole = ["-C", str(fork.root), *argv]
    plain = fork.cli(*argv)
    command = next(word for word in argv if word in ("verify", "status"))
    assert ran == [command]  # the line ran without click
    assert (plain.code, plain.out, plain.err) == _through_click(*whole)
    assert plain.code == (1 if broken and "verify" in argv else 0)
    assert leftover_indexes() == []


@pytest.mark.parametrize(
    "case", ["pin tag missing", "pin tag moved", "unknown base", "base names a tree"]
)
def test_a_base_git_cannot_resolve_answers_as_click_does(builder: RepoBuilder, case: str) -> None:
    """The head start asks for the base's commit in the same git call as the top level
    (one process fewer before git starts on the series); a base that call cannot
    resolve gives the answer of the line through click, word for word."""
    fork = series_fork(builder, 3)
    argv = ["verify", "--format", "json"]
    if case == "pin tag missing":
        builder.git.run(["tag", "-d", "v1"], purpose="delete the pinned tag")
    elif case == "pin tag moved":
        builder.move_tag("v1", builder.commit("after the pin", {"later.txt": "later\n"}))
    else:
        argv += ["--base", "nope" if case == "unknown base" else "v1^{tree}"]
    plain = fork.cli(*argv)
    assert plain.code == 2, plain.err
    assert (plain.code, plain.out, plain.err) == _through_click("-C", str(fork.root), *argv)
    assert leftover_indexes() == []


def test_a_plain_line_never_imports_click(builder: RepoBuilder) -> None:
    fork = series_fork(builder, 3)
    watch = (
        "import atexit\natexit.register(lambda: print('click' in sys.modules, file=sys.stderr))\n"
    )
    for argv in (["verify", "--format", "json"], ["status"], ["-v", "status"]):
        done = forktool_after(watch, "-C", str(fork.root), *argv)
        assert done.returncode == 0, done.stderr
        assert done.stderr.splitlines()[-1] == str("-v" in argv), argv


def test_a_plain_json_verify_makes_no_dataclass(builder: RepoBuilder) -> None:
    """The records ``verify --format json`` makes are NamedTuples and plain classes: on
    Python 3.11 each dataclass compiles its methods at import (about 0.6 ms a class, 44
    of them on this path), and ``dataclasses`` imports ``inspect`` (docs/performance.md)."""
    fork = series_fork(builder, 18)  # long enough to go side by side with --jobs 2
    watch = (
        "import atexit\natexit.register(lambda: print(sorted({'dataclasses', 'inspect'}"
        " & set(sys.modules)), file=sys.stderr))\n"
    )
    for jobs in ("1", "2"):
        argv = ["verify", "--format", "json", "--jobs", jobs]
        done = forktool_after(watch, "-C", str(fork.root), *argv)
        assert done.returncode == 0, done.stderr
        assert done.stderr.splitlines()[-1] == "[]", argv


def test_a_config_click_refuses_runs_through_click(builder: RepoBuilder, tmp_path: Path) -> None:
    """click refuses a --config that is a directory (where forktool was started): that
    line starts nothing, and click says so."""
    fork = series_fork(builder, 3)
    argv = ["-C", str(fork.root), "--config", str(tmp_path), "verify"]
    assert read_line(argv) is not None
    assert begin(argv) is None and head_start._started is None
    done: CliResult = run_cli(*argv)
    assert done.code == 2 and "is a directory" in done.err
    assert leftover_indexes() == []
