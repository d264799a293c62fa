"""Shared by the benchmarks: synthetic histories (git fast-import) and measurement.

Two generators:

* :func:`build_upstream`: a long, cheap history (one tiny commit per step) with
  upstream fixes spread along it and a release tag every :data:`RELEASE_EVERY`
  commits; the fixes are what a fork's patches map to (``bench/absorbed``,
  ``bench/check``);
* :func:`synthesize`: a short history of real-sized, source-like commits whose
  diffs make realistic patches (``bench/verify``).

And the measurements every script reports the same way: :func:`median_time`,
:func:`measure_cli` (seconds and peak memory of a ``forktool`` subprocess),
:func:`load_average` and :func:`write_summary` (the JSON rows ``bench/run`` reads).
"""

from __future__ import annotations

import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from forktool.git import git_argv, hardened_env  # noqa: E402

EPOCH = 1_704_067_200
RELEASE_EVERY = 500


# -- a long history with upstream fixes and release tags ----------------------------------


def _data(payload: bytes) -> bytes:
    return b"data %d\n" % len(payload) + payload + b"\n"


def module_text(index: int, value: int) -> str:
    """The content of module file ``m/NNNN.txt`` whose value is ``value``."""
    return f"# module {index}\nheader = {index}\nvalue = {value}\nfooter = {index}\n"


def fast_import(path: Path, stream: bytes | bytearray) -> dict[str, str]:
    """Import ``stream`` into the repository at ``path``; mark (``:N``) -> commit id."""
    marks = path / "marks"
    subprocess.run(
        git_argv(["fast-import", "--quiet", f"--export-marks={marks}"]),
        cwd=path,
        input=bytes(stream),
        check=True,
        env=hardened_env(),
    )
    by_mark = dict(line.split() for line in marks.read_text().splitlines())
    marks.unlink()
    return by_mark


def build_upstream(path: Path, commits: int, fixes: int, *, pre_pin: int = 0) -> list[str]:
    """A linear history of ``commits`` commits on ``main``; returns the fix commits.

    Commit 1 adds ``fixes`` module files ``m/NNNN.txt`` (value 0) and is tagged
    ``v0.1.0``; fix k (evenly spaced, in order) sets module k's value to 1; every
    other commit bumps ``counter.txt``. Every :data:`RELEASE_EVERY` commits get a
    ``v1.N.0rc0`` (one commit before) and a ``v1.N.0`` tag.

    ``pre_pin`` older commits come first (each bumps ``counter.txt``, with a
    ``v0.0.N`` release every :data:`RELEASE_EVERY`): history before the pin, which
    grows without changing anything after it (0: the history is byte-identical).
    """
    subprocess.run(
        git_argv(["init", "-q", "--template=", str(path)]), check=True, env=hardened_env()
    )
    stream = bytearray()
    fix_every = max(1, commits // (fixes + 1))
    fix_marks: list[int] = []
    for n in range(1, pre_pin + 1):
        when = EPOCH - (pre_pin - n + 1) * 60
        stream += b"commit refs/heads/main\nmark :%d\n" % n
        stream += b"author A <a@example.com> %d +0000\n" % when
        stream += b"committer C <c@example.com> %d +0000\n" % when
        stream += _data(f"old change {n}".encode())
        stream += b"M 100644 inline counter.txt\n" + _data(f"old {n}\n".encode()) + b"\n"
        if n % RELEASE_EVERY == 0:
            stream += b"reset refs/tags/v0.0.%d\nfrom :%d\n\n" % (n // RELEASE_EVERY, n)
    for n in range(1, commits + 1):
        when = EPOCH + n * 60
        mark = pre_pin + n
        stream += b"commit refs/heads/main\nmark :%d\n" % mark
        stream += b"author A <a@example.com> %d +0000\n" % when
        stream += b"committer C <c@example.com> %d +0000\n" % when
        fix = n > 1 and (n - 1) % fix_every == 0 and len(fix_marks) < fixes
        stream += _data((f"fix {len(fix_marks)}" if fix else f"change {n}").encode())
        if n == 1:
            for i in range(fixes):
                stream += b"M 100644 inline m/%04d.txt\n" % i + _data(module_text(i, 0).encode())
        if fix:
            k = len(fix_marks)
            stream += b"M 100644 inline m/%04d.txt\n" % k + _data(module_text(k, 1).encode())
            fix_marks.append(mark)
        else:
            stream += b"M 100644 inline counter.txt\n" + _data(f"{n}\n".encode())
        stream += b"\n"
        if n == 1:
            stream += b"reset refs/tags/v0.1.0\nfrom :%d\n\n" % mark
        elif n % RELEASE_EVERY == 0:
            minor = n // RELEASE_EVERY
            stream += b"reset refs/tags/v1.%d.0rc0\nfrom :%d\n\n" % (minor, mark - 1)
            stream += b"reset refs/tags/v1.%d.0\nfrom :%d\n\n" % (minor, mark)
    by_mark = fast_import(path, stream)
    return [by_mark[f":{m}"] for m in fix_marks]


def last_release(commits: int) -> str:
    """The newest ``v1.N.0`` tag :func:`build_upstream` makes for ``commits`` commits."""
    if commits < RELEASE_EVERY:
        return "v0.1.0"
    return f"v1.{commits // RELEASE_EVERY}.0"


# -- a history of git.git's shape -----------------------------------------------------------


def build_topic_history(
    path: Path, commits: int, fixes: int, *, seed: int = 20, skew: float = 0.02
) -> tuple[list[str], list[str]]:
    """A history shaped like git.git's: ``master`` and ``maint``; topic branches fork
    from ``maint`` (now and then from an older point of ``master``), get 1-6 commits,
    are merged into ``master`` and (one in three, the fixes) down into ``maint``, which
    ``master`` merges back; a release tag ``v1.N.0`` on master every 1,000 commits. A
    fraction ``skew`` of commits is dated up to 30 days off (clock skew). ``fixes``
    topic commits, spread along the history, each set one module ``m/NNNN.txt`` to 1
    (as :func:`build_upstream`). Commit 1 (tag ``v0.1.0``) adds the modules.

    Returns (the fix commits, the release tags oldest first). Seeded: the same
    arguments give the same history.
    """
    rng = random.Random(seed)
    subprocess.run(
        git_argv(["init", "-q", "--template=", str(path)]), check=True, env=hardened_env()
    )
    stream = bytearray()
    mark = 0
    clock = EPOCH

    def commit(ref: str, message: str, parents: Sequence[int], changes: bytes) -> int:
        nonlocal mark, clock
        mark += 1
        clock += 60
        when = clock
        if rng.random() < skew:
            when += rng.randint(-30 * 86_400, 30 * 86_400)
        stream.extend(b"commit %s\nmark :%d\n" % (ref.encode(), mark))
        stream.extend(b"author A <a@example.com> %d +0000\n" % when)
        stream.extend(b"committer C <c@example.com> %d +0000\n" % when)
        stream.extend(_data(message.encode()))
        if parents:
            stream.extend(b"from :%d\n" % parents[0])
            for parent in parents[1:]:
                stream.extend(b"merge :%d\n" % parent)
        stream.extend(changes + b"\n")
        return mark

    setup = b"".join(
        b"M 100644 inline m/%04d.txt\n" % i + _data(module_text(i, 0).encode())
        for i in range(fixes)
    )
    master = maint = commit("refs/heads/master", "start", [], setup)
    stream.extend(b"reset refs/tags/v0.1.0\nfrom :%d\n\n" % master)
    history = [master]  # master's first-parent line, for forks from older points
    tags = ["v0.1.0"]
    fix_every = max(1, commits // (fixes + 1))
    fix_marks: list[int] = []
    topic = 0
    while mark < commits:
        topic += 1
        base = maint if rng.random() < 0.7 else rng.choice(history[-200:])
        ref = f"refs/heads/topic{topic % 50}"
        head = base
        for step in range(rng.randint(1, 6)):
            due = mark // fix_every > len(fix_marks) and len(fix_marks) < fixes
            if due:
                k = len(fix_marks)
                change = b"M 100644 inline m/%04d.txt\n" % k + _data(module_text(k, 1).encode())
                head = commit(ref, f"fix module {k}", [head], change)
                fix_marks.append(head)
            else:
                name = f"t/{topic % 997}/{step}.txt"
                change = b"M 100644 inline %s\n" % name.encode() + _data(f"{topic}\n".encode())
                head = commit(ref, f"topic {topic} step {step}", [head], change)
        master = commit("refs/heads/master", f"Merge branch 'topic{topic}'", [master, head], b"")
        history.append(master)
        if topic % 3 == 0:
            maint = commit(
                "refs/heads/maint", f"Merge branch 'topic{topic}' into maint", [maint, head], b""
            )
            master = commit("refs/heads/master", "Merge branch 'maint'", [master, maint], b"")
            history.append(master)
        if mark // 1000 >= len(tags):
            tags.append(f"v1.{len(tags)}.0")
            stream.extend(b"reset refs/tags/%s\nfrom :%d\n\n" % (tags[-1].encode(), master))
    by_mark = fast_import(path, stream)
    return [by_mark[f":{m}"] for m in fix_marks], tags


def merge_base_loop(repo: Path, commits: Sequence[str], tip: str) -> list[bool]:
    """The baseline: one ``git merge-base --is-ancestor <commit> <tip>`` process per
    commit, as a shell loop would run them."""
    return [
        subprocess.run(
            git_argv(["merge-base", "--is-ancestor", commit, tip]), cwd=repo, env=hardened_env()
        ).returncode
        == 0
        for commit in commits
    ]


def patch_id_pipeline(repo: Path, tip: str, since: str) -> bytes:
    """The baseline: ``git log -p tip ^since | git patch-id --stable``, scripted."""
    log = subprocess.Popen(
        git_argv(["log", "-p", "--no-merges", "--format=commit %H", tip, f"^{since}"]),
        cwd=repo,
        env=hardened_env(),
        stdout=subprocess.PIPE,
    )
    ids = subprocess.run(
        git_argv(["patch-id", "--stable"]),
        cwd=repo,
        env=hardened_env(),
        stdin=log.stdout,
        capture_output=True,
        check=True,
    ).stdout
    log.wait()
    return ids


def write_fork(path: Path, fixes: list[str], pin_commit: str, pin_tag: str = "v0.1.0") -> None:
    """The fork's files in ``path``: one patch per fix (module k's value 0 -> 1), mapped
    to it, pinned at ``pin_tag``."""
    (path / "patches").mkdir()
    names = []
    for i, fix in enumerate(fixes):
        name = f"{i + 1:04d}-fix-module-{i}.patch"
        names.append(f"{name} {fix}")
        (path / "patches" / name).write_text(
            f"Subject: fix module {i}\n\n"
            f"diff --git a/m/{i:04d}.txt b/m/{i:04d}.txt\n"
            f"--- a/m/{i:04d}.txt\n+++ b/m/{i:04d}.txt\n"
            f"@@ -1,4 +1,4 @@\n # module {i}\n header = {i}\n-value = 0\n+value = 1\n footer = {i}\n"
        )
    (path / "series").write_text("".join(n.split()[0] + "\n" for n in names))
    (path / "upstream.map").write_text("".join(n + "\n" for n in names))
    (path / "forktool.yaml").write_text(
        f"pin:\n  tag: {pin_tag}\n  commit: {pin_commit}\nrecord: FORK.md\n"
    )


# -- a short history of real-sized commits --------------------------------------------------

WORDS = (
    "alpha beta gamma delta config engine retry timeout decode buffer stream token "
    "parser window cache index report value result handler session client server"
).split()


def _source_line(rng: random.Random) -> str:
    indent = "    " * rng.randint(0, 3)
    a, b, c = rng.choice(WORDS), rng.choice(WORDS), rng.choice(WORDS)
    n = rng.randint(0, 99999)
    form = rng.randint(0, 5)
    if form == 0:
        return f"{indent}{a}_{b} = {c}({n}, '{a}{b}')"
    if form == 1:
        return f"{indent}if {a}.{b} > {n}:"
    if form == 2:
        return f"{indent}return {a}_{b}({c}, timeout={n})"
    if form == 3:
        return f"{indent}# {a} {b} {c} {n}"
    if form == 4:
        return f"{indent}def {a}_{b}_{n}(self, {c}):"
    return ""


class _Lines:
    """Source-like lines, drawn from a pool (drawing each line afresh is too slow)."""

    def __init__(self, rng: random.Random, size: int = 20_000) -> None:
        self.rng = rng
        self.pool = [_source_line(rng) for _ in range(size)]

    def take(self, count: int) -> list[str]:
        return self.rng.choices(self.pool, k=count)


def _blob(lines: list[str]) -> bytes:
    return "".join(line + "\n" for line in lines).encode()


class _History:
    """A ``git fast-import`` stream of one linear branch, built commit by commit."""

    def __init__(self) -> None:
        self.stream = bytearray()
        self.clock = 1_700_000_000

    def commit(self, mark: int, message: str, changes: bytes) -> None:
        self.clock += 60
        self.stream.extend(b"commit refs/heads/main\nmark :%d\n" % mark)
        who = b"Bench <bench@example.org> %d +0000\n" % self.clock
        self.stream.extend(b"author " + who + b"committer " + who)
        self.stream.extend(_data(message.encode()))
        if mark > 1:
            self.stream.extend(b"from :%d\n" % (mark - 1))
        self.stream.extend(changes)

    def import_into(self, path: Path) -> None:
        subprocess.run(
            git_argv(["init", "-q", "-b", "main", str(path)]), check=True, env=hardened_env()
        )
        subprocess.run(
            git_argv(["fast-import", "--quiet"]),
            cwd=path,
            input=bytes(self.stream),
            check=True,
            env=hardened_env(),
        )
        # Packed as a clone from a server is: fast-import deltas each blob against the
        # one written before it, so unrelated files share delta chains up to 50 deep
        # (every read of a base blob then inflates most of a chain), which a real
        # repository never has. -f recomputes the deltas; one thread keeps it seeded.
        subprocess.run(
            git_argv(["-c", "pack.threads=1", "repack", "-adfq"]),
            cwd=path,
            check=True,
            env=hardened_env(),
        )


def synthesize(path: Path, *, files: int, commits: int, seed: int = 7) -> None:
    """A linear history: one import of ``files`` source files, then ``commits`` commits
    that each edit 1-4 files in 1-3 places (and now and then add or delete a file)."""
    rng = random.Random(seed)
    source = _Lines(rng)
    tree: dict[str, list[str]] = {}
    for n in range(files):
        name = f"src/{rng.choice(WORDS)}_{n // 50}/{rng.choice(WORDS)}_{n}.py"
        tree[name] = source.take(rng.randint(40, 900))
    history = _History()
    commit = history.commit

    initial = b"".join(
        b"M 100644 inline " + name.encode() + b"\n" + _data(_blob(lines))
        for name, lines in tree.items()
    )
    commit(1, "import\n", initial)
    for mark in range(2, commits + 2):
        changes = bytearray()
        roll = rng.random()
        if roll < 0.05:
            name = f"src/new/{rng.choice(WORDS)}_{mark}.py"
            tree[name] = source.take(rng.randint(20, 300))
            changes.extend(b"M 100644 inline " + name.encode() + b"\n" + _data(_blob(tree[name])))
        elif roll < 0.07 and len(tree) > 10:
            name = rng.choice(sorted(tree))
            del tree[name]
            changes.extend(b"D " + name.encode() + b"\n")
        edited: dict[str, bool] = {}
        for name in rng.sample(sorted(tree), rng.randint(1, 4)):
            lines = tree[name]
            before = list(lines)
            for _ in range(rng.randint(1, 3)):
                at = rng.randint(0, max(0, len(lines) - 1))
                removed = rng.randint(0, 6)
                lines[at : at + removed] = source.take(rng.randint(0, 12))
            edited[name] = lines != before
        if not changes and not any(edited.values()):
            # Edits that changed nothing would make an empty commit (a patch with no
            # diff); no random draw here, so the rest of the history stays the same.
            tree[name].append(f"# commit {mark}")
        for name in edited:
            changes.extend(b"M 100644 inline " + name.encode() + b"\n" + _data(_blob(tree[name])))
        commit(mark, f"change {mark}\n\nSynthetic commit {mark}.\n", bytes(changes))
    history.import_into(path)


# -- a real-size upstream ------------------------------------------------------------------

# Top-level packages of the realistic tree, and words for its sub-packages and modules.
PACKAGES = (
    "core io net sql cli web auth cache plugins compat utils testing docs tools "
    "server client parser render storage"
).split()


def _weighted(rng: random.Random, top: int, power: float) -> int:
    """1..top, small values far more likely (P(k) ~ k**-power): most commits touch a
    file or two, a few touch dozens."""
    weights = [k**-power for k in range(1, top + 1)]
    return rng.choices(range(1, top + 1), weights=weights)[0]


def _file_lines(rng: random.Random) -> int:
    """A real project's file length: log-normal, median 150 lines, tail cut at 5,000."""
    return max(5, min(5000, int(rng.lognormvariate(math.log(150), 1.0))))


def _module_path(rng: random.Random, n: int) -> str:
    parts = [rng.choice(PACKAGES)]
    for _ in range(rng.choice((0, 1, 1, 2, 2, 3))):
        parts.append(rng.choice(WORDS))
    return "/".join([*parts, f"{rng.choice(WORDS)}_{n}.py"])


def _edit(rng: random.Random, source: _Lines, lines: list[str], hunks: int) -> None:
    """Change ``lines`` in ``hunks`` places spread over the file (bottom up, so each
    place is where it was drawn)."""
    room = range(max(1, len(lines)))
    spots = sorted(rng.sample(room, min(hunks, len(room))), reverse=True)
    for at in spots:
        removed = rng.randint(0, 8)
        added = source.take(rng.randint(0 if removed else 1, 12))
        lines[at : at + removed] = added


def realistic(path: Path, *, files: int = 5000, commits: int, seed: int = 16) -> None:
    """A real-size upstream: one import of ``files`` source files nested in packages,
    their lengths log-normal (median 150 lines, a tail to 5,000), then ``commits``
    commits that each touch 1-30 files (most touch one or two) in 1-15 places, and now
    and then add, delete or rename a file. Seeded: the same arguments give the same
    history, so numbers compare between runs."""
    rng = random.Random(seed)
    source = _Lines(rng)
    tree: dict[str, list[str]] = {}
    while len(tree) < files:
        tree[_module_path(rng, len(tree))] = source.take(_file_lines(rng))
    history = _History()
    commit = history.commit

    def blob(name: str) -> bytes:
        return b"M 100644 inline " + name.encode() + b"\n" + _data(_blob(tree[name]))

    commit(1, "import\n", b"".join(blob(name) for name in tree))
    names = sorted(tree)
    for mark in range(2, commits + 2):
        changes = bytearray()
        roll = rng.random()
        if roll < 0.03:
            name = _module_path(rng, len(names) + mark * 7)
            if name not in tree:
                tree[name] = source.take(min(_file_lines(rng), 600))
                names.append(name)
                changes.extend(blob(name))
        elif roll < 0.05 and len(names) > 100:
            name = names.pop(rng.randrange(len(names)))
            del tree[name]
            changes.extend(b"D " + name.encode() + b"\n")
        elif roll < 0.07 and len(names) > 100:
            old = names.pop(rng.randrange(len(names)))
            new = _module_path(rng, len(names) + mark * 7 + 1)
            if new in tree:
                names.append(old)
            else:
                tree[new] = tree.pop(old)
                names.append(new)
                changes.extend(b"R " + old.encode() + b" " + new.encode() + b"\n")
        touched = rng.sample(names, _weighted(rng, 30, 1.2))
        for name in touched:
            _edit(rng, source, tree[name], _weighted(rng, 15, 1.0))
            changes.extend(blob(name))
        commit(mark, f"change {mark}\n\nSynthetic commit {mark}.\n", bytes(changes))
    history.import_into(path)


# -- measuring ---------------------------------------------------------------------------


def median_time(run: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


# Runs a command and reports its exit code, time and peak memory. A small process of
# its own does the spawning: a child forked from a benchmark (a large process) would
# count the benchmark's pages in its ru_maxrss.
_MEASURE = """
import os, subprocess, sys, time
start = time.perf_counter()
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(child.pid, 0)
print(os.waitstatus_to_exitcode(status), time.perf_counter() - start, usage.ru_maxrss)
"""


def user_env() -> dict[str, str]:
    """The environment with bytecode caching on, as a user has it (this machine may set
    PYTHONDONTWRITEBYTECODE, which makes every run compile forktool's modules again)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def measure_cli(
    args: Sequence[str],
    *,
    expect: int = 0,
    env: dict[str, str] | None = None,
    python: str | None = None,
    script: str | None = None,
) -> tuple[float, int]:
    """Seconds and peak resident KiB (it and its git children) of ``forktool ARGS``
    (``env``: the environment to run it in, default this process's; ``python``: the
    interpreter of another forktool installation, run outside this checkout so that
    it imports its own; ``script``: Python code run on ARGS instead of forktool)."""
    runs = ["-c", script] if script is not None else ["-m", "forktool"]
    argv = [python or sys.executable, *runs, *args]
    cwd = ROOT if python is None else Path(tempfile.gettempdir())
    res = subprocess.run(
        [sys.executable, "-c", _MEASURE, *argv], capture_output=True, check=True, cwd=cwd, env=env
    )
    code, seconds, peak = res.stdout.split()
    if int(code) != expect:
        what = "forktool" if script is None else "a script on"
        raise SystemExit(f"{what} {' '.join(args)} exited {int(code)}, not {expect}")
    return float(seconds), int(peak)


def cpu_seconds(run: Callable[[], object]) -> float:
    """User + system CPU seconds of one ``run()``, its git children included: unlike the
    wall-clock time, barely moved by other work on a shared machine."""
    import resource

    def now() -> float:
        me = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime

    start = now()
    run()
    return now() - start


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def write_summary(path: Path | None, rows: list[dict[str, object]]) -> None:
    """Append result rows (one JSON object a line) for ``bench/run``'s table.

    A row: ``bench``, ``size`` (e.g. "200 patches"), ``contender``, ``seconds``
    (median; None when skipped), ``baseline`` (the name of what it is compared with),
    ``baseline_seconds``, ``peak_mib`` (or None), ``load`` (load averages), ``note``.
    """
    if path is None:
        return
    with path.open("a", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row) + "\n")
