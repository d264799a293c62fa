"""The ``forktool`` process: which front end reads the line, and the process's edges.

A plain ``verify`` or ``status`` line (the shapes :func:`forktool.head_start.read_line`
reads) has git started at once and runs without click (:mod:`forktool.plain`); any
other line goes through click (:mod:`forktool.cli`). Around either: a name the output
encoding cannot show is written escaped, a Ctrl-C exits 130 without a traceback, a
reader that went away (``| head``) is not an error worth a traceback, and the process
leaves without the interpreter's teardown (:func:`leave`).

Free of click, as the plain path must be.
"""

from __future__ import annotations

import io
import os
import signal
import sys
from collections.abc import Sequence
from typing import NoReturn


def run(argv: Sequence[str]) -> int:
    """Run forktool on ``argv`` (after the program name) and return its exit code: a
    plain line whose git started runs without click, any other through click. A
    Ctrl-C while the CLI loads propagates (the caller exits 130); one in a command is
    that command's exit 130. Also what the tests run."""
    from forktool.head_start import begin

    started = begin(argv)
    if started is not None:
        from forktool.plain import run_line

        return run_line(started)
    from forktool.cli import run as run_cli

    return run_cli(argv)


def main() -> None:
    """The ``forktool`` command (and ``python -m forktool``)."""
    _escape_unencodable()
    signal.signal(signal.SIGINT, _on_sigint)
    try:
        code = run(sys.argv[1:])
        sys.stdout.flush()
    except KeyboardInterrupt:  # while the CLI loaded: what was started stops at exit
        code = 130
    except BrokenPipeError:
        # The reader went away (e.g. `| head`); do not print a traceback.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        code = 1
    if _sigint_seen and code != 130:
        # Python drops an exception raised in a finalizer (Popen.__del__, an import
        # lock's callback): the Ctrl-C that landed there did not stop the run, which
        # went on to the end. It still exits as an interrupted run does.
        from forktool.error_handler import fail

        code = fail("interrupted (the run had finished: its output is complete)", None, 130)
    leave(code)


def _escape_unencodable() -> None:
    """A patch name the output encoding cannot show (``PYTHONIOENCODING=ascii``, a
    latin-1 locale) is written escaped (``\\xe9``), never a crash."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


_sigint_seen = False


def _on_sigint(signum: int, frame: object) -> None:
    """Python's own Ctrl-C handler (a KeyboardInterrupt), remembering it came."""
    global _sigint_seen
    _sigint_seen = True
    raise KeyboardInterrupt


def leave(code: int) -> NoReturn:
    """Exit with ``code`` without the interpreter's teardown.

    After a run everything forktool owns is already closed: each temporary index,
    scratch directory, lock and git child is released by the ``with`` block that made
    it, and the output was flushed. What is left is freeing every object and module
    one by one, 20-30 ms after a 200-patch ``verify`` (docs/performance.md), which a
    CI gate pays on every run. The exit functions still run (atexit), and both
    streams are flushed; while another thread is alive (never, after a command) the
    normal exit waits for it as Python would."""
    import atexit
    import threading

    if threading.active_count() > 1:
        sys.exit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader gone, a stream closed: nothing to say it on
            pass
    os._exit(code)
