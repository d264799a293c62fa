"""Interrupted runs: SIGINT and SIGKILL at every write point of every mutating command.

Each command runs once with ``FORKTOOL_FAULT_LOG`` to list its write points. Then,
for every point and both signals, a fresh copy of the fork runs the command in a
subprocess with ``FORKTOOL_FAULT=<point>:<nth>:<signal>``, and we check that the
fork is entirely as before or entirely as after (a SIGKILL after the commit point
leaves a journal the next run finishes), and that running the command again
succeeds, ends entirely as after, leaves nothing behind, and says what it cleaned.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from testing.helpers import snapshot_tree
from testing.sync_fork import IDENTITY, build_sync_fork

from forktool.builder import RepoBuilder
from forktool.demo import DemoUpstream
from forktool.fsutil import BACKUP_MARK, JOURNAL_NAME, TMP_MARK, leftover_temp_files
from forktool.git import Git

# A step of a long command, named as it starts (piped: one line each on stderr).
STEP = re.compile(r"^[a-z]+: .* \(\d+/\d+\)\n")
pytestmark = pytest.mark.slow  # fault injection: every write point, both signals

ENV = {
    **IDENTITY,
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
    "FORKTOOL_DATE": "2024-01-01",
    "NO_COLOR": "1",
}


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str


def _default_sigint() -> None:
    """In the child: Ctrl-C as a terminal gives it, even when pytest runs with SIGINT
    ignored (nohup, some supervisors), whose children would inherit the ignoring."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def forktool(root: Path, args: Sequence[str], **env: str) -> Run:
    # A killed run leaves its temporary directories behind: keep them beside the fork,
    # in the test's own directory, never in the machine's temp directory.
    tmp = root.parent / f"{root.name}.tmp"
    tmp.mkdir(exist_ok=True)
    res = subprocess.run(
        [sys.executable, "-m", "forktool", "-C", str(root), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **ENV, "TMPDIR": str(tmp), **env},
        timeout=120,
        preexec_fn=_default_sigint,
    )
    return Run(res.returncode, res.stdout, res.stderr)


def git(root: Path, *args: str) -> str:
    return Git(root).out(list(args), purpose="inspect the test fork")


def fork_files(root: Path) -> dict[str, bytes]:
    """The fork's files, without temporary files a kill left (checked on their own)."""
    return {
        k: v
        for k, v in snapshot_tree(root).items()
        if not k.startswith(".git") and TMP_MARK not in k and BACKUP_MARK not in k
    }


def refs_and_worktrees(root: Path) -> tuple[str, int, bool]:
    """Branches, how many worktrees git knows, and whether a sync is in progress."""
    common = Git(root).common_dir()
    return (
        git(root, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads"),
        len(git(root, "worktree", "list", "--porcelain").split("\n\n")),
        (common / "forktool" / "sync" / "state.json").exists(),
    )


def state(root: Path) -> tuple[object, ...]:
    """What an interruption must leave entirely as before or as after."""
    return (fork_files(root), refs_and_worktrees(root))


def leftovers(root: Path) -> list[str]:
    common = Git(root).common_dir()
    found = [str(p) for p in leftover_temp_files(root)]
    found += (
        [str(p) for p in leftover_temp_files(common / "forktool")]
        if (common / "forktool").is_dir()
        else []
    )
    if (common / JOURNAL_NAME).exists():
        found.append(JOURNAL_NAME)
    if (common / "forktool.lock").exists():
        found.append("forktool.lock")
    return found


def write_points(base: Path, work: Path, args: Sequence[str]) -> list[tuple[str, int]]:
    """Every (point, nth) the command reaches, in order."""
    copy = work / "enumerate"
    shutil.copytree(base, copy, symlinks=True)
    log = work / "points.log"
    run = forktool(copy, args, FORKTOOL_FAULT_LOG=str(log))
    assert run.code in (0, 1), run.err
    seen: Counter[str] = Counter()
    points = []
    for name in log.read_text().split():
        seen[name] += 1
        points.append((name, seen[name]))
    return points


@dataclass(frozen=True)
class Scenario:
    args: tuple[str, ...]
    resume: tuple[str, ...] | None = None  # how to go on when a killed run left its state
    expect: int = 0


def check_every_point(
    base: Path,
    work: Path,
    scenario: Scenario,
    *,
    keep: Callable[[str, int], bool] = lambda name, nth: True,
) -> list[tuple[str, int]]:
    """Interrupt ``scenario`` at every write point with both signals; return the points."""
    before = state(base)
    reference = work / "reference"
    shutil.copytree(base, reference, symlinks=True)
    done = forktool(reference, scenario.args)
    assert done.code == scenario.expect, done.err
    after = state(reference)
    assert after != before, "the command must change something"
    points = write_points(base, work, scenario.args)
    assert points, "the command reached no write point"

    def one(case: tuple[str, int, str]) -> str | None:
        name, nth, sig = case
        copy = work / f"{name}-{nth}-{sig}"
        shutil.copytree(base, copy, symlinks=True)
        cut = forktool(copy, scenario.args, FORKTOOL_FAULT=f"{name}:{nth}:{sig}")
        label = f"{name}#{nth} SIG{sig}"
        if sig == "INT":
            said = "".join(
                line for line in cut.err.splitlines(keepends=True) if not STEP.match(line)
            )
            if cut.code != 130 or not said.lstrip("\n").startswith("error: interrupted"):
                return f"{label}: exit {cut.code}, stderr {cut.err!r}"
            if leftovers(copy):
                return f"{label}: left {leftovers(copy)}"
        elif cut.code != -9:
            return f"{label}: exit {cut.code} (not killed), stderr {cut.err!r}"
        journal = (Git(copy).common_dir() / JOURNAL_NAME).exists()
        now = state(copy)
        synced = now[1][2]  # a killed sync leaves its state for --continue/--abort
        if now not in (before, after) and not journal and not synced:
            return f"{label}: the fork is neither as before nor as after"
        had_leftovers = bool(leftovers(copy))
        again = forktool(copy, scenario.resume if synced and scenario.resume else scenario.args)
        if scenario.resume and again.code == 2 and state(copy)[1][2]:
            said = again.err  # the rerun finished the state's write, and said so
            again = forktool(copy, scenario.resume)
            again = Run(again.code, again.out, said + again.err)
        # A rerun on a fork the cut run had already finished may refuse as a no-op
        # (retire --undo: "nothing to undo"): one error line, exit 2, nothing changed.
        finished = now[0] == after[0] or journal
        refused = again.code == 2 and finished and again.err.count("error: ") == 1
        if again.code not in (0, 1) and not refused:
            return f"{label}: the rerun exited {again.code}: {again.err!r}"
        if now == before and not journal and again.code != scenario.expect:
            return f"{label}: the rerun exited {again.code}: {again.err!r}"
        if state(copy) != after:
            return f"{label}: after the rerun the fork is not as after"
        if had_leftovers and "notice: " not in again.err and not synced:
            return f"{label}: the rerun cleaned up without saying so: {again.err!r}"
        if leftovers(copy):
            return f"{label}: the rerun left {leftovers(copy)}"
        return None

    last = Counter(name for name, _ in points)  # a point met N times: its first and last
    chosen = [(name, nth) for name, nth in points if nth in (1, last[name]) and keep(name, nth)]
    cases = [(name, nth, sig) for name, nth in chosen for sig in ("INT", "KILL")]
    with ThreadPoolExecutor(max_workers=min(16, (os.cpu_count() or 2) * 2)) as pool:
        failures = [f for f in pool.map(one, cases) if f]
    assert failures == [], "\n".join(failures)
    return points


# -- the forks -------------------------------------------------------------------------


P1 = "0001-config-do-not-crash-on-an-empty-config-file.patch"


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory, demo_upstream: DemoUpstream) -> Path:
    from forktool.demo.walkthrough import setup_fork

    return setup_fork(tmp_path_factory.mktemp("example"), demo_upstream).path


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """test_sync's fork: v2 retires 0001, keeps 0002, rebases 0003, conflicts 0004."""
    repo = build_sync_fork(RepoBuilder.init(tmp_path_factory.mktemp("small") / "repo"))
    repo.git.run(["config", "user.name", IDENTITY["GIT_AUTHOR_NAME"]], purpose="identity")
    repo.git.run(["config", "user.email", IDENTITY["GIT_AUTHOR_EMAIL"]], purpose="identity")
    return repo.path


def variant(base: Path, work: Path, name: str, *commands: Sequence[str]) -> Path:
    """A copy of ``base`` with ``commands`` run and the result committed."""
    root = work / name
    shutil.copytree(base, root, symlinks=True)
    for args in commands:
        if args[0] == "git":
            subprocess.run(
                args, cwd=root, check=True, capture_output=True, env={**os.environ, **ENV}
            )
        else:
            assert forktool(root, args).code == 0
    return root


def commit_all(message: str) -> list[str]:
    return ["git", "commit", "-qam", message]


# -- the commands -----------------------------------------------------------------------


def test_retire_survives_an_interruption_at_every_write_point(
    example: Path, tmp_path: Path
) -> None:
    # The example pins v1.1.0, which lacks 0001's fix: retiring it takes --force --reason.
    forced = ("--force", "--reason", "the pin moves next")
    points = check_every_point(
        example, tmp_path, Scenario(("retire", P1, "--tag", "v1.2.0", *forced))
    )
    assert {"fsutil.temp", "fsutil.journal", "fsutil.move", "fsutil.cleanup"} <= {
        name for name, _ in points
    }


def test_retire_undo_survives_an_interruption_at_every_write_point(
    example: Path, tmp_path: Path
) -> None:
    retired = variant(
        example,
        tmp_path,
        "retired",
        ["retire", P1, "--tag", "v1.2.0", "--force", "--reason", "the pin moves next"],
        commit_all("retire"),
    )
    undo = ("retire", "--undo", "0001-config-do-not-crash-on-an-empty-config-file.patch")
    check_every_point(retired, tmp_path / "undo", Scenario((*undo, "--reason", "crash")))


def test_pin_bump_survives_an_interruption_at_every_write_point(
    example: Path, tmp_path: Path
) -> None:
    check_every_point(example, tmp_path, Scenario(("pin", "bump", "v1.2.0")))


def test_fmt_survives_an_interruption_at_every_write_point(example: Path, tmp_path: Path) -> None:
    base = tmp_path / "untidy"
    shutil.copytree(example, base, symlinks=True)
    for patch in sorted((base / "patches").glob("000[12]-*.patch")):  # two files to rewrite
        short = re.sub(
            rb"(?m)^index ([0-9a-f]{7})[0-9a-f]*\.\.([0-9a-f]{7})[0-9a-f]*",
            rb"index \1..\2",
            patch.read_bytes(),
        )
        patch.write_bytes(short)
    check_every_point(base, tmp_path / "fmt", Scenario(("fmt",)))


def test_export_survives_an_interruption_at_every_write_point(
    example: Path, tmp_path: Path
) -> None:
    base = variant(example, tmp_path, "imported", ["import", "--branch", "patches/x"])
    for path in (base / "patches").glob("0004-*"):
        path.unlink()
    for name in ("series", "upstream.map"):
        lines = (base / name).read_text().splitlines(keepends=True)
        (base / name).write_text("".join(x for x in lines if not x.startswith("0004-")))
    check_every_point(base, tmp_path / "export", Scenario(("export", "--from", "patches/x")))


def test_refresh_survives_an_interruption_at_every_write_point(small: Path, tmp_path: Path) -> None:
    base = _without(small, tmp_path, "0001-a.patch", "0004-d.patch")
    check_every_point(base, tmp_path / "refresh", Scenario(("refresh", "--onto", "v2")))


def _without(root: Path, work: Path, *patches: str) -> Path:
    base = work / "base"
    shutil.copytree(root, base, symlinks=True)
    for name in patches:
        (base / "patches" / name).unlink()
        for listing in ("series", "upstream.map"):
            lines = (base / listing).read_text().splitlines(keepends=True)
            (base / listing).write_text("".join(x for x in lines if not x.startswith(name)))
    subprocess.run(
        ["git", "commit", "-qam", "drop"], cwd=base, check=True, env={**os.environ, **ENV}
    )
    return base


def test_sync_survives_an_interruption_at_every_write_point(small: Path, tmp_path: Path) -> None:
    """SIGINT rolls a new sync back; after SIGKILL, 'sync --continue' finishes it."""
    base = _without(small, tmp_path, "0004-d.patch")
    scenario = Scenario(("sync", "v2", "--no-fetch"), resume=("sync", "--continue"))
    # Every git and sync point; the file-write points (the same code as in every test
    # above) at their first hit only, to keep the run short.
    points = check_every_point(
        base, tmp_path / "sync", scenario, keep=lambda name, nth: nth == 1 or "fsutil" not in name
    )
    assert {"git.worktree_add", "git.commit", "sync.merge", "git.worktree_remove"} <= {
        name for name, _ in points
    }


def test_a_killed_sync_is_aborted_to_exactly_as_before(small: Path, tmp_path: Path) -> None:
    base = _without(small, tmp_path, "0004-d.patch")
    before = state(base)
    for point in ("git.worktree_add:1", "git.commit:2", "sync.merge:1"):
        copy = tmp_path / point.replace(":", "-")
        shutil.copytree(base, copy, symlinks=True)
        assert (
            forktool(copy, ["sync", "v2", "--no-fetch"], FORKTOOL_FAULT=f"{point}:KILL").code == -9
        )
        assert state(copy)[1][2]  # the state file is there
        aborted = forktool(copy, ["sync", "--abort"])
        assert aborted.code == 0, aborted.err
        assert state(copy) == before
        assert leftovers(copy) == []


def test_a_sync_whose_worktree_was_deleted_goes_on(small: Path, tmp_path: Path) -> None:
    base = _without(small, tmp_path, "0004-d.patch")
    reference = tmp_path / "reference"
    shutil.copytree(base, reference, symlinks=True)
    assert forktool(reference, ["sync", "v2", "--no-fetch"]).code == 0
    copy = tmp_path / "copy"
    shutil.copytree(base, copy, symlinks=True)
    cut = forktool(copy, ["sync", "v2", "--no-fetch"], FORKTOOL_FAULT="git.commit:2:KILL")
    assert cut.code == -9
    stale = [
        line.split()[1]
        for line in git(copy, "worktree", "list", "--porcelain").splitlines()
        if line.startswith("worktree ")
    ][1]
    shutil.rmtree(Path(stale).parent)  # a cleaned /tmp
    resumed = forktool(copy, ["sync", "--continue"])
    assert resumed.code == 0, resumed.err
    assert state(copy) == state(reference)
