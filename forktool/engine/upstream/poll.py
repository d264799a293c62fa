"""``forktool upstream poll``: for a scheduled job, is there a newer release, and what
would a sync to it do?

Exit codes a scheduler can branch on (documented in docs/sync.md):
``0`` nothing new, ``3`` a new release with a clean plan (a sync can run unattended),
``4`` a new release that needs hands (a conflict, a patch to revisit or waiting for
upstream, or a sync that could not start here), ``2`` the poll could not run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from forktool.engine.release.sync import sync_blockers
from forktool.engine.release.sync_plan import plan_sync
from forktool.engine.release.sync_report import SyncReport
from forktool.engine.retirement.releases import newer_releases
from forktool.engine.upstream.fetch import Fetched, fetch_upstream
from forktool.engine.upstream.resolve import Resolution, resolve, tracked
from forktool.errors import FatalError
from forktool.fork import Fork
from forktool.git import Git
from forktool.model.revision import Release

if TYPE_CHECKING:
    from forktool.engine.upstream.forecast import ForecastResult

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
    merged: tuple[Resolution, ...] = ()  # pending PRs that have merged upstream
    merged_note: str = ""  # why merged PRs could not be looked for
    forecast: ForecastResult | None = None

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
            "newer": [{"tag": r.name, "commit": r.commit} for r in self.newer],
            "newest": self.newer[-1].name if self.newer else None,
            "plan": self.plan.to_json() if self.plan else None,
            "blockers": list(self.blockers),
            "merged_prs": [m.to_json() for m in self.merged],
            "merged_prs_note": self.merged_note,
            "forecast": self.forecast.to_json() if self.forecast else None,
        }


def merged_pending(fork: Fork, git: Git, *, fetch: bool) -> tuple[tuple[Resolution, ...], str]:
    """The pending PRs that merged on upstream's branch, or why they cannot be known."""
    if not any(tracked(p) for p in fork.patches):
        return (), ""
    try:
        found = resolve(fork, git, fetch=fetch)
    except FatalError as exc:
        return (), f"pending PRs not looked up: {exc.message}"
    return found.merged, ""


def poll(
    fork: Fork,
    git: Git,
    *,
    fetch: bool,
    env: Mapping[str, str],
    prereleases: bool | None = None,
    with_forecast: bool = False,
) -> PollResult:
    """Newer release tags, the plan a sync to the newest would make, whatever would stop
    that sync from starting here (``env``: where its commit identity comes from), the
    pending PRs that merged, and with ``with_forecast`` the matrix for every newer release."""
    config = fork.config
    reached = fetch_upstream(config, git, all_tags=True) if fetch else Fetched(None)
    newer = tuple(newer_releases(config, git, prereleases))
    merged, note = merged_pending(fork, git, fetch=fetch)
    if not newer:
        return PollResult(
            config.pin_tag, reached.reached, (), None, reached, merged=merged, merged_note=note
        )
    newest = newer[-1]
    plan = plan_sync(fork, git, newest)
    blockers = sync_blockers(fork, git, newest.name, plan, env)
    matrix = None
    if with_forecast:
        from forktool.engine.upstream.forecast import forecast
        from forktool.engine.upstream.targets import Target

        matrix = forecast(fork, git, [Target(r) for r in newer], fetched=reached.reached)
    return PollResult(
        config.pin_tag, reached.reached, newer, plan, reached, blockers, merged, note, matrix
    )
