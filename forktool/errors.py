"""The one expected-failure type, and the finding that checks report.

A ``FatalError`` means "the command could not run as asked" (exit 2): bad usage,
bad or missing input, an unknown tag, git refusing. The CLI turns it into one
``error:`` line plus an optional ``hint:`` line. Findings are different: they are
what a check *found* (exit 1), and they travel inside result objects.
"""

from __future__ import annotations

import shlex
import signal
from collections.abc import Iterable, Sequence
from typing import Literal, NamedTuple

Severity = Literal["error", "warning", "info"]


def command_line(*words: object) -> str:
    """A command for a hint or report, each word shell-quoted: pasted into a shell it
    runs exactly this command, whatever a tag, branch, path or URL in it contains
    (``v1;touch x`` stays one argument). Every command line forktool shows is built here."""
    return " ".join(shlex.quote(str(word)) for word in words)


SHOWN_NAMES = 5  # a message names this many things, then counts the rest


def some_names(names: Sequence[str], shown: int = SHOWN_NAMES) -> str:
    """``names`` for a message: the first ``shown``, then how many more (a release that
    absorbs twenty patches makes a readable line, not twenty)."""
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")


class Finding(NamedTuple):
    """One problem a check found, anchored to a file and line where there is one."""

    severity: Severity
    message: str
    path: str | None = None
    line: int | None = None
    hint: str | None = None

    def location(self) -> str:
        if self.path is None:
            return ""
        return f"{self.path}:{self.line}" if self.line else self.path

    def render(self) -> str:
        where = self.location()
        return f"{where}: {self.message}" if where else self.message

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "severity": self.severity,
            "message": self.message,
            "path": self.path,
            "line": self.line,
        }
        if self.hint:
            data["hint"] = self.hint
        return data


class FatalError(Exception):
    """The command cannot run as asked. Exit 2, nothing changed."""

    exit_code = 2

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class InputError(FatalError):
    """One or more of the fork's files is malformed; carries every finding."""

    def __init__(self, findings: list[Finding], hint: str | None = None) -> None:
        if not findings:
            raise ValueError("InputError needs at least one finding")
        first = findings[0]
        more = f" (and {len(findings) - 1} more)" if len(findings) > 1 else ""
        super().__init__(first.render() + more, hint or first.hint)
        self.findings = findings


class GitError(FatalError):
    """A git command failed; names what forktool was trying to do."""

    def __init__(
        self, purpose: str, argv: list[str], returncode: int, stderr: str, hint: str | None = None
    ) -> None:
        said = git_said(stderr) or _death(returncode)
        super().__init__(f"git could not {purpose}: {said}", hint or _death_hint(returncode))
        self.purpose = purpose
        self.argv = argv
        self.returncode = returncode
        self.stderr = stderr


def git_said(stderr: str) -> str | None:
    """The line of git's stderr that says what went wrong: the first ``fatal:`` or
    ``error:`` line (later ones are consequences: "Could not read from remote
    repository", "and the repository exists."), else the last line that is no hint."""
    lines = [line.strip() for line in stderr.splitlines()]
    lines = [line for line in lines if line and not line.startswith("hint:")]
    first = next((line for line in lines if line.startswith(("fatal:", "error:"))), None)
    return first or (lines[-1] if lines else None)


def _death(returncode: int) -> str:
    if returncode >= 0:
        return f"exit status {returncode}"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = f"signal {-returncode}"
    return f"killed by {name}"


def _death_hint(returncode: int) -> str | None:
    if returncode == -signal.SIGXFSZ:
        return "the file size limit (ulimit -f) is too small: raise it, then run the command again"
    return None


def rolled_back(exc: FatalError, what: str) -> FatalError:
    """``exc`` restated after ``what`` was undone, saying that nothing changed (exit 2
    means exactly that); a GitError already says git's cause line."""
    return FatalError(f"{exc.message}; {what}", exc.hint)


def errors_only(findings: Iterable[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity == "error"]


def require_no_errors(findings: Iterable[Finding]) -> None:
    """Refuse (exit 2, every error carried) when any finding is an error; warnings pass."""
    problems = errors_only(findings)
    if problems:
        raise InputError(problems)


class Interrupted(KeyboardInterrupt):
    """Ctrl-C, with what it left behind said precisely (exit 130)."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
