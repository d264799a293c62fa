"""Spotting the regular expressions that backtrack exponentially, before they run.

A ``pin_sites`` pattern comes from the fork's config and runs over the fork's
files. The classic catastrophic shape is an unbounded repeat whose body is
itself essentially one unbounded repeat, ``(a+)+`` or ``(\\w+\\.?)+``: the body
can split a run of characters in exponentially many ways, and a near-miss line
makes ``re`` try them all. :func:`nested_repeat` finds that shape in the parsed
pattern so the config is refused when it is read. A body with a required
separator, ``(\\d+\\.)+``, is linear and allowed.

Other pathological patterns (overlapping alternatives under a repeat,
``(?:\\d|\\d)+``) cannot be spotted by shape, and Python's ``re`` holds the
interpreter while it backtracks, so no signal or thread can stop it: every user
pattern therefore runs through :func:`run_limited`, in a separate, isolated Python
process with a time limit per (pattern, text) pair. A pattern that does not finish
raises :class:`RegexTimeout`, naming the pair, for the caller to refuse with the
pattern's config line.
"""

from __future__ import annotations

import os
import re._constants as sre  # type: ignore[import-not-found]  # the stdlib parser, no stubs
import re._parser as sre_parse  # type: ignore[import-not-found]
import select
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

_REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT)

TIMEOUT_SECONDS = 10.0  # per (pattern, text) pair: a linear pattern needs milliseconds
MAX_MATCHES = 1000  # per pair: enough to say "more than once"

# Runs in a child interpreter: reads {"patterns": [...], "texts": [...]} as JSON on
# stdin and writes one JSON line per (text, pattern) pair, text by text: the spans
# of the named group (-1, -1 when the group took no part), flushing each line so
# that a pair which does not finish is known by the number of lines written.
_MATCHER = """
import json, re, sys
group, limit = sys.argv[1], int(sys.argv[2])
job = json.load(sys.stdin)
compiled = [re.compile(p, re.MULTILINE) for p in job["patterns"]]
for text in job["texts"]:
    for regex in compiled:
        spans = []
        for m in regex.finditer(text):
            spans.append([m.start(group), m.end(group)])
            if len(spans) >= limit:
                break
        sys.stdout.write(json.dumps(spans) + "\\n")
        sys.stdout.flush()
"""


class RegexTimeout(Exception):
    """``patterns[pattern]`` did not finish on ``texts[text]`` within the limit."""

    def __init__(self, pattern: int, text: int, seconds: float) -> None:
        super().__init__(pattern, text, seconds)
        self.pattern = pattern
        self.text = text
        self.seconds = seconds


Spans = list[tuple[int, int]]


def run_limited(
    patterns: Sequence[str],
    texts: Sequence[str],
    group: str,
    *,
    timeout: float | None = None,
    limit: int = MAX_MATCHES,
) -> list[list[Spans]]:
    """For each text, for each pattern, the spans of ``group`` in every match (at most
    ``limit``), found in a child interpreter that may spend ``timeout`` seconds on any
    one (pattern, text) pair. Raises :class:`RegexTimeout` naming the pair that did not
    finish, and RuntimeError when the child fails otherwise."""
    if not patterns or not texts:
        return [[[] for _ in patterns] for _ in texts]
    import json  # here: the config's check of its patterns (nested_repeat) needs none

    seconds = TIMEOUT_SECONDS if timeout is None else timeout
    payload = json.dumps({"patterns": list(patterns), "texts": list(texts)}).encode()
    proc = subprocess.Popen(  # noqa: S603 - fixed argv: this interpreter, no shell
        [sys.executable, "-I", "-S", "-c", _MATCHER, group, str(limit)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    feeder = threading.Thread(target=_feed, args=(proc.stdin, payload), daemon=True)
    feeder.start()
    lines: list[bytes] = []
    expected = len(patterns) * len(texts)
    reader = _LineReader(proc.stdout)
    try:
        while len(lines) < expected:
            line = reader.next_line(seconds)
            if line is None:  # the time limit, or the child died
                if proc.poll() is None:
                    done = len(lines)
                    raise RegexTimeout(done % len(patterns), done // len(patterns), seconds)
                break
            lines.append(line)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        feeder.join()
        error = proc.stderr.read().decode(errors="replace").strip().splitlines()
        for stream in (proc.stdout, proc.stderr):
            stream.close()
    if len(lines) != expected:
        raise RuntimeError(error[-1] if error else "the pattern matcher failed")
    flat = [[(int(s), int(e)) for s, e in json.loads(line)] for line in lines]
    width = len(patterns)
    return [flat[i : i + width] for i in range(0, expected, width)]


def _feed(stream: Any, payload: bytes) -> None:
    try:
        stream.write(payload)
        stream.close()
    except OSError:
        pass  # the child was stopped (a timeout): nothing more to say


class _LineReader:
    """Lines of a pipe, each waited for at most a given time."""

    def __init__(self, stream: Any) -> None:
        self.fd = stream.fileno()
        self.buffer = b""

    def next_line(self, seconds: float) -> bytes | None:
        deadline = time.monotonic() + seconds
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                return None
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                return None
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line


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
