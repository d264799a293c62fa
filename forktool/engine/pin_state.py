"""The pinned tag as the repository sees it: does it still peel to the recorded commit?"""

from __future__ import annotations

from dataclasses import dataclass

from forktool.config import Config
from forktool.errors import FatalError, command_line
from forktool.git import Git


@dataclass(frozen=True)
class PinState:
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
    return PinState(config.pin_tag, config.pin_commit, git.tag_commit(config.pin_tag))


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
