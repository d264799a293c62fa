"""git started for ``verify`` and ``status`` before anything else, and their line read
without click.

Most of a short ``verify`` is Python before git can start: the interpreter, click,
the command line interface, the engine. For a plain ``verify`` or ``status`` command
line (the shapes :func:`read_line` reads), the entry point starts git as the command
would (its configuration, its base, the temporary index, the series' round trip)
before anything else is imported, and the command runs without click on what
:func:`read_line` read (:mod:`forktool.plain`), taking that work over (:func:`take`).
git then runs while the rest of forktool loads.

:func:`read_line` reads only lines click reads the same way, option by option (a
property test holds the two readings together); any other line goes through click.
What was started is used only by the command it was started for, with the same
directory, config file, base and jobs; otherwise it is stopped (git killed, the
temporary index removed) at once or when the process ends. A line of any other
shape, or any problem on the way (no configuration, no repository, a tag that is not
there) leaves nothing started, and the command, through click, does its own work and
says what is wrong in its own words.

This module imports no click and no part of forktool that the command would not
import anyway.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from forktool.app import App
    from forktool.config import Config
    from forktool.engine.apply.early import Verifying

# What each command may be given for git to start at once: options with a value and
# the field each fills, and flags with theirs. Anything else on the line: no head start.
_GLOBAL_VALUES = {"-C": "directory", "--config": "config_file"}
_GLOBAL_FLAGS = {"-q": "quiet", "--quiet": "quiet"}
_VALUES: dict[str, dict[str, str]] = {
    "verify": {"--base": "base", "--jobs": "jobs", "--format": "fmt"},
    "status": {"--format": "fmt"},
}
_FLAGS = {
    "verify": {"--allow-offset": "allow_offset", "--keep-going": "keep_going"},
    "status": {},
}
# What --format takes where a command has no other formats (forktool.options'
# format_option), verify and status among them.
FORMATS = ("text", "json")


class CommandLine(NamedTuple):
    """A plain line as click would read it: the command, the global options, and the
    command's own (those a command does not have keep their defaults)."""

    command: str
    directory: str | None = None
    config_file: str | None = None
    quiet: bool = False
    base: str | None = None
    jobs: int | None = None
    fmt: str = "text"
    allow_offset: bool = False
    keep_going: bool = False


def read_line(argv: Sequence[str]) -> CommandLine | None:
    """The command line ``argv`` (after the program name) when it is a plain ``verify``
    or ``status``: global ``-C DIR``, ``--config FILE``, ``-q``; then the command and
    only the options in _VALUES and _FLAGS, each at most once, values as separate
    words or after ``=`` (``-CDIR`` too), ``--jobs`` a whole number of at least 1 and
    ``--format`` one of :data:`FORMATS`. None for anything else: what click reads in
    another way or refuses (repeated options, ``--``, a value that looks like an
    option, help) never starts git here, and goes through click."""
    words = list(argv)
    given: dict[str, str] = {}
    flags: set[str] = set()
    command = None
    while words:
        word = words.pop(0)
        values = _VALUES[command] if command else _GLOBAL_VALUES
        named = _FLAGS[command] if command else _GLOBAL_FLAGS
        if command is None and word in _VALUES:
            command = word
            continue
        name, eq, value = word.partition("=")
        if word.startswith("-C") and command is None and len(word) > 2:
            name, eq, value = "-C", "=", word[2:]
        if name in values and values[name] not in given:
            if not eq:
                if not words:
                    return None
                value = words.pop(0)
            if value.startswith("-") or not value:
                return None
            given[values[name]] = value
        elif word in named and word not in flags:
            flags.add(word)
            given[named[word]] = ""
        else:
            return None
    if command is None:
        return None
    jobs = given.pop("jobs", None)
    if jobs is not None and not (jobs.isascii() and jobs.isdigit() and int(jobs) >= 1):
        return None
    fmt = given.get("fmt", "text")
    if fmt not in FORMATS:
        return None
    return CommandLine(
        command,
        directory=given.get("directory"),
        config_file=given.get("config_file"),
        quiet="quiet" in given,
        base=given.get("base"),
        jobs=int(jobs) if jobs is not None else None,
        fmt=fmt,
        allow_offset="allow_offset" in given,
        keep_going="keep_going" in given,
    )


class HeadStart(NamedTuple):
    """git started for ``line``: the run's directory and config file, the
    configuration read, and the work under way (held open by ``stack``)."""

    line: CommandLine
    cwd: Path
    config_file: Path | None
    config: Config
    verifying: Verifying
    stack: ExitStack

    def __enter__(self) -> Verifying:
        return self.verifying

    def __exit__(self, *exc: Any) -> None:
        self.stack.__exit__(*exc)  # an error in the command stops git at once

    def stop(self) -> None:
        """Stop git now (not once it is done) and remove the temporary index."""
        if self.verifying.early is not None:
            self.verifying.early.stop()
        self.stack.close()


_started: HeadStart | None = None


def begin(argv: Sequence[str]) -> HeadStart | None:
    """Start git for the command line ``argv`` when it is a plain ``verify`` or
    ``status`` (:func:`read_line`), and return what was started (the line, where it
    runs, git's work), for the command to run without click
    (:func:`forktool.plain.run_line`); else, or on any problem, start nothing and
    return None (click then reads the line)."""
    global _started
    release()  # what an earlier begin in this process left (the tests begin often)
    line = read_line(argv)
    if line is None or (line.config_file is not None and os.path.isdir(line.config_file)):
        return None  # click refuses a --config that is a directory where forktool started
    from forktool.config import config_of, run_location
    from forktool.engine.apply.early import started_on
    from forktool.git import commit_spec, repository

    stack = ExitStack()
    try:
        cwd, config_file = run_location(_path(line.directory), _path(line.config_file))
        config = config_of(cwd, config_file)
        git = repository(config.root, commit_spec(line.base, config.pin_tag))
        verifying = stack.enter_context(started_on(config, git, line.base, line.jobs))
    except Exception:  # the command meets it again, and says it in its own words
        stack.close()
        return None
    except BaseException:  # Ctrl-C: nothing left running, then the usual exit
        stack.close()
        raise
    _started = HeadStart(line, cwd, config_file, config, verifying, stack)
    atexit.unregister(release)  # once, however often a process begins (the tests do)
    atexit.register(release)
    return _started


def _path(given: str | None) -> Path | None:
    return None if given is None else Path(given)


def take(
    command: str, cwd: Path, config_file: Path | None, base: str | None, jobs: int | None
) -> HeadStart | None:
    """What was started for this very run, for the command to carry on with (it then
    closes it); None when nothing was, or when it was started on anything else than
    ``command`` in ``cwd`` with ``config_file``, ``base`` and ``jobs`` (it is then
    stopped at once)."""
    global _started
    started, _started = _started, None
    if started is None:
        return None
    line = started.line
    if (command, cwd, config_file, base, jobs) != (
        line.command,
        started.cwd,
        started.config_file,
        line.base,
        line.jobs,
    ):
        started.stop()
        return None
    return started


@contextmanager
def verifying(command: str, app: App, base: str | None, jobs: int | None) -> Iterator[Verifying]:
    """git's work on the series for ``command``: what the head start began for this
    very line (the run then uses the configuration it read), or started now
    (:func:`forktool.engine.apply.early.started_on`, which refuses a base that
    cannot be resolved)."""
    taken = take(command, app.cwd, app.config_file, base, jobs)
    if taken is not None:
        app.use_config(taken.config)
        with taken as run:
            yield run
        return
    from forktool.engine.apply.early import started_on

    with started_on(app.config(), app.git(), base, jobs) as run:
        yield run


def release() -> None:
    """Stop what was started and not taken (at the process's end)."""
    global _started
    started, _started = _started, None
    if started is not None:
        started.stop()
