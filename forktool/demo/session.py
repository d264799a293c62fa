"""A demo run's state: the directories, the output, the fork, and the surprises so far.

A step is a plain function of a :class:`Demo`: it says what it shows, then runs real
forktool commands in-process against the fork (:meth:`Demo.run`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.text import Text

from forktool.builder import RepoBuilder
from forktool.config import Config, load_config
from forktool.demo.upstream import DemoUpstream
from forktool.output import Output

FORK_MAINTAINER = "Dana Okoye <dana@fork.example>"


@dataclass
class Demo:
    root: Path
    out: Output
    upstream: DemoUpstream
    fork: RepoBuilder
    failures: list[str]
    steps_done: int = 0

    @property
    def fork_path(self) -> Path:
        return self.fork.path

    def say(self, text: str) -> None:
        self.out.print(text, markup=False)

    def step(self, title: str, why: str) -> None:
        self.steps_done += 1
        self.out.print()
        self.out.print(Text(f"== {self.steps_done}. {title}", style="bold cyan"))
        for line in why.strip().splitlines():
            self.out.print(f"   {line.strip()}", markup=False)

    def run(self, args: Sequence[str], *, expect: int = 0) -> int:
        """Run one forktool command on the fork, echoing it; record a surprise."""
        from forktool.cli import run as cli_run

        shown = " ".join(args)
        self.out.print(Text(f"$ forktool {shown}", style="bold"))
        code = cli_run(["-C", str(self.fork_path), *args])
        if code != expect:
            self.failures.append(f"forktool {shown}: exit {code}, expected {expect}")
            self.out.print(Text(f"   (unexpected exit {code}; expected {expect})", style="red"))
        else:
            self.out.print(Text(f"   exit {code}", style="dim"))
        return code


Step = Callable[[Demo], None]


def fork_config(demo: Demo) -> Config:
    """The fork's forktool.yaml as it is now."""
    return load_config(demo.fork_path / "forktool.yaml")
