"""git started for ``verify`` and ``status`` before the command line is parsed.

Most of a short ``verify`` is Python before git can start: the interpreter, click,
the command line interface, the engine. For a plain ``verify`` or ``status`` command
line (the shapes :func:`read_line` reads), the entry point starts git as the command
would (its configuration, its base, the temporary index, the series' round trip)
before click is even imported, and the command takes that work over once click has
parsed the same line (:func:`take`). git then runs while the rest of forktool loads.

Nothing here decides anything: click alone parses the command line, and what was
started is used only by the command it was started for, with the same directory,
config file, base and jobs; otherwise it is stopped (git killed, the temporary index
removed) when the process ends. A line of any other shape, or any problem on the way
(no configuration, no repository, a tag that is not there) leaves nothing started,
and the command does its own work and says what is wrong in its own words.

This module imports no click and no part of forktool that the command would not
import anyway.
"""

from __future__ import annotations

import atexit
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from forktool.app import App
    from forktool.config import Config
    from forktool.engine.apply.early import Verifying

# What each command may be given for git to start at once: options with a value
# (None: read but not needed), and flags. Anything else on the line: no head start.
_GLOBAL_VALUES = {"-C": "directory", "--config": "config_file"}
_GLOBAL_FLAGS = frozenset({"-q", "--quiet"})
_VALUES: dict[str, dict[str, str | None]] = {
    "verify": {"--base": "base", "--jobs": "jobs", "--format": None},
    "status": {"--format": None},
}
_FLAGS = {"verify": frozenset({"--allow-offset", "--keep-going"}), "status": frozenset()}


@dataclass(frozen=True)
class CommandLine:
    """What git's start depends on, as a command line gives it."""

    command: str
    directory: str | None = None
    config_file: str | None = None
    base: str | None = None
    jobs: int | None = None


def read_line(argv: Sequence[str]) -> CommandLine | None:
    """The command line ``argv`` (after the program name) when it is a plain ``verify``
    or ``status``: global ``-C DIR``, ``--config FILE``, ``-q``; then the command and
    only the options in _VALUES and _FLAGS, each at most once, values as separate
    words or after ``=`` (``-CDIR`` too). None for anything else: what click reads in
    another way (repeated options, ``--``, a value that looks like an option, help)
    never starts git here."""
    words = list(argv)
    seen: dict[str, str] = {}
    command = None
    while words:
        word = words.pop(0)
        values = _VALUES[command] if command else _GLOBAL_VALUES
        flags = _FLAGS[command] if command else _GLOBAL_FLAGS
        if command is None and word in _VALUES:
            command = word
            continue
        name, eq, value = word.partition("=")
        if word.startswith("-C") and command is None and len(word) > 2:
            name, eq, value = "-C", "=", word[2:]
        if name in values and name not in seen:
            if not eq:
                if not words:
                    return None
                value = words.pop(0)
            if value.startswith("-") or not value:
                return None
            seen[name] = value
        elif word in flags and word not in seen:
            seen[word] = ""
        else:
            return None
    if command is None:
        return None
    fields: dict[str, str | None] = {**_GLOBAL_VALUES, **_VALUES[command]}
    given: dict[str, str] = {}
    for name, value in seen.items():
        field = fields.get(name)
        if field is not None:
            given[field] = value
    jobs = given.pop("jobs", None)
    if jobs is not None and not (jobs.isascii() and jobs.isdigit() and int(jobs) >= 1):
        return None
    return CommandLine(command, **given, jobs=int(jobs) if jobs is not None else None)


@dataclass
class HeadStart:
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


def begin(argv: Sequence[str]) -> None:
    """Start git for the command line ``argv`` when it is a plain ``verify`` or
    ``status`` (:func:`read_line`); else, or on any problem, start nothing."""
    global _started
    release()  # what an earlier begin in this process left (the tests begin often)
    line = read_line(argv)
    if line is None:
        return
    from forktool.config import config_of, run_location
    from forktool.engine.apply.early import started_on
    from forktool.git import repository

    stack = ExitStack()
    try:
        cwd, config_file = run_location(_path(line.directory), _path(line.config_file))
        config = config_of(cwd, config_file)
        git = repository(config.root)
        verifying = stack.enter_context(started_on(config, git, line.base, line.jobs))
    except Exception:  # the command meets it again, and says it in its own words
        stack.close()
        return
    except BaseException:  # Ctrl-C: nothing left running, then the usual exit
        stack.close()
        raise
    _started = HeadStart(line, cwd, config_file, config, verifying, stack)
    atexit.unregister(release)  # once, however often a process begins (the tests do)
    atexit.register(release)


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
