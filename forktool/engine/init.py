"""``forktool init``: scaffold a fork's files, pinned to a tag that resolves."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from forktool.config import CONFIG_NAME
from forktool.errors import FatalError
from forktool.fsutil import write_files
from forktool.git import Git
from forktool.model.record import empty_section

FORK_MD = """\
# Fork notes

This repository is a soft fork of {remote_hint}, pinned to upstream release
`{tag}` and carrying a small series of patches on top. It is kept with
[forktool](https://pypi.org/project/forktool/).

## Charter

- **Additive only.** Upstream files are changed by patches in `patches/`, never
  edited in place; every other divergence from the pinned tag is declared in
  `alignment.ledger` with an exit criterion.
- **One patch per upstream fix.** Each patch maps to the upstream commit(s) in
  `upstream.map` whose presence in a release retires it (`none` until merged).
- **Retire by ancestry.** A patch is dropped only when the pinned release tag
  contains its upstream commit (`forktool absorbed --tag TAG`), never because a
  probe passed without it.

## Release procedure

1. `forktool upstream poll` - is there a newer release, and what would a sync do?
2. `forktool sync TAG` - retire what the tag absorbed, refresh the rest, bump pins.
3. `forktool check` - the gate: exact apply, round trip, pins, alignment, record.

## Retirement record

Maintained by `forktool retire`; do not edit between the markers.

"""

SERIES = "# Patch series, applied in this order with -p1. One patch file name per line.\n"
UPSTREAM_MAP = (
    "# <patch-file> <40-hex upstream commit>[,<commit>...] [url or note]\n"
    "# 'pending [PR-url]' marks a patch waiting for upstream (never retired);\n"
    "# 'none' marks a fork-only patch that no upstream commit will ever retire.\n"
)
LEDGER = (
    "# Declared divergence from the pinned tag.\n"
    "# <add|del> <path-or-glob> <permanent|until:<condition>> <rationale...>\n"
)


def config_text(tag: str, commit: str, remote: str, url: str | None, layout: str) -> str:
    upstream = f"upstream:\n  remote: {remote}\n" + (f"  url: {url}\n" if url else "")
    return (
        f"{upstream}"
        f"pin:\n  tag: {tag}\n  commit: {commit}\n"
        f"layout: {layout}\n"
        "release_tags: 'v*'\n"
        "series: series\n"
        "patches: patches\n"
        "upstream_map: upstream.map\n"
        "ledger: alignment.ledger\n"
        "record: FORK.md\n"
    )


def ledger_text(layout: str) -> str:
    if layout != "merged":
        return LEDGER
    own = ["forktool.yaml", "series", "patches/**", "upstream.map", "alignment.ledger", "FORK.md"]
    return LEDGER + "".join(
        f"add {path} permanent forktool's files for this fork\n" for path in own
    )


@dataclass(frozen=True)
class InitResult:
    root: Path
    tag: str
    commit: str
    written: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "root": str(self.root),
            "tag": self.tag,
            "commit": self.commit,
            "written": list(self.written),
        }


def scaffold(
    root: Path, git: Git, *, tag: str, remote: str, url: str | None, layout: str
) -> InitResult:
    files = {
        CONFIG_NAME: None,
        "series": SERIES,
        "upstream.map": UPSTREAM_MAP,
        "alignment.ledger": ledger_text(layout),
        "FORK.md": FORK_MD.format(tag=tag, remote_hint=url or f"the '{remote}' remote")
        + empty_section(),
        "patches/notes/README.md": "Per-patch context notes: `<patch-stem>.md`.\n",
    }
    existing = [name for name in files if (root / name).exists()]
    if existing:
        raise FatalError(
            f"refusing to overwrite existing {', '.join(existing)}",
            "forktool init only creates files; move them aside or edit them by hand",
        )
    commit = git.peel_tag(tag)
    files[CONFIG_NAME] = config_text(tag, commit, remote, url, layout)
    write_files({root / name: (text or "").encode() for name, text in files.items()})
    return InitResult(root, tag, commit, tuple(files))
