"""The click options and checks commands share (``--format``, ``--drop-file``, paths
made absolute against ``-C DIR``, options that exclude each other), and the
decorator that hands a command its :class:`~forktool.app.App`.

Command modules import this module and :mod:`forktool.app`, never ``forktool.cli``
(which loads them).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import click

from forktool.app import App
from forktool.head_start import FORMATS

F = TypeVar("F", bound=Callable[..., Any])


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


pass_app = click.make_pass_decorator(App)


def format_option(*choices: str) -> Callable[[F], F]:
    names = choices or FORMATS
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
