"""Spotting the regular expressions that backtrack exponentially, before they run.

A ``pin_sites`` pattern comes from the fork's config and runs over the fork's
files. The classic catastrophic shape is an unbounded repeat whose body is
itself essentially one unbounded repeat, ``(a+)+`` or ``(\\w+\\.?)+``: the body
can split a run of characters in exponentially many ways, and a near-miss line
makes ``re`` try them all. :func:`nested_repeat` finds that shape in the parsed
pattern so the config is refused when it is read. A body with a required
separator, ``(\\d+\\.)+``, is linear and allowed. Other pathological patterns
(overlapping alternatives under a repeat) are still caught at run time by the
pin-site matcher's time limit.
"""

from __future__ import annotations

import re._constants as sre  # type: ignore[import-not-found]  # the stdlib parser, no stubs
import re._parser as sre_parse  # type: ignore[import-not-found]
from typing import Any

_REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT)


def nested_repeat(pattern: str) -> bool:
    """Whether ``pattern`` nests an unbounded repeat directly inside another."""
    return _scan(list(sre_parse.parse(pattern).data))


def _children(op: Any, av: Any) -> list[list[Any]]:
    """The sub-pattern item lists under one parsed item."""
    if op in _REPEATS:
        return [list(av[2])]
    if op is sre.SUBPATTERN:
        return [list(av[-1])]
    if op is sre.BRANCH:
        return [list(branch) for branch in av[1]]
    if op in (sre.ASSERT, sre.ASSERT_NOT):
        return [list(av[1])]
    if op is sre.GROUPREF_EXISTS:
        return [list(part) for part in av[1:] if part is not None]
    if op is getattr(sre, "ATOMIC_GROUP", None):
        return []  # an atomic group never backtracks into its body
    return []


def _scan(items: list[Any]) -> bool:
    for op, av in items:
        if op in _REPEATS and av[1] is sre.MAXREPEAT and _ambiguous(list(av[2])):
            return True
        if any(_scan(child) for child in _children(op, av)):
            return True
    return False


def _flatten(items: list[Any]) -> list[Any]:
    """``items`` with plain groups opened up: ``((a+)b?)`` is ``a+ b?``."""
    flat: list[Any] = []
    for op, av in items:
        if op is sre.SUBPATTERN:
            flat.extend(_flatten(list(av[-1])))
        else:
            flat.append((op, av))
    return flat


def _ambiguous(body: list[Any]) -> bool:
    """A repeat body that is one unbounded repeat plus only optional items."""
    flat = _flatten(body)
    unbounded = [item for item in flat if item[0] in _REPEATS and item[1][1] is sre.MAXREPEAT]
    if not unbounded:
        return False
    return all(item in unbounded or _optional(item) for item in flat)


def _optional(item: Any) -> bool:
    op, av = item
    if op in _REPEATS:
        return bool(av[0] == 0)
    return op is sre.AT  # anchors match no characters
