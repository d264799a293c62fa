"""``verify`` side by side and ``verify --keep-going``.

Side by side: the series' file diffs split into groups that touch no common path (a
path's directories included), the groups go through git in two bins, each in its own
index. Its answer must be the serial path's, verdict for verdict (status, message,
hunks, offsets): a property test over random series (edits, creations, deletions,
renames, a directory replacing a file, a base that shifts some files) compares both.

Keep going: past a failing patch, each later patch is tried on the tree without the
failed ones, and says which ones it was tried without.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from testing.apply_support import edit_line, export, numbered, side_commit, writes
from testing.helpers import MiniFork, mini_fork, snapshot_tree

from forktool.builder import RepoBuilder
from forktool.config import load_config
from forktool.engine.apply import bins, early, series_run, side_by_side
from forktool.engine.apply import verify as verify_engine
from forktool.engine.apply.bins import file_groups
from forktool.engine.apply.precheck import precheck
from forktool.engine.apply.survey import survey_of
from forktool.engine.apply.verdict import PatchVerdict
from forktool.engine.apply.verify import VerifyResult, verify_series
from forktool.fork import load_fork

SIDE_BY_SIDE = side_by_side.verify_side_by_side
FILES = {f"pkg/m{n}.py": numbered(30, f"m{n}") for n in range(6)}


def run(fork: MiniFork, jobs: int, base: str | None = None, **kw: bool) -> VerifyResult:
    loaded = load_fork(load_config(fork.root / "forktool.yaml"), strict=False)
    base = base or fork.pin
    return verify_series(
        loaded, fork.repo.git, base=base, base_commit=fork.repo.rev(base), jobs=jobs, **kw
    )


def side_by_side_always(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Side by side for any series (no minimum length or balance); the list records
    whether each call of it gave the answer (True) or fell back to the serial path."""
    monkeypatch.setattr(early, "PARALLEL_MIN_PATCHES", 1)
    monkeypatch.setattr(bins, "PARALLEL_MIN_SHARE", 0.0)
    used: list[bool] = []

    def spy(*args: object, **kwargs: object) -> object:
        answer = SIDE_BY_SIDE(*args, **kwargs)  # type: ignore[arg-type]
        used.append(answer is not None)
        return answer

    monkeypatch.setattr(side_by_side, "verify_side_by_side", spy)  # imported when used
    return used


@pytest.fixture
def eager(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    return side_by_side_always(monkeypatch)


def chain_of(fork: MiniFork, steps: list[dict[str, str | None]], *extra: str) -> dict[str, bytes]:
    """One patch per step (files written, None deleting), each on top of the last."""
    base = fork.pin
    patches = {}
    for number, files in enumerate(steps, start=1):
        base = side_commit(fork.repo, base, writes(files))
        patches[f"{number:04d}.patch"] = export(fork.repo, base, *extra)
    return patches


def tag(fork: MiniFork, name: str, files: dict[str, str | None]) -> None:
    """Tag ``name`` on a commit off the pin that writes ``files`` (before the fork's
    files are written: making the commit stages everything in the work tree)."""
    commit = side_commit(fork.repo, fork.pin, writes(dict(files)))
    fork.repo.git.run(["tag", name, commit], purpose="tag a base")


def as_json(result: VerifyResult) -> dict[str, object]:
    return json.loads(json.dumps(result.to_json()))


# -- grouping ------------------------------------------------------------------------


def test_groups_join_shared_paths_renames_and_a_file_under_a_replaced_path() -> None:
    groups = file_groups(
        [
            ("a.txt",),  # 0
            ("b.txt", "c.txt"),  # 1: a rename b -> c
            ("c.txt",),  # 2: edits the renamed file
            ("d",),  # 3: deletes file d
            ("d/e.txt",),  # 4: creates d/e.txt where d was a file
            ("x/y/z.txt",),  # 5
            ("a.txt",),  # 6
        ]
    )
    assert groups == [[0, 6], [1, 2], [3, 4], [5]]


def test_groups_of_a_directory_two_levels_up() -> None:
    assert file_groups([("lib",), ("lib/sub/f.c",), ("other/f.c",)]) == [[0, 1], [2]]


# -- side by side against the serial path ------------------------------------------


def _pieces_line_by_line(data: bytes, starts: list[int]) -> list[bytes]:
    """The reference: each file diff's lines as they are, newline-terminated."""
    lines = re.findall(rb"[^\n]*\n|[^\n]+$", data)
    rows = [*(line - 1 for line in starts), len(lines)]
    pieces = [b"".join(lines[a:b]) for a, b in itertools.pairwise(rows)]
    return [p if p.endswith(b"\n") else p + b"\n" for p in pieces]


_diff_text = st.lists(
    st.sampled_from([b"--- a/x", b"+++ b/x", b"@@ -1 +1 @@", b"-old", b"+new", b" ctx", b""]),
    max_size=6,
)


@settings(max_examples=300)
@given(
    st.lists(st.binary(max_size=8).filter(lambda b: b"\n" not in b), max_size=3),
    st.lists(_diff_text, min_size=1, max_size=5),
    st.booleans(),
    st.booleans(),
)
def test_a_bin_part_holds_its_file_diffs_byte_for_byte(
    header: list[bytes], diffs: list[list[bytes]], newline_at_end: bool, preamble: bool
) -> None:
    # Cut at the diff --git lines' byte offsets (an outline's starts) or, for starts
    # elsewhere (a parse's, with an Index: preamble), line by line: the same bytes.
    lines = [*header]
    starts = []
    for number, body in enumerate(diffs):
        if preamble:
            starts.append(len(lines) + 1)
            lines.append(b"Index: x")
        else:
            starts.append(len(lines) + 1)
        lines += [f"diff --git a/f{number} b/f{number}".encode(), *body]
    data = b"\n".join(lines) + (b"\n" if newline_at_end else b"")
    assert bins.diff_pieces(data, starts) == _pieces_line_by_line(data, starts)


def disjoint_fork(builder: RepoBuilder) -> MiniFork:
    """A fork of 12 patches, two on each of six files: they split into disjoint bins."""
    fork = mini_fork(builder, FILES)
    texts = dict(FILES)
    steps: list[dict[str, str | None]] = []
    for n in range(12):
        name = f"pkg/m{n % 6}.py"
        texts[name] = edit_line(texts[name], f"m{n % 6} {n + 2}", f"m{n % 6} {n + 2} changed")
        steps.append({name: texts[name]})
    fork.write(chain_of(fork, steps))
    return fork


def test_disjoint_series_goes_side_by_side_with_the_serial_verdicts(
    builder: RepoBuilder, eager: list[bool]
) -> None:
    fork = disjoint_fork(builder)
    serial, side = run(fork, 1), run(fork, 2)
    assert eager == [True]
    assert side.ok and side.round_trip
    assert as_json(side) == as_json(serial)


def test_side_by_side_leaves_the_repository_byte_identical(
    builder: RepoBuilder, eager: list[bool]
) -> None:
    fork = mini_fork(builder, FILES)
    steps: list[dict[str, str | None]] = [
        {f"pkg/m{n}.py": edit_line(FILES[f"pkg/m{n}.py"], f"m{n} 3", f"m{n} 3 x")} for n in range(6)
    ]
    fork.write(chain_of(fork, steps))
    before = snapshot_tree(fork.root)
    assert run(fork, 2).ok
    assert eager == [True]
    assert snapshot_tree(fork.root) == before


def test_an_outline_the_parse_does_not_confirm_stops_the_bins_and_answers_serially(
    builder: RepoBuilder, eager: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    """git starts on each patch's outline while the patches are parsed: a patch whose
    parse has a diff its outline does not (a plain ---/+++ diff after a git one) stops
    the bins, and the series goes serially, with the serial path's verdicts."""
    fork = mini_fork(builder, FILES)
    steps: list[dict[str, str | None]] = [
        {f"pkg/m{n}.py": edit_line(FILES[f"pkg/m{n}.py"], f"m{n} 3", f"m{n} 3 x")} for n in range(4)
    ]
    patches = chain_of(fork, steps)
    plain = b"--- a/pkg/m5.py\n+++ b/pkg/m5.py\n@@ -1,3 +1,3 @@\n m5 1\n-m5 2\n+m5 2 plain\n m5 3\n"
    assert not patches["0004.patch"].startswith(b"-- ") and b"\n-- \n" not in patches["0004.patch"]
    patches["0004.patch"] += plain
    fork.write(patches)
    stopped: list[int] = []
    stop = series_run.RoundTrip.stop

    def counting_stop(self: series_run.RoundTrip) -> None:
        stopped.append(1)
        stop(self)

    monkeypatch.setattr(series_run.RoundTrip, "stop", counting_stop)
    serial, side = run(fork, 1), run(fork, 2)
    assert eager == [False]
    assert stopped, "the bins were not stopped when the outline did not hold"
    assert side.ok and as_json(side) == as_json(serial)
    assert len(side.patches[3].hunks) == 2  # the plain diff was applied and counted


def test_offsets_read_from_the_parts_match_the_serial_messages(
    builder: RepoBuilder, eager: list[bool]
) -> None:
    fork = mini_fork(builder, FILES)
    texts = dict(FILES)
    steps: list[dict[str, str | None]] = []
    for n in range(6):
        name = f"pkg/m{n}.py"
        texts[name] = edit_line(texts[name], f"m{n} 20", f"m{n} 20 changed")
        steps.append({name: texts[name]})
    patches = chain_of(fork, steps)
    # A base with two more lines at the top of m1 and m4: their patches move by +2.
    shifted = {f"pkg/m{n}.py": "top a\ntop b\n" + FILES[f"pkg/m{n}.py"] for n in (1, 4)}
    tag(fork, "shifted", shifted)
    fork.write(patches)
    serial, side = run(fork, 1, "shifted"), run(fork, 2, "shifted")
    assert eager == [True]
    assert [v.status for v in side.patches] == [
        "exact",
        "offset",
        "exact",
        "exact",
        "offset",
        "exact",
    ]
    assert side.patches[1].message == (
        "pkg/m1.py: hunk 1 applies only at offset +2 (line 19) on shifted; run 'forktool refresh'"
    )
    assert as_json(side) == as_json(serial)


def test_a_failing_series_falls_back_to_the_serial_answer(
    builder: RepoBuilder, eager: list[bool]
) -> None:
    fork = mini_fork(builder, FILES)
    steps: list[dict[str, str | None]] = [
        {"pkg/m0.py": edit_line(FILES["pkg/m0.py"], "m0 5", "m0 5 x")},
        {"pkg/m1.py": edit_line(FILES["pkg/m1.py"], "m1 5", "m1 5 x")},
    ]
    patches = chain_of(fork, steps)
    tag(fork, "moved", {"pkg/m1.py": edit_line(FILES["pkg/m1.py"], "m1 5", "m1 5 upstream")})
    fork.write(patches)
    serial, side = run(fork, 1, "moved"), run(fork, 2, "moved")
    assert eager == [False]
    assert [v.status for v in side.patches] == ["exact", "fails"]
    assert as_json(side) == as_json(serial)


# Random series: each step writes, creates, deletes or renames files of a small tree
# (with a file that a later step may replace by a directory of the same name), made as
# a chain on the pin; verified on the pin and on a base that shifts some files.
PATHS = ["a.txt", "b.txt", "dir/c.txt", "dir/d.txt", "dir/sub/e.txt", "f", "g.txt"]
START = {p: numbered(12, p.replace("/", "_")) for p in PATHS if p != "g.txt"}

step = st.tuples(
    st.sampled_from(["edit", "edit", "edit", "create", "delete", "rename", "dir"]),
    st.sampled_from(PATHS),
    st.integers(min_value=1, max_value=12),
)


def _apply_step(
    texts: dict[str, str], kind: str, path: str, line: int, n: int
) -> dict[str, str | None]:
    if kind == "dir" and "f" in texts:  # file f becomes directory f/
        del texts["f"]
        texts["f/inner.txt"] = f"inner {n}\n"
        return {"f": None, "f/inner.txt": texts["f/inner.txt"]}
    if kind == "delete" and path in texts and len(texts) > 2:
        del texts[path]
        return {path: None}
    if kind == "rename" and path in texts:
        target = f"renamed/{path.replace('/', '_')}.{n}"
        texts[target] = texts.pop(path)
        return {path: None, target: texts[target]}
    if path not in texts:  # create (or re-create)
        if any(p.startswith(path + "/") for p in texts) or any(
            path.startswith(p + "/") for p in texts
        ):
            path = f"new{n}.txt"
        texts[path] = numbered(12, f"new{n}")
        return {path: texts[path]}
    lines = texts[path].split("\n")
    at = min(line, len(lines) - 2)
    lines[at] = f"{lines[at]} edit {n}"
    texts[path] = "\n".join(lines)
    return {path: texts[path]}


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(step, min_size=2, max_size=9), shift=st.sets(st.sampled_from(PATHS)))
def test_side_by_side_answers_as_the_serial_path_on_random_series(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    steps: list[tuple[str, str, int]],
    shift: set[str],
) -> None:
    used = side_by_side_always(monkeypatch)
    repo = RepoBuilder.init(tmp_path_factory.mktemp("random") / "repo")
    fork = mini_fork(repo, dict(START))
    texts = dict(START)
    changes = [
        _apply_step(texts, kind, path, line, n) for n, (kind, path, line) in enumerate(steps)
    ]
    patches = chain_of(fork, changes, "-M")
    tag(fork, "shifted", {p: "top\n" + START[p] for p in shift if p in START})
    fork.write(patches)
    for base in ("v1", "shifted"):
        serial, side = run(fork, 1, base), run(fork, 2, base)
        assert as_json(side) == as_json(serial)
    # On the pin the chain applies: side by side answers whenever there are two groups.
    loaded = load_fork(load_config(fork.root / "forktool.yaml"), strict=False)
    surveys = [survey_of(p, "exact") for p in loaded.patches]
    diffs = [s.diffs for s in surveys]
    if len(file_groups(bins.units_of(loaded.patches, diffs)[1])) >= 2:
        assert used[0], "the pin's series went serial although it splits"


# -- keep going ------------------------------------------------------------------------


def keep_going_reference(fork: MiniFork, base: str) -> list[dict[str, object]]:
    """Each patch tried on its own on the tree of the ones before that applied."""
    loaded = load_fork(load_config(fork.root / "forktool.yaml"), strict=False)
    verdicts: list[PatchVerdict] = []
    failed: list[str] = []
    with fork.repo.git.temp_index(f"{base}^{{tree}}") as index:
        for patch in loaded.patches:
            verdict = precheck(patch, "git") or verify_engine._culprit(index, patch, base)
            if failed:
                verdict = verdict._replace(without=tuple(failed))
            verdicts.append(verdict)
            if verdict.status not in ("exact", "offset"):
                failed.append(patch.name)
    return [v.to_json() for v in verdicts]


@pytest.fixture
def failing_second(builder: RepoBuilder) -> MiniFork:
    """Five patches on m0..m2; on the base 'moved', patch 2's context is gone, patch 4
    builds on patch 2 (so it fails too without it), the others apply."""
    fork = mini_fork(builder, FILES)
    m0 = edit_line(FILES["pkg/m0.py"], "m0 5", "m0 5 a")
    m1 = edit_line(FILES["pkg/m1.py"], "m1 5", "m1 5 b")
    m2 = edit_line(FILES["pkg/m2.py"], "m2 5", "m2 5 c")
    steps: list[dict[str, str | None]] = [
        {"pkg/m0.py": m0},
        {"pkg/m1.py": m1},
        {"pkg/m2.py": m2},
        {"pkg/m1.py": edit_line(m1, "m1 6", "m1 6 d")},
        {"pkg/m0.py": edit_line(m0, "m0 20", "m0 20 e")},
    ]
    patches = chain_of(fork, steps)
    tag(fork, "moved", {"pkg/m1.py": edit_line(FILES["pkg/m1.py"], "m1 5", "m1 5 upstream")})
    fork.write(patches)
    return fork


def test_without_keep_going_the_rest_is_not_tried(failing_second: MiniFork) -> None:
    result = run(failing_second, 1, "moved")
    assert [v.status for v in result.patches] == ["exact", "fails", *["not-tried"] * 3]
    assert all(not v.without for v in result.patches)


@pytest.mark.parametrize("chunks", ["one call", "one call per patch"])
def test_keep_going_tries_each_later_patch_without_the_failed_ones(
    failing_second: MiniFork, monkeypatch: pytest.MonkeyPatch, chunks: str
) -> None:
    if chunks == "one call per patch":
        monkeypatch.setattr(series_run, "ONE_CALL_BYTES", 1)
        monkeypatch.setattr(series_run, "CHUNK_BYTES", 1)
    result = run(failing_second, 1, "moved", keep_going=True)
    assert [v.status for v in result.patches] == ["exact", "fails", "exact", "fails", "exact"]
    assert [v.without for v in result.patches] == [
        (),
        (),
        ("0002.patch",),
        ("0002.patch",),
        ("0002.patch", "0004.patch"),
    ]
    assert [v.to_json() for v in result.patches] == keep_going_reference(failing_second, "moved")
    assert not result.ok and not result.round_trip


def test_keep_going_cli_json_and_text(failing_second: MiniFork) -> None:
    result = failing_second.cli("verify", "--base", "moved", "--keep-going", "--format", "json")
    assert result.code == 1
    data = json.loads(result.out)
    assert [p.get("without") for p in data["patches"]] == [
        None,
        None,
        ["0002.patch"],
        ["0002.patch"],
        ["0002.patch", "0004.patch"],
    ]
    text = failing_second.cli("verify", "--base", "moved", "--keep-going")
    assert text.code == 1
    assert "tried without 0002.patch, 0004.patch" in text.out
    assert "not tried" not in text.out


def test_keep_going_on_a_passing_series_changes_nothing(builder: RepoBuilder) -> None:
    fork = mini_fork(builder, FILES)
    fork.write(chain_of(fork, [{"pkg/m0.py": edit_line(FILES["pkg/m0.py"], "m0 5", "m0 5 x")}]))
    assert as_json(run(fork, 1, keep_going=True)) == as_json(run(fork, 1))


def test_json_output_does_not_import_rich(failing_second: MiniFork, tmp_path: Path) -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from forktool.cli import run\n"
        f"run(['-C', {str(failing_second.root)!r}, 'verify', '--format', 'json'])\n"
        "sys.stdout.flush()\n"
        "print('\\n'.join(sorted(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    loaded = done.stderr.splitlines()
    assert "forktool.engine.apply.verify" in loaded
    assert [m for m in loaded if m == "rich" or m.startswith("rich.")] == []


@pytest.mark.parametrize(("cores", "others", "jobs"), [(1, 0, 1), (2, 1, 2), (2, 2, 1), (8, 3, 2)])
def test_side_by_side_only_with_a_second_core_free(
    monkeypatch: pytest.MonkeyPatch, cores: int, others: int, jobs: int
) -> None:
    monkeypatch.setattr(early.os, "cpu_count", lambda: cores)
    monkeypatch.setattr(early, "others_running", lambda: others)
    assert early.default_jobs() == jobs


def test_what_runs_now_is_read_not_the_minute_average(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A machine verify kept busy a minute ago is free now: the runnable count of
    /proc/loadavg (less this process) says so; the load average only where it is not
    there."""
    real_open = open

    def fake_open(path: object, *args: object, **kwargs: object) -> object:
        if path == "/proc/loadavg":
            (tmp_path / "loadavg").write_bytes(b"2.31 1.90 1.52 1/312 4242\n")
            return real_open(tmp_path / "loadavg", *args, **kwargs)  # type: ignore[call-overload]
        return real_open(path, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr("builtins.open", fake_open)
    monkeypatch.setattr(early.os, "getloadavg", lambda: (2.31, 1.90, 1.52))
    assert early.others_running() == 0

    def no_proc(path: object, *args: object, **kwargs: object) -> object:
        raise OSError(f"no {path}")

    monkeypatch.setattr("builtins.open", no_proc)
    assert early.others_running() == 2.31


def test_jobs_must_be_at_least_one(failing_second: MiniFork) -> None:
    result = failing_second.cli("verify", "--jobs", "0")
    assert result.code == 2


def test_side_by_side_cli_imports_no_logging_or_version_reader(builder: RepoBuilder) -> None:
    """What verify imports is start-up paid on every CI run: the bins' threads are
    plain threads (``concurrent.futures`` would import ``logging``) and the version
    reader (``packaging``) is not needed to verify. The run must really go side by
    side, so that path's imports are the ones checked."""
    import subprocess
    import sys

    fork = disjoint_fork(builder)
    code = (
        "import sys\n"
        "from forktool.engine.apply import bins, early, series_run\n"
        "early.PARALLEL_MIN_PATCHES = 1\n"
        "bins.PARALLEL_MIN_SHARE = 0.0\n"
        "went = []\n"
        "call = series_run.RoundTrip._drive\n"
        "series_run.RoundTrip._drive = lambda self: went.append(1) or call(self)\n"
        "from forktool.cli import run\n"
        f"code = run(['-C', {str(fork.root)!r}, 'verify', '--jobs', '2', '--format', 'json'])\n"
        "sys.stdout.flush()\n"
        "print(code, len(went), file=sys.stderr)\n"
        "print('\\n'.join(sorted(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    first, *loaded = done.stderr.splitlines()
    assert first == "0 2", done.stderr  # exit 0, two bins ran
    assert json.loads(done.stdout)["ok"] is True
    assert {"logging", "concurrent.futures", "packaging", "packaging.version"} & set(
        loaded
    ) == set()
