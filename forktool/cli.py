"""Click wiring: parse, call one function, render, exit. Nothing else lives here.

Exit codes (the public contract): 0 success, 1 the checks ran and found
problems, 2 the command could not run as asked (one ``error:`` line and an
optional ``hint:`` line on stderr, never a traceback).
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import import_module
from keyword import iskeyword
from pathlib import Path

import click

from forktool import __version__
from forktool.app import current_app, start_app
from forktool.error_handler import fail, handled, interrupted
from forktool.faults import faultpoint

# Every command: its name and the first line of its help, shown by 'forktool --help'
# without importing any command. The module is forktool/commands/<name>.py ('-' as
# '_', and a trailing '_' for a Python keyword: import_.py), exposing ``command``.
# Add one line here for a new command; tests/commands/test_cli.py checks the table against
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
    "refresh": "Regenerate every patch of the series against TAG (default: the pinned tag).",
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
    from forktool.config import run_location

    cwd, config_file = run_location(directory, config_file)
    ctx.obj = start_app(cwd, config_file, quiet=quiet, verbose=verbose)


# Commands are added on first use: see ForktoolGroup.


def run(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit code (also used by the tests)."""
    current_app.set(None)
    return handled(lambda: _clicked(argv))


def _clicked(argv: Sequence[str] | None) -> int:
    """click's parse and the command, click's own errors turned into exit codes (the
    rest is :func:`forktool.error_handler.handled`'s)."""
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
        return fail(exc.format_message(), usage_hint(exc, command))
    except click.ClickException as exc:
        return fail(exc.format_message(), None)
    except click.Abort as exc:  # click's word for a Ctrl-C
        return interrupted(exc)
    return result if isinstance(result, int) else 0


# Options of ``forktool`` itself, with the value each takes.
GLOBAL_OPTIONS = {
    "-C": " DIR",
    "--config": " FILE",
    "-q": "",
    "--quiet": "",
    "-v": "",
    "--verbose": "",
}


def usage_hint(exc: click.UsageError, command: str) -> str:
    """Usage help; for a global option given after the command, where it goes."""
    if isinstance(exc, click.NoSuchOption) and exc.option_name in GLOBAL_OPTIONS:
        name = exc.option_name
        sub = command.removeprefix("forktool ")
        usage = f"forktool {name}{GLOBAL_OPTIONS[name]} {sub}"
        return f"{name} is a global option: put it before the command ({usage})"
    return f"run '{command} --help' for usage"
