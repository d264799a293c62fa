"""Parsed configs kept between runs, so a command starts without importing PyYAML.

Importing PyYAML costs a start-up 15-20 ms, more than parsing a config does; a fork's
``forktool.yaml`` changes far less often than commands run. So the first run keeps
the parsed document (:data:`RawNode`, plain tuples) and
later runs of the same text read it back. What is kept is only the parse: every
check of the values runs on every load.

An entry holds the whole text it was parsed from, and is used only for exactly that
text and the PyYAML installation that parsed it (its ``__init__.py``'s place, size
and time: an upgrade changes them). Only a document that parsed without an error is
kept, sealed with two checksums of its payload: an entry is read back only when they
hold and what it holds is a well-formed document (a torn or changed entry is parsed
again, never trusted). Entries live in the cache directory's ``config`` folder
(:mod:`forktool.cache_files`, which says when one is trusted); the :data:`KEPT`
most recently used stay.
"""

from __future__ import annotations

import marshal
import os
import re
from typing import Any

from forktool.cache_files import Store, cache_root, checksum_name, prune

# A parsed node: (kind, tag, value, style, line). A SCALAR's value is its raw text and
# its style its quoting (None: written plain); a SEQUENCE's value is a tuple of nodes;
# a MAPPING's a tuple of (key, value) node pairs. The line counts from 1.
RawNode = tuple[int, str, Any, "str | None", int]
SCALAR, SEQUENCE, MAPPING = 0, 1, 2

FORMAT = 2  # the entry's layout; a change here makes older entries unread
FOLDER = "config"
SUFFIX = ".nodes"
KEPT = 16
_SEAL = 16  # bytes of checksum after an entry's payload
_DEPTH = 64  # nesting deeper than any config forktool reads
_ENTRY = re.compile(r"[0-9a-f]{16}" + re.escape(SUFFIX))

_parser: str | None = None


def parser_identity() -> str | None:
    """The PyYAML that parses, found without importing it: its ``__init__.py``'s
    path, size and modification time; None when there is none."""
    global _parser
    if _parser is None:
        from importlib.machinery import PathFinder

        spec = PathFinder.find_spec("yaml")
        origin = spec.origin if spec is not None else None
        if origin is None:
            return None
        try:
            info = os.stat(origin)
        except OSError:
            return None
        _parser = f"{origin}\0{info.st_size}\0{info.st_mtime_ns}"
    return _parser


def _entry(text: str) -> tuple[Store, str, str] | None:
    """(store, entry name, parser identity) for ``text``; None when the cache is off."""
    root = cache_root()
    parser = parser_identity()
    if root is None or parser is None:
        return None
    data = text.encode("utf-8", "surrogatepass")
    return Store(root, FOLDER), checksum_name(data) + SUFFIX, parser


def recall(text: str) -> RawNode | None:
    """The document kept for exactly ``text`` by this PyYAML, or None."""
    entry = _entry(text)
    if entry is None:
        return None
    store, name, parser = entry
    data = store.read(name)
    if data is None or len(data) < _SEAL or data[-_SEAL:] != _seal(data[:-_SEAL]):
        return None  # none, or not as it was written: a torn or changed entry
    try:
        kept = marshal.loads(data[:-_SEAL])
    except (EOFError, ValueError, TypeError):
        return None
    if (
        not isinstance(kept, tuple)
        or len(kept) != 4
        or kept[:3] != (FORMAT, parser, text)
        or not _well_formed(kept[3])
    ):
        return None
    document: RawNode = kept[3]
    return document


def _seal(data: bytes) -> bytes:
    """Two checksums of an entry's payload, as its last :data:`_SEAL` bytes."""
    return checksum_name(data).encode()


def _well_formed(node: object, depth: int = 0) -> bool:
    """``node`` is a :data:`RawNode` all the way down (what the config reader takes)."""
    if depth > _DEPTH or not isinstance(node, tuple) or len(node) != 5:
        return False
    kind, tag, value, style, line = node
    if not (
        isinstance(tag, str)
        and (style is None or isinstance(style, str))
        and type(line) is int
        and line > 0
    ):
        return False
    if kind == SCALAR:
        return isinstance(value, str)
    if not isinstance(value, tuple):
        return False
    if kind == SEQUENCE:
        return all(_well_formed(item, depth + 1) for item in value)
    return kind == MAPPING and all(
        isinstance(pair, tuple)
        and len(pair) == 2
        and _well_formed(pair[0], depth + 1)
        and _well_formed(pair[1], depth + 1)
        for pair in value
    )


def keep(text: str, document: RawNode) -> None:
    """Keep ``document``, parsed from ``text``, for later runs."""
    entry = _entry(text)
    if entry is None:
        return
    store, name, parser = entry
    try:
        data = marshal.dumps((FORMAT, parser, text, document))
    except ValueError:  # not plain data: nothing to keep
        return
    if store.write(name, data + _seal(data)):
        prune([str(store.dir)], _ENTRY, KEPT)
