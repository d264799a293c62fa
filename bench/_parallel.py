"""What bounds ``verify --jobs 2`` on this machine, measured beside it (bench/verify).

Two numbers say how far below the raw floor the side-by-side path can go here:

- **bins alone**: ``verify --jobs 2`` cut down to its git half. The process starts as
  the CLI does, reads the series and starts the bins (the head start,
  :mod:`forktool.head_start`), waits until every bin went forward and back, and exits:
  no fork load, no parse, no verdicts, no output. The CLI's time over this one is
  Python's own work beside git (the rest of the imports, the fork load, every patch's
  parse, the verdicts, the JSON).
- **two cores' worth**: the series forward (one ``git apply --cached``) alone, and two
  of it at once, each on its own index. Two cores that run two git processes at full
  speed take as long for two as for one; a virtual machine whose two cores share a
  host's take longer. ``2 x one / two`` is how many cores' work this machine gave.
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

# Exit 0 once every bin went forward and back and left the base tree; 3 when the head
# start did not run the series in bins (then there is no git half to time).
BINS_ALONE = """
import sys
from forktool.head_start import begin
started = begin(sys.argv[1:])
early = started.verifying.early if started is not None else None
if early is None or early.bins is None:
    sys.exit(3)
early.bins.forwards()
early.bins.results()
sys.exit(0 if all(run.tree == early.base_tree for run in early.bins.runs) else 4)
"""


def private_index(tmp: Path, fork: Path, name: str = "") -> dict[str, str]:
    """git's environment for a temporary index in ``tmp`` whose new objects go to a
    directory of their own there (``name`` tells several apart), reading ``fork``'s:
    how the raw contenders keep the fork's repository as it was."""
    objects = tmp / f"objects{name}"
    objects.mkdir()
    return {
        "GIT_INDEX_FILE": str(tmp / f"index{name}"),
        "GIT_OBJECT_DIRECTORY": str(objects),
        "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(fork / ".git" / "objects"),
    }


def raw_forward(
    fork: Path,
    base: str,
    patches: Sequence[Path],
    scratch: Path,
    copies: int,
    env_of: Callable[[dict[str, str]], dict[str, str]],
) -> float:
    """Seconds for ``copies`` ``git apply --cached`` calls of the whole series at once,
    each on its own index holding ``base`` (loaded before the clock starts)."""
    with tempfile.TemporaryDirectory(prefix="par-", dir=scratch) as tmp:
        envs = []
        for n in range(copies):
            env = env_of(private_index(Path(tmp), fork, str(n)))
            subprocess.run(["git", "read-tree", base], cwd=fork, env=env, check=True)
            envs.append(env)
        names = [str(p) for p in patches]
        start = time.perf_counter()
        calls = [
            subprocess.Popen(
                ["git", "apply", "--cached", "--whitespace=nowarn", *names], cwd=fork, env=env
            )
            for env in envs
        ]
        codes = [call.wait() for call in calls]
        seconds = time.perf_counter() - start
    if any(codes):
        raise SystemExit(f"raw forward: git apply exited {codes}")
    return seconds


def cores_worth(one: float, two: float) -> float:
    """How many cores' work two git processes at once got: 2.0 on two free cores."""
    return 2 * one / two if two > 0 else 0.0
