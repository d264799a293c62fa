"""Fault injection at write points, for the interruption tests. Off unless asked for.

Every place where forktool changes something on disk (a file move in
:func:`forktool.fsutil.write_files`, a worktree, a branch, a commit) first calls
:func:`faultpoint` with a short name. Normally that does nothing. Two environment
variables turn it on, so a test can interrupt a real run (``python -m forktool``)
at exactly one chosen point:

``FORKTOOL_FAULT_LOG=FILE``
    append each point's name to FILE as it is reached (how the tests enumerate
    "every write point" of a command: run it once with this set).
``FORKTOOL_FAULT=NAME:NTH:SIGNAL``
    when point NAME is reached for the NTH time (1-based), send SIGNAL (``INT``,
    ``KILL``, ``TERM``, ``STOP``...) to this very process.
"""

from __future__ import annotations

import os
import signal

FAULT_ENV = "FORKTOOL_FAULT"
LOG_ENV = "FORKTOOL_FAULT_LOG"

_hits: dict[str, int] = {}


def faultpoint(name: str, *, write: bool = True) -> None:
    """A write point: record it and, if asked to, interrupt this process here.

    ``write=False`` marks a point that writes nothing (``cli.import`` and
    ``plain.import``, while the command line's front end loads): it can be interrupted but is not listed among the write points.
    """
    log = os.environ.get(LOG_ENV) if write else None
    spec = os.environ.get(FAULT_ENV)
    if not log and not spec:
        return
    _hits[name] = _hits.get(name, 0) + 1
    if log:
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(f"{name}\n")
    if spec:
        target, nth, sig = _parse(spec)
        if target == name and nth == _hits[name]:
            signal.raise_signal(sig)


def _parse(spec: str) -> tuple[str, int, signal.Signals]:
    try:
        name, nth, sig = spec.rsplit(":", 2)
        return name, int(nth), signal.Signals[f"SIG{sig.upper().removeprefix('SIG')}"]
    except (ValueError, KeyError) as exc:
        raise ValueError(f"{FAULT_ENV}={spec!r}: expected NAME:NTH:SIGNAL") from exc
