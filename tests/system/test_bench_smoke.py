"""The benchmarks still run: bench/verify on a small synthesized series (their numbers
are read by people, never asserted; a benchmark that crashes measures nothing)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
SMALL = (
    "--patches",
    "20",
    "--files",
    "200",
    "--repeat",
    "1",
    "--no-worktree",
    "--quilt-repeat",
    "0",
)


def bench_verify(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(BENCH / "verify"), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )


@pytest.mark.slow
def test_bench_verify_runs_and_prints_both_ratios() -> None:
    res = bench_verify(*SMALL)

    assert res.returncode == 0, res.stderr
    assert "serial CLI (--jobs 1)" in res.stdout
    assert "side by side (--jobs 2)" in res.stdout
    # The series goes side by side: its bounds are measured in the same round robin.
    assert "bins of " in res.stdout
    assert "bins alone (--jobs 2's git half)" in res.stdout
    assert "bound    : --jobs 2's git half alone" in res.stdout
    assert "cores    : two git processes at once got" in res.stdout


@pytest.mark.slow
def test_bench_verify_holds_a_short_series_to_the_fixed_cost_target() -> None:
    """A 5-patch series measures verify's fixed cost (within 2x the floor's call pair);
    it never goes side by side, so the side-by-side targets are not printed for it."""
    res = bench_verify("--patches", "5", *SMALL[2:])

    assert res.returncode == 0, res.stderr
    assert "CLI within 2.0x of the raw floor" in res.stdout
    assert "side by side (--jobs 2) <= 0.8x" not in res.stdout
    assert "bins alone" not in res.stdout and "cores    :" not in res.stdout
