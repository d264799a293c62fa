"""What every command needs: the App (where the fork is, how to talk to the user),
one emitter, and the one-line notice.

Free of click: a plain ``verify`` or ``status`` line runs without it
(:mod:`forktool.plain`); the click options commands share are in
:mod:`forktool.options`. Command modules import these two, never ``forktool.cli``
(which loads them). The fork's configuration, git, the lock and the terminal (rich)
are loaded when a command first asks for them, so that ``forktool --help`` stays
close to a bare interpreter.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar

if TYPE_CHECKING:
    from forktool.config import Config
    from forktool.fork import Fork
    from forktool.git import Git
    from forktool.output import Output


class Result(Protocol):
    """What a command emits: an engine result that knows its JSON shape."""

    def to_json(self) -> Mapping[str, Any]: ...


R = TypeVar("R", bound=Result)


class App:
    """What every command needs: where the fork is, and how to talk to the user."""

    def __init__(self, cwd: Path, config_file: Path | None, output: Output) -> None:
        self.cwd: Final = cwd
        self.config_file: Final = config_file
        self.output: Final = output
        self._config: Config | None = None
        self._forks: dict[bool, Fork] = {}

    def __repr__(self) -> str:
        return f"App(cwd={str(self.cwd)!r}, config_file={self.config_file!r})"

    def config(self) -> Config:
        from forktool.config import config_of

        if self._config is None:
            self._config = config_of(self.cwd, self.config_file)
        return self._config

    def use_config(self, config: Config) -> None:
        """Take ``config`` as this run's configuration (read before the command line
        was parsed, by :mod:`forktool.head_start`, for the same directory and file)."""
        self._config = config
        self._forks.clear()

    def fork(self, *, strict: bool = True) -> Fork:
        """The fork's files, read once per command. :meth:`lock` forgets them: a fork
        asked for under the lock is read again (another run may have changed it)."""
        from forktool.fork import load_fork

        if strict not in self._forks:
            self._forks[strict] = load_fork(self.config(), strict=strict)
        return self._forks[strict]

    def git(self) -> Git:
        from forktool.git import repository

        return repository(self.config().root)

    @contextmanager
    def lock(self, git: Git | None = None, root: Path | None = None) -> Iterator[None]:
        """Hold the fork's lock for the whole of a mutating command.

        The lock lives in the repository's COMMON git directory, so a sync's worktree
        and the main checkout exclude each other. Once it is held, whatever a killed
        run left behind is finished or removed, with a one-line notice for each.
        """
        from forktool.fsutil import fork_lock, recover_interrupted

        git = git or self.git()
        common = git.common_dir()
        with fork_lock(common) as stale:
            if stale is not None:
                notice(f"took over the lock of a forktool run that is gone (pid {stale})")
            for message in recover_interrupted(common, root or self.config().root):
                notice(message)
            self._config = None  # read again: the fork may have changed until now
            self._forks.clear()
            yield

    def emit(
        self,
        result: R,
        fmt: str,
        render: Callable[[Output, R], None],
        *,
        writers: Mapping[str, Callable[[R], str]] | None = None,
        extra: Mapping[str, object] | None = None,
    ) -> None:
        """Show ``result`` in the format the user chose: the one way a command answers.

        ``json`` is the result's ``to_json()`` (the public contract) plus ``extra``
        fields the command adds; ``render`` draws it as text; ``writers`` hold any
        other format (junit, markdown, ...) as text.
        """
        if writers and fmt in writers:
            sys.stdout.write(writers[fmt](result))
        elif fmt == "json":
            self.output.json({**result.to_json(), **(extra or {})})
        else:
            render(self.output, result)


# The App of the running command (set by :func:`start_app`): where the user's files
# live, for the error handler's messages.
current_app: ContextVar[App | None] = ContextVar("forktool_app", default=None)


def notice(message: str) -> None:
    """One line on stderr about something forktool did on its own (never wrapped)."""
    from forktool.output import say

    say("notice", message)


def start_app(cwd: Path, config_file: Path | None, *, quiet: bool, verbose: bool) -> App:
    """The run's App for ``cwd`` and ``config_file`` (as :func:`forktool.config.run_location`
    gives them), made the current one, with git's narration (``-v``) and the
    commit-graph notice (not with ``-q``) set up: what ``forktool``'s global options
    do, with click (:mod:`forktool.cli`) or for a plain line (:mod:`forktool.plain`)."""
    from forktool.git import set_graph_notice, set_observer
    from forktool.output import Output

    app = App(cwd=cwd, config_file=config_file, output=Output(quiet=quiet, verbose=verbose))
    current_app.set(app)
    set_observer(_git_narrator(app.output) if verbose else None)
    set_graph_notice(None if quiet else notice)
    return app


def _git_narrator(output: Output) -> Callable[[str, Sequence[str], int], None]:
    """With -v, each git command forktool runs, on stderr: what for, what, and its exit."""

    import shlex

    def narrate(purpose: str, args: Sequence[str], code: int) -> None:
        shown = " ".join(shlex.quote(a) for a in args)
        output.detail(f"git {shown}  # {purpose} (exit {code})")

    return narrate
