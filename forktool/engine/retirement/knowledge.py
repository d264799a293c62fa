"""What ``absorbed`` must know before it judges, and refuses (exit 2) to guess: a
history that is not shallow, every mapped and pinned commit, the release tags; and
``--fetch``, which brings them from upstream by the one rule for reaching it."""

from __future__ import annotations

from collections.abc import Sequence

from forktool.config import Config
from forktool.engine.retirement.releases import first_releases, fork_releases, require_releases
from forktool.engine.upstream.fetch import Fetched, fetch_upstream
from forktool.errors import FatalError, command_line
from forktool.fork import Fork
from forktool.git import Git
from forktool.model.revision import Release


def fetch_hint(config: Config, what: str) -> str:
    return f"fetch it: {command_line('git', 'fetch', config.upstream_remote, *what.split())} (or pass --fetch)"


def refuse_shallow(git: Git, config: Config) -> None:
    if git.is_shallow():
        raise FatalError(
            "this repository is a shallow clone: ancestry cannot be decided on truncated history",
            f"{command_line('git', 'fetch', '--unshallow', config.upstream_remote)} "
            "(or pass --fetch, which deepens it)",
        )


def require_commits(fork: Fork, git: Git) -> None:
    """Every mapped commit and the pinned commit exist as commits (one git call)."""
    wanted: dict[str, str] = {}
    for patch in fork.patches:
        for commit in patch.commits:
            wanted.setdefault(commit, f"{fork.config.upstream_map}: {patch.name}")
    wanted.setdefault(fork.config.pin_commit, "forktool.yaml: pin.commit")
    types = git.object_types(wanted)
    for commit, where in wanted.items():
        kind = types.get(commit)
        if kind is None:
            raise FatalError(
                f"{where}: commit {commit} is not in this repository",
                fetch_hint(fork.config, commit),
            )
        if kind != "commit":
            raise FatalError(
                f"{where}: {commit} is a {kind}, not a commit",
                "map the patch to the upstream commit that carries the fix",
            )


def fetch_missing(fork: Fork, git: Git, tag: str) -> Fetched:
    """``--fetch``: the tag, the pin's tag, every missing mapped commit, and the rest of
    a shallow history, by the one rule for reaching upstream. What was fetched."""
    config = fork.config
    commits = sorted({c for p in fork.patches for c in p.commits} | {config.pin_commit})
    return fetch_upstream(
        config,
        git,
        tags=[tag, config.pin_tag],
        commits=commits,
        unshallow=True,
        offline="drop --fetch",
    )


def checked_releases(fork: Fork, git: Git) -> list[Release]:
    """The release tags, refused (exit 2) when ``release_tags`` matches nothing at all."""
    config = fork.config
    return require_releases(
        fork_releases(git, config),
        config.release_tags,
        config.pin_tag,
    )


def first_release_map(fork: Fork, git: Git, releases: Sequence[Release]) -> dict[str, str | None]:
    """Patch name -> the first release containing every mapped commit (or None)."""
    wanted = {p.name: p.commits for p in fork.patches}
    return first_releases(git, releases, wanted, since=fork.config.pin_commit)
