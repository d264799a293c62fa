"""Shared by several test modules (moved out of test_contract.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


_BLOCK = re.compile(r"^`([a-z][a-z -]*)`:\n```json\n(.*?)\n```$", re.MULTILINE | re.DOTALL)


def documented() -> dict[str, object]:
    """Every documented JSON shape, by command (e.g. ``pin show``, ``retire --undo``)."""
    text = (ROOT / "docs" / "contract.md").read_text(encoding="utf-8")
    shapes: dict[str, object] = {}
    for match in _BLOCK.finditer(text):
        assert match[1] not in shapes, f"{match[1]} is documented twice"
        shapes[match[1]] = json.loads(match[2])
    return shapes


def missing_keys(shape: object, actual: object, where: str = "$") -> list[str]:
    """Where ``actual`` lacks a key that ``shape`` documents (empty when it has them all)."""
    if isinstance(shape, dict):
        if actual is None:
            return []
        if not isinstance(actual, dict):
            return [f"{where}: documented as an object, is {type(actual).__name__}"]
        missing = [f"{where}.{key}" for key in shape if key not in actual]
        for key, value in shape.items():
            if key in actual:
                missing += missing_keys(value, actual[key], f"{where}.{key}")
        return missing
    if isinstance(shape, list) and shape:
        if actual is None:
            return []
        if not isinstance(actual, list):
            return [f"{where}: documented as a list, is {type(actual).__name__}"]
        return [
            m
            for i, item in enumerate(actual)
            for m in missing_keys(shape[0], item, f"{where}[{i}]")
        ]
    return []


def assert_contract(command: str, data: object) -> None:
    shape = documented()[command]
    assert missing_keys(shape, data) == [], f"`{command}` JSON lost documented keys"
