"""The pinned tag as the repository sees it: does it still peel to the recorded commit?"""

from __future__ import annotations

from typing import NamedTuple

from forktool.config import Config
from forktool.errors import FatalError, command_line
from forktool.git import Git
from forktool.model.revision import tarball_tree


class PinState(NamedTuple):
    tag: str
    recorded: str  # pin.commit in forktool.yaml
    actual: str | None  # what the tag peels to now, None when the tag is absent

    @property
    def present(self) -> bool:
        return self.actual is not None

    @property
    def moved(self) -> bool:
        return self.actual is not None and self.actual != self.recorded

    def to_json(self) -> dict[str, object]:
        return {"tag": self.tag, "commit": self.recorded, "tag_commit": self.actual, "ok": self.ok}

    @property
    def ok(self) -> bool:
        return self.present and not self.moved


def pin_state(config: Config, git: Git) -> PinState:
    return PinState(config.pin_tag, config.pin_commit, git.find_tag_commit(config.pin_tag))


def require_pin(config: Config, git: Git) -> str:
    """The pinned commit, refusing a missing or moved tag (exit 2)."""
    state = pin_state(config, git)
    if not state.present:
        git.require_objects()
        raise FatalError(
            f"pinned tag '{state.tag}' does not exist in this repository",
            f"fetch it: {command_line('git', 'fetch', config.upstream_remote, 'tag', state.tag)}",
        )
    if state.moved:
        assert state.actual is not None
        raise FatalError(
            f"pinned tag '{state.tag}' now peels to {state.actual}, not the recorded {state.recorded}",
            "a moved or re-created upstream tag is a supply-chain risk: find out why before re-pinning",
        )
    return state.recorded


def tree_name(config: Config) -> str:
    """How reports name the tree the series applies on: the tag, or the tag's tarball."""
    return tarball_tree(config.pin_tag) if config.pin_import else config.pin_tag


def require_tree(config: Config, git: Git) -> tuple[str, str]:
    """(name, commit) of the tree the series applies on: ``pin.import_commit`` (the
    release tarball imported on the tag) when the fork has one, else the pinned commit.
    Refuses (exit 2) a missing or moved tag, and an import commit that is missing or
    is not a commit whose only parent is the pinned commit."""
    pinned = require_pin(config, git)
    imported = config.pin_import
    if imported is None:
        return config.pin_tag, pinned
    hint = (
        f"re-create it from the release tarball: forktool pin import-tarball FILE... "
        f"(the same tarballs on {config.pin_tag} give the same commit)"
    )
    kind = git.object_types([imported]).get(imported)
    if kind != "commit":
        what = "is not in this repository" if kind is None else f"is a {kind}, not a commit"
        raise FatalError(f"pin.import_commit {imported} {what}", hint)
    parents = git.parents(imported)
    if parents != [pinned]:
        raise FatalError(
            f"pin.import_commit {imported[:12]} is not an import on {config.pin_tag}: its "
            f"parents are {', '.join(p[:12] for p in parents) or 'none'}, not the pinned "
            f"commit {pinned[:12]} alone",
            hint,
        )
    return tree_name(config), imported
