"""``forktool upstream poll``: for a scheduled job, is there a newer release, and what
would a sync to it do?

Exit codes a scheduler can branch on (documented in docs/sync.md):
``0`` nothing new, ``3`` a new release with a clean plan (a sync can run unattended),
``4`` a new release that needs hands (a conflict, or a patch to revisit), ``2`` the
poll could not run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from forktool.engine.releases import (
    Release,
    parse_release_version,
    release_tags,
    require_releases,
)
from forktool.engine.sync import SyncReport, plan_sync, sync_blockers
from forktool.engine.upstream import Fetched, fetch_upstream
from forktool.errors import FatalError
from forktool.fork import Fork
from forktool.git import Git

EXIT_NOTHING_NEW = 0
EXIT_CLEAN_PLAN = 3
EXIT_NEEDS_HANDS = 4


@dataclass(frozen=True)
class PollResult:
    pin: str
    fetched: bool
    newer: tuple[Release, ...]
    plan: SyncReport | None
    upstream: Fetched = field(default_factory=lambda: Fetched(None))  # where tags came from
    blockers: tuple[str, ...] = ()  # why 'sync TAG' would refuse to start here

    @property
    def needs_hands(self) -> bool:
        return self.plan is not None and bool(
            self.plan.conflicts or self.plan.notes or self.blockers
        )

    @property
    def exit_code(self) -> int:
        if self.plan is None:
            return EXIT_NOTHING_NEW
        return EXIT_NEEDS_HANDS if self.needs_hands else EXIT_CLEAN_PLAN

    @property
    def verdict(self) -> str:
        return {
            EXIT_NOTHING_NEW: "nothing-new",
            EXIT_CLEAN_PLAN: "clean-plan",
            EXIT_NEEDS_HANDS: "needs-hands",
        }[self.exit_code]

    def to_json(self) -> dict[str, object]:
        return {
            "pin": self.pin,
            "fetched": self.fetched,
            "source": self.upstream.source,
            "verdict": self.verdict,
            "newer": [{"tag": r.tag, "commit": r.commit} for r in self.newer],
            "newest": self.newer[-1].tag if self.newer else None,
            "plan": self.plan.to_json() if self.plan else None,
            "blockers": list(self.blockers),
        }


def poll(
    fork: Fork,
    git: Git,
    *,
    fetch: bool,
    env: Mapping[str, str],
    prereleases: bool | None = None,
) -> PollResult:
    """Newer release tags, the plan a sync to the newest would make, and whatever would
    stop that sync from starting here (``env``: where its commit identity comes from)."""
    config = fork.config
    reached = fetch_upstream(config, git, all_tags=True) if fetch else Fetched(None)
    include_pre = config.prereleases if prereleases is None else prereleases
    releases = require_releases(
        release_tags(git, config.release_tags, prereleases=include_pre),
        config.release_tags,
        config.pin_tag,
    )
    pinned = parse_release_version(config.pin_tag, config.release_tags)
    if pinned is None:
        raise FatalError(
            f"the pinned tag '{config.pin_tag}' is not a release tag (release_tags: "
            f"'{config.release_tags}')",
            "pin a release tag, or set release_tags in forktool.yaml",
        )
    newer = tuple(r for r in releases if r.version > pinned)
    if not newer:
        return PollResult(config.pin_tag, reached.reached, (), None, reached)
    newest = newer[-1]
    plan = plan_sync(fork, git, newest.tag, newest.commit)
    blockers = sync_blockers(fork, git, newest.tag, plan, env)
    return PollResult(config.pin_tag, reached.reached, newer, plan, reached, blockers)
