"""Expected failures become one ``error:`` line, an optional ``hint:`` and an exit code.

Every way a command can fail on purpose ends here: a :class:`FatalError` (2), click's
usage errors (2), Ctrl-C (130, saying what the run left behind), a file the user
named that is missing or unreadable and a write the file system refused (2, naming
the file). Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING

import click

from forktool.errors import FatalError, Interrupted
from forktool.escape import terminal

if TYPE_CHECKING:
    from forktool.app import App

# The App of the running command (set by the CLI): where the user's files live.
current_app: ContextVar[App | None] = ContextVar("forktool_app", default=None)

# Options of ``forktool`` itself, with the value each takes.
GLOBAL_OPTIONS = {
    "-C": " DIR",
    "--config": " FILE",
    "-q": "",
    "--quiet": "",
    "-v": "",
    "--verbose": "",
}


def handled(call: Callable[[], object]) -> int:
    """Run ``call`` (the CLI) and return its exit code, every expected failure said
    in one line on stderr."""
    try:
        result = call()
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.UsageError as exc:
        command = exc.ctx.command_path if exc.ctx else "forktool"
        return fail(exc.format_message(), usage_hint(exc, command))
    except click.ClickException as exc:
        return fail(exc.format_message(), None)
    except FatalError as exc:
        return fail(exc.message, exc.hint)
    except (KeyboardInterrupt, click.Abort) as exc:
        # click turns Ctrl-C into Abort; an Interrupted says what the run left behind.
        said = exc if isinstance(exc, Interrupted) else exc.__cause__
        if isinstance(said, Interrupted):
            return fail(said.message, said.hint, 130)
        return fail("interrupted; nothing was left half-written", None, 130)
    except OSError as exc:
        return _os_error(exc)
    return result if isinstance(result, int) else 0


def fail(message: str, hint: str | None, code: int = 2) -> int:
    click.echo(f"error: {terminal(message)}", err=True)
    if hint:
        click.echo(f"hint: {terminal(hint)}", err=True)
    return code


def usage_hint(exc: click.UsageError, command: str) -> str:
    """Usage help; for a global option given after the command, where it goes."""
    if isinstance(exc, click.NoSuchOption) and exc.option_name in GLOBAL_OPTIONS:
        name = exc.option_name
        sub = command.removeprefix("forktool ")
        usage = f"forktool {name}{GLOBAL_OPTIONS[name]} {sub}"
        return f"{name} is a global option: put it before the command ({usage})"
    return f"run '{command} --help' for usage"


def _os_error(exc: OSError) -> int:
    """A write the file system refused (disk full, file too large, read-only) and a
    user's file that is missing, unreadable or of the wrong kind are exit 2, naming the
    file; any other OSError is a bug: re-raised."""
    from forktool.fsutil import write_refusal
    from forktool.inputs import describe_os_error, is_input_os_error

    if (refused := write_refusal(exc, "a file")) is not None:
        return fail(refused.message, refused.hint)
    if not is_input_os_error(exc, _input_roots()):
        raise exc
    return fail(f"{_shown(exc.filename)}: {describe_os_error(exc)}", None)


def _input_roots() -> tuple[Path, ...]:
    """Where the user's files live: the working directory and the fork's root."""
    app = current_app.get()
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
