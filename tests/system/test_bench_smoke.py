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


@pytest.mark.slow
def test_bench_verify_runs_and_prints_both_ratios() -> None:
    res = subprocess.run(
        [sys.executable, str(BENCH / "verify"), *SMALL],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )

    assert res.returncode == 0, res.stderr
    assert "serial CLI (--jobs 1)" in res.stdout
    assert "side by side (--jobs 2)" in res.stdout
