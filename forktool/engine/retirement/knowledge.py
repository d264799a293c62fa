"""What ``absorbed`` must know before it judges, and refuses (exit 2) to guess: a
history that is not shallow, every mapped and pinned commit, the release tags; and
``--fetch``, which brings them from upstream by the one rule for reaching it."""

from __future__ import annotations

from collections.abc import Sequence

from forktool.config import Config
from forktool.engine.retirement.releases import first_releases, fork_releases, require_releases
from forktool.engine.upstream.fetch import Fetched, fetch_upstream, no_source_hint
from forktool.errors import FatalError, command_line
from forktool.fork import Fork
from forktool.git import Git
from forktool.model.revision import Release

FETCH_SWITCH = "forktool absorbed --fetch"  # forecast's too; retire and status have none


def fetch_hint(
    config: Config, git: Git, options: Sequence[str], refs: Sequence[str], lead: str = ""
) -> str:
    """``lead`` + ``git fetch OPTIONS SOURCE REFS``, the source the remote, else
    ``upstream.url``; when there is neither, that there is nothing to fetch from."""
    if config.upstream_remote in git.remotes():
        source = config.upstream_remote
    elif config.upstream_url is not None:
        source = config.upstream_url
    else:
        return (
            f"there is no upstream to fetch it from (no remote '{config.upstream_remote}', "
            f"no upstream.url): {no_source_hint(config)}"
        )
    fetch = command_line("git", "fetch", *options, source, *refs)
    return f"{lead}{fetch} ({FETCH_SWITCH} does this)"


def refuse_shallow(git: Git, config: Config) -> None:
    if git.is_shallow():
        raise FatalError(
            "this repository is a shallow clone: ancestry cannot be decided on truncated history",
            fetch_hint(config, git, ["--unshallow"], []),
        )


class MissingCommit(FatalError):
    """A mapped (or the pinned) commit is not in this repository; ``patch``: whose."""

    def __init__(self, message: str, hint: str, patch: str | None) -> None:
        super().__init__(message, hint)
        self.patch = patch


def require_commits(fork: Fork, git: Git) -> None:
    """Every mapped commit and the pinned commit exist as commits (one git call)."""
    wanted: dict[str, tuple[str, str | None]] = {}
    for patch in fork.patches:
        for commit in patch.commits:
            wanted.setdefault(commit, (f"{fork.config.upstream_map}: {patch.name}", patch.name))
    wanted.setdefault(fork.config.pin_commit, ("forktool.yaml: pin.commit", None))
    types = git.object_types(wanted)
    for commit, (where, owner) in wanted.items():
        kind = types.get(commit)
        if kind is None:
            raise MissingCommit(
                f"{where}: commit {commit} is not in this repository",
                fetch_hint(fork.config, git, [], [commit], lead="fetch it: "),
                owner,
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
