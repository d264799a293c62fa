"""Click wiring: parse, call one function, render, exit. Nothing else lives here.

Exit codes (the public contract): 0 success, 1 the checks ran and found
problems, 2 the command could not run as asked (one ``error:`` line and an
optional ``hint:`` line on stderr, never a traceback).
"""

from __future__ import annotations

import io
import os
import sys
import unicodedata
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from importlib import import_module
from keyword import iskeyword
from pathlib import Path
from typing import TYPE_CHECKING

import click

from forktool import __version__
from forktool.app import App, format_option, notice, pass_app
from forktool.errors import FatalError, Interrupted
from forktool.faults import faultpoint

if TYPE_CHECKING:
    from forktool.output import Output

__all__ = ["COMMANDS", "App", "format_option", "main", "notice", "pass_app", "run"]

# Every command: its name and the first line of its help, shown by 'forktool --help'
# without importing any command. The module is forktool/commands/<name>.py ('-' as
# '_', and a trailing '_' for a Python keyword: import_.py), exposing ``command``.
# Add one line here for a new command; tests/test_cli.py checks the table against
# the commands themselves.
# fmt: off
COMMANDS: dict[str, str] = {
    "init": "Scaffold a fork's files here, pinned to TAG.",
    "status": "One screen: the pin, the series, and each patch's state.",
    "demo": "Build a throwaway upstream and fork, and walk the release cycle on them.",
    "verify": "Apply the series exactly onto the pin (or REF), revert it, prove the round trip.",
    "apply": "Apply the series to a plain directory, strictly and fail-closed.",
    "check": "The CI gate: every check that needs no network, one verdict.",
    "fmt": "Regenerate every patch on the pin in canonical form; --check compares only.",
    "check-history": "Check the commits between the pin and REV against the history contract.",
    "export": "Write the commits between the pin and REV as patches/, series and upstream.map.",
    "import": "Build a branch of the pin plus one commit per patch, from the series.",
    "refresh": "Regenerate every patch of the series against TAG, in series order.",
    "pin": "Read, verify and rewrite every pin site (only the pinned text changes).",
    "align": "Check that the fork diverges from the pinned tag only as its ledger declares.",
    "image": "Candidate images, the gate, promotion by digest, frozen releases.",
    "arms": "List the leave-one-out arms: full, minus-<patch> per patch, patchless.",
    "absorbed": "Per patch: is its upstream commit in TAG, the first release with it, other evidence.",
    "retire": "Drop absorbed patches: series line, patch file, note, map line, and a record row.",
    "sync": "The release procedure: retire what TAG absorbed, refresh the rest, bump pins, merge TAG.",
    "upstream": "Watch upstream: new releases, and pending PRs that have merged (for a scheduled job).",
    "map": "Read and fill upstream.map.",
    "forecast": "What the next releases will absorb and break: patches down, targets across.",
}
# fmt: on

faultpoint("cli.import", write=False)  # where the tests press Ctrl-C while the CLI loads


def command_module(name: str) -> str:
    """The module that defines command ``name`` (see COMMANDS)."""
    module = name.replace("-", "_")
    return f"forktool.commands.{module}_" if iskeyword(module) else f"forktool.commands.{module}"


# The App of the running command, for the error handler in run() (input roots).
_current_app: ContextVar[App | None] = ContextVar("forktool_app", default=None)


def _input_roots() -> tuple[Path, ...]:
    """Where the user's files live: the working directory and the fork's root."""
    app = _current_app.get()
    if app is None:
        return ()
    roots = [app.cwd]
    if app._config is not None:
        roots.append(app._config.root)
    return tuple(roots)


def _shown(filename: str | bytes) -> str:
    """A file named in an error: relative to the fork (or the working directory)."""
    path = Path(os.fsdecode(filename)).absolute()
    for root in reversed(_input_roots()):
        if path.is_relative_to(root):
            return path.relative_to(root).as_posix()
    return str(path)


class ForktoolGroup(click.Group):
    """Lists commands from COMMANDS and imports a command's module only to run it or
    show its own help: start-up is most of a quick command's time."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        if cmd_name not in self.commands:
            self.add_command(import_module(command_module(cmd_name)).command, cmd_name)
        return self.commands[cmd_name]

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list of 'forktool --help', from COMMANDS (nothing imported)."""
        limit = formatter.width - 6 - max(len(name) for name in COMMANDS)
        rows = [
            (name, click.Command(name, help=COMMANDS[name]).get_short_help_str(limit))
            for name in self.list_commands(ctx)
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(
    cls=ForktoolGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option(
    "-C",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    help="Run as if forktool was started in DIR.",
    metavar="DIR",
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Use this forktool.yaml instead of searching for one.",
    metavar="FILE",
)
@click.option("-q", "--quiet", is_flag=True, help="Print only verdicts and errors.")
@click.option(
    "-v",
    "--verbose",
    is_flag=True,
    help="Show every git command forktool runs, and why, on stderr.",
)
@click.version_option(__version__, prog_name="forktool")
@click.pass_context
def cli(
    ctx: click.Context, directory: Path | None, config_file: Path | None, quiet: bool, verbose: bool
) -> None:
    """Keep a patch-series fork of an upstream project honest.

    A fork pins an upstream release tag, carries a few patches on top, and drops
    each patch once the pinned release contains its upstream commit (decided by
    ancestry, never by a passing probe).

    \b
    Examples:
      forktool demo                 walk the whole release cycle on a throwaway fork
      forktool status               pin, series, and each patch's state
      forktool -C ../myfork check   the CI gate, for the fork in ../myfork
    """
    from forktool.git import set_graph_notice, set_observer
    from forktool.output import Output

    cwd = Path.cwd()
    if directory is not None:
        if not directory.is_dir():
            raise FatalError(f"-C {directory}: no such directory")
        cwd = directory.resolve()
    if config_file is not None and not config_file.is_absolute():
        config_file = (cwd / config_file).resolve()
    ctx.obj = App(cwd=cwd, config_file=config_file, output=Output(quiet=quiet, verbose=verbose))
    _current_app.set(ctx.obj)
    set_observer(_git_narrator(ctx.obj.output) if verbose else None)
    set_graph_notice(None if quiet else notice)


# Commands are added on first use: see ForktoolGroup.


def one_line(text: str) -> str:
    """``text`` with line breaks and other control characters escaped (``\\n``).

    Messages quote user input (a tag, a path, a file's line); a newline in it
    must not forge a second ``error:`` line or split the one a script reads.
    """
    if text.isprintable():
        return text
    return "".join(
        ch.encode("unicode_escape").decode("ascii")
        if unicodedata.category(ch) in ("Cc", "Zl", "Zp")
        else ch
        for ch in text
    )


def _git_narrator(output: Output) -> Callable[[str, Sequence[str], int], None]:
    """With -v, each git command forktool runs, on stderr: what for, what, and its exit."""

    import shlex

    def narrate(purpose: str, args: Sequence[str], code: int) -> None:
        shown = " ".join(shlex.quote(a) for a in args)
        output.detail(f"git {shown}  # {purpose} (exit {code})")

    return narrate


def _fail(message: str, hint: str | None, code: int = 2) -> int:
    click.echo(f"error: {one_line(message)}", err=True)
    if hint:
        click.echo(f"hint: {one_line(hint)}", err=True)
    return code


# Options of ``forktool`` itself, with the value each takes.
GLOBAL_OPTIONS = {
    "-C": " DIR",
    "--config": " FILE",
    "-q": "",
    "--quiet": "",
    "-v": "",
    "--verbose": "",
}


def _usage_hint(exc: click.UsageError, command: str) -> str:
    """Usage help; for a global option given after the command, where it goes."""
    if isinstance(exc, click.NoSuchOption) and exc.option_name in GLOBAL_OPTIONS:
        name = exc.option_name
        sub = command.removeprefix("forktool ")
        usage = f"forktool {name}{GLOBAL_OPTIONS[name]} {sub}"
        return f"{name} is a global option: put it before the command ({usage})"
    return f"run '{command} --help' for usage"


def run(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit code (also used by the tests)."""
    _current_app.set(None)
    try:
        result = cli.main(
            args=list(argv) if argv is not None else None,
            prog_name="forktool",
            standalone_mode=False,
        )
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.UsageError as exc:
        command = exc.ctx.command_path if exc.ctx else "forktool"
        return _fail(exc.format_message(), _usage_hint(exc, command))
    except click.ClickException as exc:
        return _fail(exc.format_message(), None)
    except FatalError as exc:
        return _fail(exc.message, exc.hint)
    except (KeyboardInterrupt, click.Abort) as exc:
        # click turns Ctrl-C into Abort; an Interrupted says what the run left behind.
        said = exc if isinstance(exc, Interrupted) else exc.__cause__
        if isinstance(said, Interrupted):
            return _fail(said.message, said.hint, 130)
        return _fail("interrupted; nothing was left half-written", None, 130)
    except OSError as exc:
        # A write the file system refused (disk full, file too large, read-only) and
        # a user's file that is missing, unreadable or of the wrong kind are exit 2,
        # naming the file; any other OSError is a bug: re-raised.
        from forktool.fsutil import write_refusal
        from forktool.inputs import describe_os_error, is_input_os_error

        if (refused := write_refusal(exc, "a file")) is not None:
            return _fail(refused.message, refused.hint)
        if not is_input_os_error(exc, _input_roots()):
            raise
        return _fail(f"{_shown(exc.filename)}: {describe_os_error(exc)}", None)
    if isinstance(result, int):
        return result
    return 0


def _escape_unencodable() -> None:
    """A patch name the output encoding cannot show (``PYTHONIOENCODING=ascii``, a
    latin-1 locale) is written escaped (``\\xe9``), never a crash."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


def main() -> None:
    _escape_unencodable()
    try:
        code = run()
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (e.g. `| head`); do not print a traceback.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        code = 1
    sys.exit(code)
