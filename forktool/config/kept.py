"""Parsed configs kept between runs, so a command starts without importing PyYAML.

Importing PyYAML costs a start-up 15-20 ms, more than parsing a config does; a fork's
``forktool.yaml`` changes far less often than commands run. So the first run keeps
the parsed document (:data:`RawNode`, plain tuples) and
later runs of the same text read it back. What is kept is only the parse: every
check of the values runs on every load.

An entry holds the whole text it was parsed from, and is used only for exactly that
text and the PyYAML installation that parsed it (its ``__init__.py``'s place, size
and time: an upgrade changes them). Only a document that parsed without an error is
kept. Entries live in the cache directory's ``config`` folder
(:mod:`forktool.cache_files`, which says when one is trusted); the :data:`KEPT`
most recently used stay.
"""

from __future__ import annotations

import marshal
import os
import zlib
from typing import Any

from forktool.cache_files import Store, cache_root, prune

# A parsed node: (kind, tag, value, style, line). A SCALAR's value is its raw text and
# its style its quoting (None: written plain); a SEQUENCE's value is a tuple of nodes;
# a MAPPING's a tuple of (key, value) node pairs. The line counts from 1.
RawNode = tuple[int, str, Any, "str | None", int]
SCALAR, SEQUENCE, MAPPING = 0, 1, 2

FORMAT = 1  # the entry's layout; a change here makes older entries unread
FOLDER = "config"
SUFFIX = ".nodes"
KEPT = 16

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
    return Store(root, FOLDER), f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}{SUFFIX}", parser


def recall(text: str) -> RawNode | None:
    """The document kept for exactly ``text`` by this PyYAML, or None."""
    entry = _entry(text)
    if entry is None:
        return None
    store, name, parser = entry
    data = store.read(name)
    if data is None:
        return None
    try:
        kept = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return None
    if (
        not isinstance(kept, tuple)
        or len(kept) != 4
        or kept[:3] != (FORMAT, parser, text)
        or not isinstance(kept[3], tuple)
    ):
        return None
    document: RawNode = kept[3]
    return document


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
    if store.write(name, data):
        prune([str(store.dir)], (SUFFIX,), KEPT)
