"""The layering rules of docs/architecture.md, read off the source."""

from __future__ import annotations

import ast
from pathlib import Path

import forktool

ENGINE = Path(forktool.__file__).parent / "engine"

# Engines that still write git command lines of their own (none: every git and GNU
# patch command line is in git.py). Add a module here only while its lines move.
STILL_MOVING: set[str] = set()


def _git_command_lines(path: Path) -> list[str]:
    """``<file>:<line>`` of each ``x.run([...])`` / ``x.out([...])`` given a literal
    argument list (a subprocess the module starts for itself is not git)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        receiver = node.func.value
        if isinstance(receiver, ast.Name) and receiver.id == "subprocess":
            continue
        if node.func.attr in ("run", "out") and node.args:
            if isinstance(node.args[0], (ast.List, ast.Tuple)):
                found.append(f"{path.name}:{node.lineno}")
    return found


def test_engines_leave_git_command_lines_to_git_py() -> None:
    offenders = [
        where
        for path in sorted(ENGINE.glob("*.py"))
        if path.name not in STILL_MOVING
        for where in _git_command_lines(path)
    ]
    assert offenders == []
