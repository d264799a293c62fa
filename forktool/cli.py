"""Click wiring: parse, call one function, render, exit. Nothing else lives here.

Exit codes (the public contract): 0 success, 1 the checks ran and found
problems, 2 the command could not run as asked (one ``error:`` line and an
optional ``hint:`` line on stderr, never a traceback).
"""

from __future__ import annotations

import importlib
import io
import os
import shlex
import sys
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import click

from forktool import __version__
from forktool.config import Config, find_config, load_config
from forktool.errors import FatalError, Interrupted
from forktool.faults import faultpoint
from forktool.fork import Fork, load_fork
from forktool.fsutil import fork_lock, recover_interrupted, write_refusal
from forktool.git import Git, set_observer
from forktool.inputs import describe_os_error, is_input_os_error
from forktool.output import Output

faultpoint("cli.import", write=False)  # where the tests press Ctrl-C while the CLI loads

F = TypeVar("F", bound=Callable[..., Any])

# One module per subcommand under forktool/commands/, each exposing ``command``.
COMMAND_MODULES = (
    "init",
    "status",
    "demo",
    "verify",
    "apply",
    "check",
    "fmt",
    "check_history",
    "export",
    "import_",
    "refresh",
    "pin",
    "align",
    "image",
    "arms",
    "absorbed",
    "retire",
    "sync",
    "upstream",
    "map",
    "forecast",
)


@dataclass
class App:
    """What every command needs: where the fork is, and how to talk to the user."""

    cwd: Path
    config_file: Path | None
    output: Output
    _config: Config | None = field(default=None, repr=False)

    def config(self) -> Config:
        if self._config is None:
            path = self.config_file or find_config(self.cwd, stop=lambda d: (d / ".git").exists())
            self._config = load_config(path)
        return self._config

    def fork(self, *, strict: bool = True) -> Fork:
        return load_fork(self.config(), strict=strict)

    def git(self) -> Git:
        git = Git(self.config().root)
        git.toplevel()  # refuses early, with a hint, outside a repository
        return git

    @contextmanager
    def lock(self, git: Git | None = None, root: Path | None = None) -> Iterator[None]:
        """Hold the fork's lock for the whole of a mutating command.

        The lock lives in the repository's COMMON git directory, so a sync's worktree
        and the main checkout exclude each other. Once it is held, whatever a killed
        run left behind is finished or removed, with a one-line notice for each.
        """
        git = git or self.git()
        common = git.common_dir()
        with fork_lock(common) as stale:
            if stale is not None:
                notice(f"took over the lock of a forktool run that is gone (pid {stale})")
            for message in recover_interrupted(common, root or self.config().root):
                notice(message)
            self._config = None  # read again: the fork may have changed until now
            yield


def notice(message: str) -> None:
    """One line on stderr about something forktool did on its own (never wrapped)."""
    click.echo(f"notice: {message}", err=True)


pass_app = click.make_pass_decorator(App)

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


def format_option(*choices: str) -> Callable[[F], F]:
    names = choices or ("text", "json")
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(names),
        default="text",
        show_default=True,
        help="Output format: " + ", ".join(names) + ".",
    )


class ForktoolGroup(click.Group):
    """Imports a command's module only when that command runs (or help lists them
    all): start-up is most of a quick command's time, and some commands import
    heavy libraries."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.loaded: set[str] = set()

    def _load(self, modules: Sequence[str]) -> None:
        for module in modules:
            if module not in self.loaded:
                self.loaded.add(module)
                self.add_command(importlib.import_module(f"forktool.commands.{module}").command)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        guess = cmd_name.replace("-", "_")
        self._load([m for m in COMMAND_MODULES if m == guess])
        if cmd_name not in self.commands:
            self._load(COMMAND_MODULES)  # a command named unlike its module
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._load(COMMAND_MODULES)
        return sorted(super().list_commands(ctx))


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
