"""Properties of the exact-apply engine over random small trees and random series."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from testing.helpers import MiniFork, run_cli

from forktool.builder import RepoBuilder
from forktool.demo.example import FORMAT_PATCH_ARGS

pytestmark = pytest.mark.slow  # property tests

_line = st.text(alphabet="abcdefghij =+-_", min_size=0, max_size=12)
_file = st.lists(_line, min_size=1, max_size=30)
_tree = st.dictionaries(
    st.sampled_from(["a.txt", "b.txt", "src/c.py", "src/d.py"]), _file, min_size=1
)


@st.composite
def _edits(draw: st.DrawFn, tree: dict[str, list[str]]) -> list[dict[str, list[str]]]:
    """A series of 1-4 successive edits, each replacing, inserting or deleting lines."""
    state = {k: list(v) for k, v in tree.items()}
    series = []
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(sorted(state)))
        lines = state[path]
        at = draw(st.integers(0, len(lines)))
        kind = draw(st.sampled_from(["insert", "replace", "delete"]))
        if kind == "insert" or not lines or at == len(lines):
            lines.insert(at, f"new line {len(series)} " + draw(_line))
        elif kind == "replace":
            lines[at] = f"changed {len(series)} " + draw(_line)
        elif len(lines) > 1:
            del lines[at]
        else:
            lines.append(f"grown {len(series)}")
        state[path] = lines
        series.append({k: list(v) for k, v in state.items()})
    return series


def _text(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


def _fork_from(
    tree: dict[str, list[str]], steps: list[dict[str, list[str]]], where: Path
) -> MiniFork:
    repo = RepoBuilder.init(where)
    repo.commit("upstream\n", {k: _text(v) for k, v in tree.items()})
    repo.tag("v1")
    for number, state in enumerate(steps, start=1):
        repo.commit(f"fix {number}\n", {k: _text(v) for k, v in state.items()})
    out = repo.git.run(
        [*FORMAT_PATCH_ARGS, "-o", str(where / "_out"), "v1..HEAD"], purpose="export"
    )
    patches = {Path(p).name: Path(p).read_bytes() for p in out.out.split()}
    repo.git.run(["checkout", "-q", "-B", "fork", "v1"], purpose="back to the pin")
    fork = MiniFork(repo, "v1")
    fork.write(patches)
    return fork


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_series_made_from_real_diffs_is_always_exact_with_a_round_trip(data: st.DataObject) -> None:
    tree = data.draw(_tree)
    steps = data.draw(_edits(tree))
    with tempfile.TemporaryDirectory() as tmp:
        fork = _fork_from(tree, steps, Path(tmp) / "r")
        result = fork.cli("verify", "--format", "json")
        payload = result.json()
        assert result.code == 0, result.out
        assert payload["ok"] is True and payload["round_trip"] is True
        assert {p["status"] for p in payload["patches"]} == {"exact"}  # type: ignore[union-attr]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_any_single_line_corruption_of_context_is_never_exact(data: st.DataObject) -> None:
    tree = data.draw(_tree)
    steps = data.draw(_edits(tree))
    with tempfile.TemporaryDirectory() as tmp:
        fork = _fork_from(tree, steps, Path(tmp) / "r")
        candidates = []
        for name, body in fork.patches.items():
            lines = body.split(b"\n")
            in_hunk = False
            for index, line in enumerate(lines):
                if line.startswith(b"@@"):
                    in_hunk = True
                elif line.startswith(b"diff --git"):
                    in_hunk = False
                elif in_hunk and line.startswith(b" "):
                    candidates.append((name, index))
        assume(candidates)  # a series with no context line at all proves nothing here
        name, index = data.draw(st.sampled_from(candidates))
        lines = fork.patches[name].split(b"\n")
        lines[index] = lines[index] + b" corrupted"
        (fork.root / "patches" / name).write_bytes(b"\n".join(lines))
        result = fork.cli("verify", "--format", "json")
        assert result.code == 1
        statuses = {p["patch"]: p["status"] for p in result.json()["patches"]}  # type: ignore[union-attr]
        assert statuses[name] != "exact"
        assert run_cli("-C", fork.root, "verify").code == 1
