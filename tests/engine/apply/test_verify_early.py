"""``verify`` starts git on the series file alone, before the fork is loaded.

The command resolves the base, reads the series, starts git (the temporary index and
the series' forward call, or the bins side by side) and only then loads the fork and
imports the engine that judges patches. What git was started on is used only when the
loaded series names the same files; the answer is the one a verify started after the
load gives, byte for byte. The revert starts as soon as the forward call went through.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from testing.apply_support import series_fork
from testing.helpers import MiniFork

from forktool.builder import RepoBuilder
from forktool.config import load_config
from forktool.engine.apply import early, series_run
from forktool.engine.apply.early import EarlyStart, early_start, series_files
from forktool.engine.apply.series_run import RoundTrip
from forktool.engine.apply.verify import verify_series
from forktool.fork import load_fork
from forktool.git import runner
from forktool.git.runner import Started
from forktool.inputs import read_regular


def record_early_starts(monkeypatch: pytest.MonkeyPatch, where: str) -> list[EarlyStart | None]:
    """What each early start the command makes (``where``: the name it calls) yields."""
    started: list[EarlyStart | None] = []
    real = early.early_start

    @contextmanager
    def spy(*args: Any, **kwargs: Any) -> Iterator[EarlyStart | None]:
        with real(*args, **kwargs) as value:
            started.append(value)
            yield value

    monkeypatch.setattr(where, spy)
    return started


def leftover_indexes() -> list[str]:
    """Temporary index directories left in the scratch place (the test's TMPDIR)."""
    scratch = Path(os.environ["TMPDIR"])
    return [p.name for p in scratch.iterdir() if p.name.startswith("forktool-index-")]


def verdicts_without_early(fork: MiniFork, jobs: int) -> dict[str, object]:
    loaded = load_fork(load_config(fork.root / "forktool.yaml"), strict=False)
    result = verify_series(
        loaded, fork.repo.git, base=fork.pin, base_commit=fork.repo.rev(fork.pin), jobs=jobs
    )
    return json.loads(json.dumps(result.to_json()))


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_command_answers_as_a_verify_started_after_the_load(
    builder: RepoBuilder, monkeypatch: pytest.MonkeyPatch, jobs: int
) -> None:
    monkeypatch.setattr(early, "PARALLEL_MIN_PATCHES", 1)
    fork = series_fork(builder)
    started = record_early_starts(monkeypatch, "forktool.engine.apply.early.early_start")
    result = fork.cli("verify", "--format", "json", "--jobs", str(jobs))
    assert result.code == 0, result.err
    assert result.json() == verdicts_without_early(fork, jobs)
    assert len(started) == 1 and started[0] is not None
    assert (started[0].bins is not None) == (jobs == 2)
    assert (started[0].trip is not None) == (jobs == 1)


def test_a_series_changed_after_git_started_is_verified_as_loaded(
    builder: RepoBuilder,
) -> None:
    """git started on the series as it was; the fork load reads another series: what
    was started is not used, and the verdicts are those of the series as loaded."""
    fork = series_fork(builder)
    config = load_config(fork.root / "forktool.yaml")
    git = fork.repo.git
    commit = fork.repo.rev(fork.pin)
    with early_start(git, config, commit, 1) as started:
        assert started is not None and started.trip is not None
        series = fork.root / "series"
        series.write_text("".join(f"{n:04d}.patch\n" for n in (2, 4, 6)))
        loaded = load_fork(load_config(fork.root / "forktool.yaml"), strict=False)
        assert not started.serves([p.path for p in loaded.patches])
        result = verify_series(
            loaded, git, base=fork.pin, base_commit=commit, jobs=1, early=started
        )
    assert [p.patch for p in result.patches] == ["0002.patch", "0004.patch", "0006.patch"]
    assert result.ok and result.round_trip
    assert json.loads(json.dumps(result.to_json())) == verdicts_without_early(fork, 1)


@pytest.mark.parametrize(
    "spoil",
    ["missing file", "symlinked file", "symlinked directory", "bad series line", "empty series"],
)
def test_nothing_starts_on_a_series_the_fork_load_would_refuse(
    builder: RepoBuilder, tmp_path: Path, spoil: str
) -> None:
    """git is given only regular files inside the fork that a sound series names;
    anything else waits for the fork load, which reports it in its own words."""
    fork = series_fork(builder, 3)
    patches = fork.root / "patches"
    if spoil == "missing file":
        (patches / "0002.patch").unlink()
    elif spoil == "symlinked file":
        outside = tmp_path / "outside.patch"
        outside.write_bytes((patches / "0002.patch").read_bytes())
        (patches / "0002.patch").unlink()
        (patches / "0002.patch").symlink_to(outside)
    elif spoil == "symlinked directory":
        outside = tmp_path / "elsewhere"
        (patches / "0002.patch").rename(tmp_path / "0002.patch")
        outside.mkdir()
        (outside / "0002.patch").write_bytes((tmp_path / "0002.patch").read_bytes())
        (patches / "sub").symlink_to(outside)
        (fork.root / "series").write_text("0001.patch\nsub/0002.patch\n0003.patch\n")
    elif spoil == "bad series line":
        (fork.root / "series").write_text("0001.patch\n0002.patch -p1 extra words\n")
    else:
        (fork.root / "series").write_text("# nothing yet\n")
    config = load_config(fork.root / "forktool.yaml")
    assert series_files(config) is None
    with early_start(fork.repo.git, config, fork.repo.rev(fork.pin), 1) as started:
        assert started is None
    result = fork.cli("verify", "--format", "json")
    assert result.code in (1, 2), result.err


def test_a_refused_fork_stops_git_and_leaves_no_scratch(
    builder: RepoBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A problem only the full load finds (a patch missing from the map is reported,
    a patch file not listed is not) comes after git started: the command exits 2 with
    the load's message, and the temporary index is gone."""
    fork = series_fork(builder, 3)
    (fork.root / "upstream.map").write_text("0001.patch not-a-commit-id\n")
    result = fork.cli("verify", "--format", "json")
    assert result.code == 2, result.err
    assert leftover_indexes() == []


def test_the_revert_starts_once_the_series_went_through(builder: RepoBuilder) -> None:
    fork = series_fork(builder, 3)
    loaded = load_fork(load_config(fork.root / "forktool.yaml"), strict=False)
    git = fork.repo.git
    tree = git.tree_id(fork.pin)
    with git.temp_index(tree) as index, RoundTrip(index, loaded.patches) as trip:
        applied, _ = trip.wait_forward()
        assert applied
        back, _ = trip.wait_back()
        assert back and trip.back is not None
        assert trip.tree == tree and index.write_tree() == tree


def test_the_trip_goes_on_while_the_caller_does_not_look(builder: RepoBuilder) -> None:
    """The revert and its tree do not wait for the caller: a caller busy elsewhere
    (importing the code that judges the patches) asks nothing, and the trip is done."""
    fork = series_fork(builder, 4)
    loaded = load_fork(load_config(fork.root / "forktool.yaml"), strict=False)
    git = fork.repo.git
    tree = git.tree_id(fork.pin)
    with git.temp_index(tree) as index, RoundTrip(index, loaded.patches) as trip:
        trip._thread.join(timeout=60)  # nothing asked of the trip meanwhile
        assert not trip._thread.is_alive()
        assert trip.back is not None and trip.back.ok and trip.tree == tree


def test_a_trip_left_at_once_stops_git_and_leaves_no_lock(
    builder: RepoBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Leaving the block while git applies (an error, Ctrl-C) kills the call under way;
    a git killed at once may not have removed its index lock yet, so the trip does: the
    index can be read again at once (seen under load, as 'index.lock: File exists').
    git is held "under way" here, so the test does not depend on how fast it is."""
    fork = series_fork(builder, 6)
    loaded = load_fork(load_config(fork.root / "forktool.yaml"), strict=False)
    git = fork.repo.git
    tree = git.tree_id(fork.pin)
    monkeypatch.setattr(Started, "done", lambda self: False)
    with git.temp_index(tree) as index:
        lock = index.path.with_name(index.path.name + ".lock")
        with pytest.raises(KeyboardInterrupt):
            with RoundTrip(index, loaded.patches) as trip:
                lock.write_bytes(b"")  # as a git killed while writing the index leaves it
                raise KeyboardInterrupt
        running = trip.forward.running
        assert running is not None and running._proc.returncode is not None  # reaped
        assert not lock.exists()
        index.read_tree(tree)
        assert index.write_tree() == tree


def test_no_revert_after_a_failed_series_or_once_stopped(builder: RepoBuilder) -> None:
    fork = series_fork(builder, 3)
    broken = fork.root / "patches" / "0002.patch"
    broken.write_bytes(
        broken.read_bytes().replace(b"changed", b"altered").replace(b"-m1 4", b"-m1 X")
    )
    loaded = load_fork(load_config(fork.root / "forktool.yaml"), strict=False)
    git = fork.repo.git
    with git.temp_index(git.tree_id(fork.pin)) as index:
        with RoundTrip(index, loaded.patches) as trip:
            applied, _ = trip.wait_forward()
            assert not applied and trip.back is None
            with pytest.raises(RuntimeError):
                trip.wait_back()
        fine = [p for p in loaded.patches if p.name != "0002.patch"]
        with RoundTrip(index, fine) as trip:
            trip.stop_back()  # the revert may have started by now, or not
            assert trip.wait_forward()[0]
            assert not trip._thread.is_alive()  # nothing runs, and nothing will start
            back = trip.back
            assert back is None or back.running is None or back.running.done()


def test_a_background_git_call_gives_its_result_again() -> None:
    with runner.start(["--version"], cwd=Path.cwd(), purpose="ask the version", env=None) as call:
        first = call.wait()
        assert call.wait() is first and first.ok


def test_scratch_goes_to_tmpdir_when_set_else_to_ram_when_there(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ram = tmp_path / "ram"
    ram.mkdir()
    monkeypatch.setattr(runner, "RAM_SCRATCH", ram)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    assert runner.scratch_root() == str(tmp_path)
    monkeypatch.delenv("TMPDIR")
    monkeypatch.setattr(runner, "RAM_SCRATCH_MIN_FREE", 0)
    assert runner.scratch_root() == str(ram)
    monkeypatch.setattr(runner, "RAM_SCRATCH_MIN_FREE", 1 << 62)  # more than it has free
    assert runner.scratch_root() == runner.tempfile.gettempdir()
    monkeypatch.setattr(runner, "RAM_SCRATCH", tmp_path / "absent")
    monkeypatch.setattr(runner, "RAM_SCRATCH_MIN_FREE", 0)
    assert runner.scratch_root() == runner.tempfile.gettempdir()


def test_long_series_chunks_start_early_too(
    builder: RepoBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A series over the one-call limits goes through in chunks from the early start
    as from a verify started after the load."""
    monkeypatch.setattr(series_run, "ONE_CALL_PATCHES", 2)
    monkeypatch.setattr(series_run, "CHUNK_PATCHES", 2)
    fork = series_fork(builder, 5)
    result = fork.cli("verify", "--format", "json", "--jobs", "1")
    assert result.code == 0, result.err
    assert result.json() == verdicts_without_early(fork, 1)


def test_a_revert_stopped_midway_leaves_the_index_usable(builder: RepoBuilder) -> None:
    """The revert is stopped when a patch must be tried on its own after all: the
    index it was writing is read again at once, so no lock file of it may remain."""
    fork = series_fork(builder, 6)
    loaded = load_fork(load_config(fork.root / "forktool.yaml"), strict=False)
    git = fork.repo.git
    tree = git.tree_id(fork.pin)
    with git.temp_index(tree) as index:
        with RoundTrip(index, loaded.patches) as trip:
            assert trip.wait_forward()[0]
            lock = index.path.with_name(index.path.name + ".lock")
            lock.write_bytes(b"")  # as a git killed while writing the index leaves it
            trip.stop_back()
            assert not lock.exists()
        index.read_tree(tree)
        assert index.write_tree() == tree


def test_what_runs_before_git_starts_imports_no_parser_and_no_verdicts() -> None:
    """The point of starting early: the modules that start git stay light. The parser,
    the verdicts, the fork loader and the bins' planner (side by side only) come later."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import forktool.cli, forktool.commands.verify, forktool.head_start\n"
        "import forktool.engine.apply.early\n"
        "print('\\n'.join(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    loaded = set(done.stdout.splitlines())
    heavy = {
        "forktool.fork",
        "forktool.model.patch_parser",
        "forktool.engine.apply.verdict",
        "forktool.engine.apply.verify",
        "forktool.engine.apply.bins",
        "yaml",
        "rich",
    }
    assert loaded & heavy == set()


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_ctrl_c_while_the_fork_loads_stops_git_and_leaves_nothing(
    builder: RepoBuilder, monkeypatch: pytest.MonkeyPatch, jobs: str
) -> None:
    """Ctrl-C after git started on the series, before the fork is loaded: exit 130,
    every git stopped, the temporary index (bins included) removed."""
    monkeypatch.setattr(early, "PARALLEL_MIN_PATCHES", 1)
    fork = series_fork(builder)

    def interrupted(*args: object, **kwargs: object) -> object:
        raise KeyboardInterrupt

    monkeypatch.setattr("forktool.fork.load_fork", interrupted)
    result = fork.cli("verify", "--format", "json", "--jobs", jobs)
    assert result.code == 130, result.err
    assert leftover_indexes() == []


def test_a_patch_file_gone_before_the_bins_read_it_starts_nothing(
    builder: RepoBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(early, "PARALLEL_MIN_PATCHES", 1)
    fork = series_fork(builder)
    config = load_config(fork.root / "forktool.yaml")

    def gone(self: early.SeriesFile) -> bytes:
        return read_regular(self.path.with_name("gone.patch"), self.rel)  # as if removed

    monkeypatch.setattr(early.SeriesFile, "read", gone)
    with early_start(fork.repo.git, config, fork.repo.rev(fork.pin), 2) as started:
        assert started is None
    assert leftover_indexes() == []


def test_a_patch_whole_in_one_bin_goes_as_its_own_file(builder: RepoBuilder) -> None:
    """Only a patch split between the bins is written out in parts."""
    from forktool.engine.apply import bins

    fork = series_fork(builder)
    files = series_files(load_config(fork.root / "forktool.yaml"))
    assert files is not None
    outlines = bins.outlines_of(files)
    assert outlines is not None
    units, paths = bins.units_of(files, outlines)
    planned = bins.bins_of(units, paths, 2)
    assert planned is not None
    folder = Path(os.environ["TMPDIR"]) / "parts"
    folder.mkdir()
    parts = bins.write_parts(folder, files, outlines, units, planned)
    assert sorted(p.path for part in parts for p in part) == [f.path for f in files]
    assert list(folder.iterdir()) == []


def test_scratch_a_killed_run_left_is_swept_by_the_next(builder: RepoBuilder) -> None:
    """A SIGKILL leaves a run's temporary index behind (in RAM when scratch goes to
    /dev/shm): the next temporary index removes those whose process is gone, and
    nothing of a live run or of another kind."""
    import subprocess
    import sys

    fork = series_fork(builder, 1)
    scratch = Path(os.environ["TMPDIR"])
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead = scratch / f"forktool-index-{int(gone.stdout)}-abcd1234"
    live = scratch / f"forktool-index-{os.getppid()}-efgh5678"
    other = scratch / f"something-else-{int(gone.stdout)}-abcd1234"
    for path in (dead, live, other):
        (path / "objects").mkdir(parents=True)
    with fork.repo.git.temp_index() as index:
        assert index.path.parent.name.startswith(f"forktool-index-{os.getpid()}-")
        assert not dead.exists()
        assert live.exists() and other.exists()
    assert not index.path.parent.exists()


@pytest.mark.parametrize("command", ["verify", "status"])
def test_the_fork_problem_is_said_before_a_missing_pin(builder: RepoBuilder, command: str) -> None:
    """git starts only once the base is resolved, before the fork is loaded; when the
    base cannot be resolved, the fork's own problems are still said first, as when the
    fork was loaded first."""
    fork = series_fork(builder, 3)
    config = fork.root / "forktool.yaml"
    config.write_text(config.read_text().replace("tag: v1", "tag: v9"))
    (fork.root / "patches" / "0002.patch").unlink()
    result = fork.cli(command, "--format", "json")
    assert result.code == 2
    assert "names '0002.patch' but patches/0002.patch does not exist" in result.err
    assert "v9" not in result.err


def test_status_answers_as_one_started_after_the_load(
    builder: RepoBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from forktool.engine.status import fork_status

    fork = series_fork(builder)
    started = record_early_starts(monkeypatch, "forktool.engine.apply.early.early_start")
    result = fork.cli("status", "--format", "json")
    assert result.code == 0, result.err
    assert len(started) == 1 and started[0] is not None
    loaded = load_fork(load_config(fork.root / "forktool.yaml"), strict=False)
    expected = fork_status(loaded, fork.repo.git).to_json()
    assert result.json() == json.loads(json.dumps(expected))
