"""``forktool status``: one screen of facts about the fork."""

from __future__ import annotations

from dataclasses import dataclass

from forktool.engine.apply.early import EarlyStart
from forktool.engine.apply.verify import verify_series
from forktool.engine.release.pin_state import PinState, pin_state, require_tree
from forktool.engine.retirement.release_preview import ReleasePreview, newest_release_preview
from forktool.errors import InputError
from forktool.fork import Fork
from forktool.git import Git


@dataclass(frozen=True)
class PatchStatus:
    patch: str
    file_present: bool
    upstream_commits: tuple[str, ...]
    fork_only: bool
    pending: bool
    upstream_pr: str | None
    exit_criterion: str | None
    apply: str | None = None  # the apply engine's status at the pin, when known
    apply_message: str = ""  # why, when it is not exact

    def to_json(self) -> dict[str, object]:
        return {
            "patch": self.patch,
            "file_present": self.file_present,
            "upstream_commits": list(self.upstream_commits),
            "fork_only": self.fork_only,
            "pending": self.pending,
            "upstream_pr": self.upstream_pr,
            "exit_criterion": self.exit_criterion,
            "apply": self.apply,
            "apply_message": self.apply_message,
        }


@dataclass(frozen=True)
class StatusResult:
    pin: PinState
    layout: str
    patches: tuple[PatchStatus, ...]
    newest_release: ReleasePreview | None = None  # None: the fork names no release tags
    tree: tuple[str, str] | None = None  # (name, commit) the series applies on

    def to_json(self) -> dict[str, object]:
        return {
            "tree": {"name": self.tree[0], "commit": self.tree[1]} if self.tree else None,
            "pin": self.pin.to_json(),
            "layout": self.layout,
            "series_length": len(self.patches),
            "patches": [p.to_json() for p in self.patches],
            "newest_release": self.newest_release.to_json() if self.newest_release else None,
        }


def fork_status(fork: Fork, git: Git, *, early: EarlyStart | None = None) -> StatusResult:
    """Facts about the fork; refuses (exit 2) a pin tag that is missing or moved, and,
    like a strict load, any problem with the fork's files or patches.

    ``fork`` may be loaded leniently: its patches are then parsed once, by the verify
    at the pin, while git applies them. ``early``: that verify's git work, started
    at the pin before the fork was loaded (:func:`early_start`).
    """
    if any(f.severity == "error" for f in fork.findings):
        fork.require_sound()
    name, tree = require_tree(fork.config, git)
    # One verify at the pin (two git apply calls when all is well) gives each
    # patch's state there (on the imported release tarball when there is one).
    at_pin = {
        verdict.patch: verdict
        for verdict in verify_series(fork, git, base=name, base_commit=tree, early=early).patches
    }
    # Only a patch refused on its text can have a problem (precheck reads them first).
    refused = [p for p in fork.patches if at_pin[p.name].status in ("malformed", "unsafe")]
    problems = [f for p in refused for f in p.findings() if f.severity == "error"]
    if problems:
        raise InputError(problems)
    patches = []
    for patch in fork.patches:
        criterion = patch.header.trailer("Exit-Criterion")  # the header only: no diff parse
        verdict = at_pin.get(patch.name)
        patches.append(
            PatchStatus(
                patch=patch.name,
                file_present=patch.path.is_file(),
                upstream_commits=patch.commits,
                fork_only=patch.mapping is not None and patch.mapping.fork_only,
                pending=patch.pending,
                upstream_pr=patch.upstream_pr,
                exit_criterion=criterion.value if criterion else None,
                apply=verdict.status if verdict else None,
                apply_message=verdict.message if verdict else "",
            )
        )
    return StatusResult(
        pin_state(fork.config, git),
        fork.config.layout,
        tuple(patches),
        newest_release_preview(fork, git),
        (name, tree),
    )
