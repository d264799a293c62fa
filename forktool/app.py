"""What every command module needs from the CLI: the App, its options, one emitter.

Command modules import this module, never ``forktool.cli`` (which loads them).
It imports only click at start-up: the fork's configuration, git, the lock and the
terminal (rich) are loaded when a command first asks for them, so that
``forktool --help`` stays close to a bare interpreter.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import click

if TYPE_CHECKING:
    from forktool.config import Config
    from forktool.fork import Fork
    from forktool.git import Git
    from forktool.output import Output

F = TypeVar("F", bound=Callable[..., Any])


class Result(Protocol):
    """What a command emits: an engine result that knows its JSON shape."""

    def to_json(self) -> Mapping[str, Any]: ...


R = TypeVar("R", bound=Result)


@dataclass
class App:
    """What every command needs: where the fork is, and how to talk to the user."""

    cwd: Path
    config_file: Path | None
    output: Output
    _config: Config | None = field(default=None, repr=False)
    _forks: dict[bool, Fork] = field(default_factory=dict, repr=False)

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


def exclusive(options: Mapping[str, object], *, required: bool = False) -> None:
    """The one check of options that exclude each other: a usage error (exit 2) when
    more than one of ``options`` (shown name -> value) is given, or, ``required``, when
    not exactly one is."""
    given = [name for name, value in options.items() if value not in (None, False, (), "")]
    names = list(options)
    if required and len(given) != 1:
        raise click.UsageError(f"give exactly one of {', '.join(names)}")
    if len(given) > 1:
        raise click.UsageError(f"{', '.join(given[:-1])} and {given[-1]} are mutually exclusive")


def together(option: str, value: object, needs: str, present: object) -> None:
    """A usage error when ``option`` is given without ``needs`` (``--worktree`` goes
    with ``--onto``)."""
    if value not in (None, False, (), "") and present in (None, False, (), ""):
        raise click.UsageError(f"{option} goes with {needs}")


def notice(message: str) -> None:
    """One line on stderr about something forktool did on its own (never wrapped)."""
    from forktool.escape import terminal

    click.echo(f"notice: {terminal(message)}", err=True)


pass_app = click.make_pass_decorator(App)


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


def drop_file_option() -> Callable[[F], F]:
    """``--drop-file PATH`` for ``refresh --continue`` and ``sync --continue``."""
    return click.option(
        "--drop-file",
        "drop_files",
        multiple=True,
        metavar="PATH",
        help="With --continue: the resolution leaves out this file of the patch, on purpose "
        "(repeatable).",
    )


class UserPath(click.Path):
    """A path option or argument, made absolute against ``-C DIR`` (the working
    directory the command runs as if started in), then checked like ``click.Path``."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        app = ctx.find_object(App) if ctx is not None else None
        if app is not None and isinstance(value, str | bytes | os.PathLike):
            given = os.fsdecode(value)
            if not os.path.isabs(given):
                value = app.cwd / given
        return super().convert(value, param, ctx)


def user_path(*, file_okay: bool = True, dir_okay: bool = True) -> UserPath:
    """A ``UserPath`` that yields a ``pathlib.Path``."""
    return UserPath(file_okay=file_okay, dir_okay=dir_okay, path_type=Path)


def tarball_option(what: str) -> Callable[[F], F]:
    """``--tarball FILE`` (repeatable, into ``tarballs``): TAG's release tarball and its
    component tarballs; ``what`` says what the command does with them."""
    return click.option(
        "--tarball",
        "tarballs",
        multiple=True,
        type=user_path(dir_okay=False),
        help=f"TAG's release tarball (repeat for component tarballs): {what}",
    )
