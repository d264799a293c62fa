"""What the newest release tag would retire, for ``status``: the whole ``absorbed``
engine up to a size, ancestry alone beyond it, and a note instead of a refusal."""

from __future__ import annotations

from dataclasses import dataclass

from forktool.engine.retirement.absorbed import absorbed
from forktool.engine.retirement.knowledge import require_commits
from forktool.engine.retirement.releases import fork_releases, unreadable_pin
from forktool.errors import FatalError
from forktool.fork import Fork
from forktool.git import Git

# status previews the newest release with the whole absorbed engine only up to this
# many commits between the pin and it; beyond, ancestry alone and a note.
PREVIEW_MAX_COMMITS = 2000


@dataclass(frozen=True)
class ReleasePreview:
    """What the newest release tag would retire: the patches, or None and ``note``
    saying why that cannot be told yet."""

    tag: str
    tag_commit: str
    would_retire: tuple[str, ...] | None
    note: str | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "tag": self.tag,
            "tag_commit": self.tag_commit,
            "would_retire": None if self.would_retire is None else list(self.would_retire),
            "note": self.note,
        }


def newest_release_preview(fork: Fork, git: Git) -> ReleasePreview | None:
    """What the newest release tag would retire (for ``status``); None without releases.

    Never raises for missing knowledge: the reason goes into ``note`` instead, because
    status reports facts and must not fail on a commit that was not fetched yet.
    """
    config = fork.config
    releases = fork_releases(git, config)
    if not releases:
        return None
    newest = releases[-1]
    if config.version_scheme.read(config.pin_tag) is None:  # newest, but than what?
        refusal = unreadable_pin(config)
        note = f"{refusal.message}: no release can be told newer than the pin; {refusal.hint}"
        return ReleasePreview(newest.name, newest.commit, None, note)
    try:
        ahead = git.count_commits(newest.commit, config.pin_commit)
        if ahead > PREVIEW_MAX_COMMITS:
            # The verdicts read the range's history and diffs: too slow for one screen.
            require_commits(fork, git)
            commits = [c for p in fork.patches for c in p.commits]
            missing = git.not_ancestors(commits, newest.commit)
            mapped = [p for p in fork.patches if p.commits]
            inside = sum(1 for p in mapped if not missing.intersection(p.commits))
            return ReleasePreview(
                newest.name,
                newest.commit,
                None,
                f"{ahead} commits since the pin, more than status reads "
                f"({PREVIEW_MAX_COMMITS}); {inside} of {len(mapped)} mapped patches have "
                f"their commits in {newest.name}; `forktool absorbed --tag {newest.name}` "
                "gives the verdicts",
            )
        report = absorbed(fork, git, newest)
    except FatalError as exc:
        return ReleasePreview(newest.name, newest.commit, None, exc.message)
    return ReleasePreview(newest.name, newest.commit, tuple(p.patch for p in report.retirable()))
