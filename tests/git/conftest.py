"""Fixtures of the git layer's tests."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from forktool.git import runner


@pytest.fixture
def commands(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Every git command started from now on (its arguments)."""
    seen: list[list[str]] = []
    real = runner.git_argv

    def recorded(args: Sequence[str]) -> list[str]:
        seen.append(list(args))
        return real(args)

    monkeypatch.setattr(runner, "git_argv", recorded)
    return seen
