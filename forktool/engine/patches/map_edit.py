"""Changing ``upstream.map`` entries, all at once or not at all.

The one writer of map entries for commands that fill or resolve them (``map suggest
--write``, ``upstream resolve --write``): each entry replaces its patch's line where it
stands, or is appended; every other line (comments, order, notes) stays as written.
The new map is parsed before anything is written, and written with
:func:`~forktool.fsutil.write_files`. The caller holds the fork lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from forktool.config import Config
from forktool.errors import InputError
from forktool.fsutil import write_files
from forktool.inputs import read_input
from forktool.model.upstream_map import MapEntry, parse_map


@dataclass(frozen=True)
class MapChange:
    patch: str
    old: str | None  # the line's value before (commits and note), None when there was none
    new: str

    def to_json(self) -> dict[str, object]:
        return {"patch": self.patch, "old": self.old, "new": self.new}


def entry_value(entry: MapEntry) -> str:
    """What a map line says after the patch name."""
    return entry.render()[len(entry.patch) :].strip()


def apply_map_changes(
    config: Config, entries: Sequence[MapEntry], *, dry_run: bool = False
) -> tuple[MapChange, ...]:
    """Write ``entries`` into ``upstream.map`` (replacing or appending their lines).

    Returns the entries that changed. Nothing is written when none did, when
    ``dry_run``, or when the result would not parse (exit 2, naming the line).
    """
    path = config.map_path
    data = read_input(path, config.upstream_map, follow=False) if path.exists() else b""
    umap = parse_map(data, config.upstream_map)
    changes: list[MapChange] = []
    for entry in entries:
        old = umap.get(entry.patch)
        before = entry_value(old) if old is not None else None
        if before == entry_value(entry):
            continue
        umap = umap.with_entry(entry)
        changes.append(MapChange(entry.patch, before, entry_value(entry)))
    errors = [f for f in parse_map(umap.to_bytes(), config.upstream_map).findings]
    errors = [f for f in errors if f.severity == "error"]
    if errors:
        raise InputError(errors, "nothing was written")
    if changes and not dry_run:
        write_files({path: umap.to_bytes()})
    return tuple(changes)
