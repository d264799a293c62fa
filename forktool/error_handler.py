"""Expected failures become one ``error:`` line, an optional ``hint:`` and an exit code.

Every way a command can fail on purpose ends here: a :class:`FatalError` (2), click's
usage errors (2, turned into one line by :func:`forktool.cli.run`), Ctrl-C (130,
saying what the run left behind), a file the user named that is missing or
unreadable and a write the file system refused (2, naming the file). Anything else
is a bug and keeps its traceback. Free of click: a plain ``verify`` line runs
without it (:mod:`forktool.plain`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from forktool.app import current_app
from forktool.errors import FatalError, Interrupted
from forktool.output import say


def handled(call: Callable[[], object]) -> int:
    """Run ``call`` (a command, parsed by click or read from a plain line) and return
    its exit code, every expected failure said in one line on stderr. click's own
    errors (usage, ``--help``) are turned into exit codes where click runs
    (:func:`forktool.cli.run`): this module is free of click."""
    try:
        result = call()
    except FatalError as exc:
        return fail(exc.message, exc.hint)
    except KeyboardInterrupt as exc:
        return interrupted(exc)
    except OSError as exc:
        return _os_error(exc)
    return result if isinstance(result, int) else 0


def interrupted(exc: BaseException) -> int:
    """Exit 130 for a Ctrl-C (``exc``: the KeyboardInterrupt, or click's ``Abort``
    raised from it); an :class:`Interrupted` says what the run left behind."""
    said = exc if isinstance(exc, Interrupted) else exc.__cause__
    if isinstance(said, Interrupted):
        return fail(said.message, said.hint, 130)
    return fail("interrupted; nothing was left half-written", None, 130)


def fail(message: str, hint: str | None, code: int = 2) -> int:
    say("error", message)
    if hint:
        say("hint", hint)
    return code


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
