"""Which upstream tags are releases, in version order.

``release_tags`` in forktool.yaml (default ``v*``) selects the tags; each must parse
as a version (``packaging.version``, after removing the pattern's literal prefix when
the tag itself does not parse), or it is ignored: ``v1.1.0rc1 < v1.1.0 < v1.1.1rc0``,
and a tag like ``v-latest`` is not a release. ``prereleases: false`` drops rc, beta,
alpha and dev tags.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from forktool.git import Git

_GLOB = re.compile(r"[*?\[]")


@dataclass(frozen=True)
class Release:
    tag: str
    commit: str
    version: Version


def parse_release_version(tag: str, pattern: str) -> Version | None:
    """The version a release tag names, or None when it names none."""
    prefix = _GLOB.split(pattern, maxsplit=1)[0]
    candidates = [tag]
    if prefix and tag.startswith(prefix):
        candidates.append(tag[len(prefix) :])
    for candidate in candidates:
        try:
            return Version(candidate)
        except InvalidVersion:
            continue
    return None


def order_releases(
    tags: Mapping[str, str], pattern: str, *, prereleases: bool = True
) -> list[Release]:
    """``tags`` (name -> commit) that are releases, oldest version first."""
    found = []
    for name, commit in tags.items():
        if not fnmatch.fnmatchcase(name, pattern):
            continue
        version = parse_release_version(name, pattern)
        if version is None or (version.is_prerelease and not prereleases):
            continue
        found.append(Release(name, commit, version))
    return sorted(found, key=lambda r: (r.version, r.tag))


def release_tags(git: Git, pattern: str, *, prereleases: bool = True) -> list[Release]:
    """The repository's release tags, oldest version first (one git call)."""
    return order_releases(git.tag_commits(pattern), pattern, prereleases=prereleases)


def first_releases(
    releases: Iterable[Release],
    wanted: Mapping[str, tuple[str, ...]],
    not_in: Callable[[list[str], str], set[str]],
) -> dict[str, str | None]:
    """For each key of ``wanted``: the earliest release (version order) that contains
    every one of its commits, or None.

    Containment is not monotonic in version order (a fix made on a release branch and
    never merged back is in 1.2.1 but not in 1.3.0), so releases are tried in order,
    with ONE bulk ancestry question per release for every still-open commit, stopping
    as soon as everything is placed. Cost: one git process per release tried, never
    one per patch.
    """
    open_keys = {key: commits for key, commits in wanted.items() if commits}
    found: dict[str, str | None] = dict.fromkeys(wanted)
    seen: dict[str, set[str]] = {}
    for release in releases:
        if not open_keys:
            break
        commits = sorted({c for cs in open_keys.values() for c in cs})
        if release.commit not in seen:
            seen[release.commit] = not_in(commits, release.commit)
        missing = seen[release.commit]
        for key, needed in list(open_keys.items()):
            if not missing.intersection(needed):
                found[key] = release.tag
                del open_keys[key]
    return found
