"""The size rule of docs/architecture.md: no module over 500 lines, no function over 60.

Every module of the package keeps it."""

from __future__ import annotations

import ast
from pathlib import Path

import forktool

PACKAGE = Path(forktool.__file__).parent
MODULE_LINES = 500
FUNCTION_LINES = 60


def oversized(path: Path, root: Path = PACKAGE) -> list[str]:
    """``<file>`` when the module is too long, ``<file>:<function>`` per long function."""
    text = path.read_text(encoding="utf-8")
    name = path.relative_to(root).as_posix()
    lines = len(text.splitlines())
    found = [f"{name}: {lines} lines"] if lines > MODULE_LINES else []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > FUNCTION_LINES:
                found.append(f"{name}:{node.name}: {length} lines")
    return found


def test_every_module_keeps_the_size_rule() -> None:
    modules = sorted(PACKAGE.rglob("*.py"))
    assert len(modules) > 100, f"found only {len(modules)} modules under {PACKAGE}"
    offenders = [o for path in modules for o in oversized(path)]
    assert offenders == []


def test_a_long_module_and_a_long_function_are_named(tmp_path: Path) -> None:
    body = "".join(f"    x = {i}\n" for i in range(MODULE_LINES))
    path = tmp_path / "big.py"
    path.write_text(f"def long():\n{body}", encoding="utf-8")
    assert oversized(path, tmp_path) == [
        f"big.py: {MODULE_LINES + 1} lines",
        f"big.py:long: {MODULE_LINES + 1} lines",
    ]
