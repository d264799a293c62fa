"""Which upstream tags are releases, in version order.

``release_tags`` in forktool.yaml (default ``v*``) selects the tags; each must read as
a version through the fork's :class:`~forktool.model.versions.VersionScheme` (the one
version reader: ``release_version`` in forktool.yaml, else derived from the pinned
tag), or it is ignored: ``v1.1.0rc1 < v1.1.0 < v1.1.1rc0``, ``curl-7_9_8 <
curl-7_88_1``, and a tag like ``v-latest`` is not a release. ``prereleases: false``
drops rc, beta, alpha, pre and dev tags.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping, Sequence

from packaging.version import Version

from forktool.config import Config
from forktool.errors import FatalError
from forktool.git import Git
from forktool.model.revision import CommitId, Release
from forktool.model.versions import VersionScheme, scheme_for_pattern, scheme_for_tag


def parse_release_version(
    tag: str, pattern: str, scheme: VersionScheme | None = None
) -> Version | None:
    """The version a release tag names, or None when it names none (``scheme``: the
    fork's, else the one ``pattern`` implies)."""
    return (scheme or scheme_for_pattern(pattern)).read(tag)


def order_releases(
    tags: Mapping[str, CommitId],
    pattern: str,
    *,
    prereleases: bool = True,
    scheme: VersionScheme | None = None,
) -> list[Release]:
    """``tags`` (name -> commit) that are releases, oldest version first."""
    reader = scheme or scheme_for_pattern(pattern)
    found = []
    for name, commit in tags.items():
        if not fnmatch.fnmatchcase(name, pattern):
            continue
        version = reader.read(name)
        if version is None or (version.is_prerelease and not prereleases):
            continue
        found.append(Release(name, commit, version))
    return sorted(found, key=lambda r: (r.version, r.name))


def release_tags(
    git: Git, pattern: str, *, prereleases: bool = True, scheme: VersionScheme | None = None
) -> list[Release]:
    """The repository's release tags, oldest version first (one git call)."""
    return order_releases(git.tag_commits(pattern), pattern, prereleases=prereleases, scheme=scheme)


def fork_releases(git: Git, config: Config, prereleases: bool | None = None) -> list[Release]:
    """The fork's release tags (``release_tags``, read by its version scheme), oldest
    first; ``prereleases`` overrides the configured choice."""
    return release_tags(
        git,
        config.release_tags,
        prereleases=config.prereleases if prereleases is None else prereleases,
        scheme=config.version_scheme,
    )


def pattern_for_tag(tag: str) -> str:
    """The ``release_tags`` pattern a release tag suggests: its scheme's prefix, then
    ``*`` (``v1.2.0`` -> ``v*``, ``curl-7_88_1`` -> ``curl-*``); ``[0-9]*`` for a bare
    version like ``8.3.1``; the literal text up to the first digit for a tag that reads
    no version; the tag itself for a tag with no digit at all (``orig``, a tarball's
    import: nothing orders it against another, and ``v*`` would not even match it)."""
    scheme = scheme_for_tag(tag)
    if scheme is not None:
        return scheme.glob
    digits = [i for i, c in enumerate(tag) if c.isdigit()]
    if not digits:
        return "".join(f"[{c}]" if c in "*?[]" else c for c in tag)
    return f"{tag[: digits[0]]}*" if digits[0] else "[0-9]*"


def require_releases(releases: list[Release], pattern: str, pin_tag: str) -> list[Release]:
    """``releases``, unless ``release_tags`` matches no tag, not even the pin: then no
    newer release could ever be found, and "nothing new" would be said for ever."""
    if not releases and not fnmatch.fnmatchcase(pin_tag, pattern):
        raise FatalError(
            f"release_tags '{pattern}' matches no tag, not even the pinned tag '{pin_tag}'",
            "set release_tags in forktool.yaml to the pattern of upstream's release tags "
            f"(the pinned tag suggests '{pattern_for_tag(pin_tag)}')",
        )
    return releases


def containing_releases(
    git: Git, releases: Sequence[Release], commits: Iterable[str], since: str | None
) -> dict[str, int]:
    """For each commit reachable from a release but not from ``since``: a bitset of the
    releases containing it (bit i = ``releases[i]``). Commits outside that region are
    left out. One ``rev-list --topo-order --parents`` walk: children come before their
    parents, so each commit's set is final when it is reached and is passed on to its
    parents. Exact inside the region: no path from a release to a commit that ``since``
    lacks can pass through a commit ``since`` has.
    """
    bits: dict[str, int] = {}
    for index, release in enumerate(releases):
        bits[release.commit] = bits.get(release.commit, 0) | (1 << index)
    wanted = set(commits)
    found: dict[str, int] = {}
    tips = list(dict.fromkeys(r.commit for r in releases))
    for commit, *parents in git.parents_graph(tips, [since] if since else []):
        mine = bits.pop(commit, 0)
        if commit in wanted:
            found[commit] = mine
        for parent in parents:
            bits[parent] = bits.get(parent, 0) | mine
    return found


def first_releases(
    git: Git,
    releases: Sequence[Release],
    wanted: Mapping[str, tuple[str, ...]],
    *,
    since: str | None = None,
) -> dict[str, str | None]:
    """For each key of ``wanted``: the earliest release (version order) that contains
    every one of its commits, or None.

    Containment is not monotonic in version order (a fix made on a release branch and
    never merged back is in 1.2.1 but not in 1.3.0), so no bisection: one walk of the
    releases' history since ``since`` (usually the pin) gives every commit's set of
    containing releases (:func:`containing_releases`). A commit outside that walk is in
    no release, or ``since`` already has it; the latter (rare: a patch mapped to a
    commit its own pin contains) is placed by exact ancestry (:meth:`Git.ancestors`),
    one ``for-each-ref --contains`` per such commit. Never one process per patch.
    """
    everything = {c for cs in wanted.values() for c in cs}
    sets = containing_releases(git, releases, everything, since) if releases else {}
    if since and everything:
        # The walk is exact only for commits ``since`` lacks; it may also print (with
        # too few releases) a commit ``since`` has, when commit dates are out of
        # order. Those, and the commits outside the walk that ``since`` has, are
        # placed by exact ancestry.
        in_since = sorted(git.ancestors(everything, since))
        if in_since:
            sets.update(_by_release(git, releases, in_since))
    found: dict[str, str | None] = {}
    for key, commits in wanted.items():
        common = -1
        for commit in commits:
            common &= sets.get(commit, 0)
        found[key] = (
            releases[(common & -common).bit_length() - 1].name if commits and common else None
        )
    return found


def _by_release(git: Git, releases: Sequence[Release], commits: list[str]) -> dict[str, int]:
    """Bitsets of containing releases: the tags that contain each commit, one walk per
    commit for every tag (a question per release took 30 s on redis's 200 releases for
    one mapped commit its pin already has)."""
    index_of: dict[str, list[int]] = {}
    for index, release in enumerate(releases):
        index_of.setdefault(release.name, []).append(index)
    sets = {}
    for commit in commits:
        bits = 0
        for name in git.tags_containing(commit):
            for index in index_of.get(name, ()):
                bits |= 1 << index
        sets[commit] = bits
    return sets


def index_history(git: Git) -> None:
    """Write a commit-graph with changed-path filters for every reachable commit: the
    ancestry walks and path-limited history scans above run several times faster on it.
    It changes ``.git`` (``objects/info/commit-graph``), so only on request."""
    git.write_commit_graph()


def unreadable_pin(config: Config) -> FatalError:
    """The refusal for a pinned tag that ``release_version`` reads no version from: no
    release can then be told newer or older than the pin."""
    scheme = config.version_scheme
    suggested = scheme_for_tag(config.pin_tag)
    return FatalError(
        f"the pinned tag '{config.pin_tag}' names no version that release_version "
        f"(prefix '{scheme.prefix}', separator '{scheme.separator}') can read",
        "set release_version in forktool.yaml to how upstream writes versions"
        + (
            f" (the pinned tag suggests prefix '{suggested.prefix}', separator "
            f"'{suggested.separator}')"
            if suggested
            else ""
        ),
    )


def newer_releases(config: Config, git: Git, prereleases: bool | None = None) -> list[Release]:
    """The release tags newer than the pin, oldest first."""
    releases = require_releases(
        fork_releases(git, config, prereleases), config.release_tags, config.pin_tag
    )
    pinned = config.version_scheme.read(config.pin_tag)
    if pinned is None:
        raise unreadable_pin(config)
    return [r for r in releases if r.version > pinned]
