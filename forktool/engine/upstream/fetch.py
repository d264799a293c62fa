"""Reaching upstream: the one rule every command that fetches follows.

Where from: the configured remote (``upstream.remote``) when this repository has it,
else ``upstream.url``, else nowhere: the tags already here are used, with a notice.
A tag that already exists here and peels to the same commit upstream is not fetched
again (a tag upstream no longer has, or cannot be asked about, is used as it is, with
a notice); a tag that moved upstream is refused. Every failure is a ``FatalError``
with git's cause line and a hint.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence
from dataclasses import dataclass

from forktool.config import Config, url_problem
from forktool.errors import FatalError, GitError, command_line, git_said
from forktool.git import Git
from forktool.model.project_url import Project, repository_project


@dataclass(frozen=True)
class Fetched:
    """What reaching upstream did."""

    source: str | None  # the remote name or URL that was reached; None: local tags only
    fetched: tuple[str, ...] = ()  # what was brought in: tags, commits, "--unshallow"
    notices: tuple[str, ...] = ()  # one line each, for stderr ("notice: ...")

    @property
    def reached(self) -> bool:
        return self.source is not None


def upstream_source(config: Config, git: Git) -> str | None:
    """The remote to fetch from if this repository has it, else ``upstream.url``, else None.
    The remote's URL (from git's config, which forktool.yaml's checks do not reach) is
    held to the same rule as ``upstream.url``."""
    if config.upstream_remote in git.remotes():
        for url in git.remote_urls(config.upstream_remote):
            if problem := url_problem(url):
                raise FatalError(
                    f"remote '{config.upstream_remote}' has the URL {url!r}, which {problem}; "
                    "refusing to fetch from it",
                    "point the remote at the repository: "
                    + command_line("git", "remote", "set-url", config.upstream_remote, "URL"),
                )
        return config.upstream_remote
    return config.upstream_url


def upstream_project(config: Config, git: Git) -> tuple[Project | None, str]:
    """The host and project upstream is (from ``upstream.url``, else the remote's URL),
    or None and why it cannot be known."""
    url = config.upstream_url or git.remote_url(config.upstream_remote)
    where = "upstream.url" if config.upstream_url else f"remote '{config.upstream_remote}'"
    if url is None:
        return None, (
            f"upstream's host and project cannot be known: no upstream.url and no remote "
            f"'{config.upstream_remote}'; set upstream.url to upstream's URL"
        )
    project = repository_project(url)
    if project is None:
        return None, (
            f"upstream's host and project cannot be known from {where} ({url}, a local path "
            "or a URL without host and project); set upstream.url to upstream's URL "
            "(e.g. https://github.com/OWNER/PROJECT.git)"
        )
    return project, ""


def remote_default_branch(git: Git, remote: str) -> str | None:
    """The branch ``refs/remotes/<remote>/HEAD`` points to (set by clone and by
    ``git remote set-head``), or None when it is not here."""
    target = git.symbolic_target(f"refs/remotes/{remote}/HEAD")
    prefix = f"refs/remotes/{remote}/"
    return target.removeprefix(prefix) if target and target.startswith(prefix) else None


def upstream_default_branch(git: Git, remote: str, url: str | None) -> str | None:
    """Upstream's default branch: the remote's HEAD as fetched (a clone sets it), else as
    upstream says (``ls-remote --symref``: ``git remote add`` and ``fetch`` never set it),
    from the remote or from ``url``; None when neither can tell."""
    here = remote_default_branch(git, remote)
    if here is not None:
        return here
    source = remote if remote in git.remotes() else url
    return git.remote_head_branch(source) if source else None


def no_source_hint(config: Config) -> str:
    return (
        f"add the remote ({command_line('git', 'remote', 'add', config.upstream_remote)} <url>) "
        "or set upstream.url in forktool.yaml"
    )


def cause_line(exc: GitError) -> str:
    """git's line that says why (its first ``fatal:``/``error:`` line)."""
    return git_said(exc.stderr) or f"exit status {exc.returncode}"


def fetch_upstream(
    config: Config,
    git: Git,
    *,
    tags: Sequence[str] = (),
    all_tags: bool = False,
    commits: Sequence[str] = (),
    unshallow: bool = False,
    branch: str | None = None,
    offline: str = "pass --no-fetch",
) -> Fetched:
    """Bring ``tags`` (or, with ``all_tags``, every tag), the ``commits`` not here yet,
    with ``unshallow`` the rest of a shallow history and with ``branch`` upstream's
    development branch (into ``refs/remotes/<upstream.remote>/<branch>``), from upstream.

    With no upstream to reach, nothing is fetched and a notice says so (a wanted tag
    that is not here is the resolver's to refuse: ``forktool.engine.revisions``).
    Raises ``FatalError`` (with a hint) when a tag moved upstream, or when a fetch
    fails; ``offline`` completes the hint "... or OFFLINE to use what is here" (how the
    caller's command skips fetching).
    """
    source = upstream_source(config, git)
    if source is None:
        return Fetched(
            None,
            notices=(
                f"no remote '{config.upstream_remote}' and no upstream.url: "
                "using the tags already here",
            ),
        )
    fetched: list[str] = []
    notices: list[str] = []
    if unshallow and git.is_shallow():
        _fetch(git, source, [], offline, unshallow=True)
        fetched.append("--unshallow")
    fetched += _fetch_tags(config, git, source, tags, all_tags, notices, offline)
    if branch is not None:
        _fetch_branch(config, git, source, branch, offline)
        fetched.append(branch)
    missing = sorted(c for c, kind in git.object_types(set(commits)).items() if kind is None)
    if missing:
        _fetch(git, source, missing, offline)
        fetched += missing
    return Fetched(source, tuple(fetched), tuple(notices))


def _fetch_tags(
    config: Config,
    git: Git,
    source: str,
    tags: Sequence[str],
    all_tags: bool,
    notices: list[str],
    offline: str,
) -> list[str]:
    """Fetch the wanted tags that are not here (with ``all_tags``, upstream's release
    tags too); what to report as fetched."""
    wanted = list(dict.fromkeys(tags))
    remote: dict[str, str] | None = None
    if all_tags:
        remote = _remote_tags(git, source, offline)
        wanted = list(dict.fromkeys([*_release_tags_of(config, remote), *wanted]))
    missing_tags = _tags_to_fetch(git, source, wanted, notices, remote)
    if missing_tags:
        _fetch(git, source, [f"refs/tags/{t}:refs/tags/{t}" for t in missing_tags], offline)
    return ["tags"] if all_tags else missing_tags


def _fetch_branch(config: Config, git: Git, source: str, branch: str, offline: str) -> None:
    try:
        git.fetch_branch(source, branch, config.upstream_remote)
    except GitError as exc:
        raise _branch_fetch_error(source, branch, exc, offline) from exc


def _tags_to_fetch(
    git: Git,
    source: str,
    tags: list[str],
    notices: list[str],
    known: dict[str, str] | None = None,
) -> list[str]:
    """The tags that are not here yet; the ones that are, checked against ``source``
    (``known``: its tags, when they were already listed)."""
    here = git.tag_commits() if tags else {}  # one for-each-ref, however many tags
    local = {tag: here.get(tag) for tag in tags}
    present = [tag for tag, commit in local.items() if commit is not None]
    if present:
        try:
            remote = known if known is not None else git.remote_tag_commits(source, present)
        except GitError as exc:
            notices.append(
                f"could not reach {source} ({cause_line(exc)}): using the local "
                f"tag(s) {', '.join(present)}"
            )
            remote = {tag: str(local[tag]) for tag in present}
        for tag in present:
            theirs = remote.get(tag)
            if theirs is None:
                notices.append(
                    f"{source} has no tag '{tag}': using the local one ({str(local[tag])[:12]})"
                )
            elif theirs != local[tag]:
                raise FatalError(
                    f"tag '{tag}' moved upstream: here it is {str(local[tag])[:12]}, "
                    f"on {source} {theirs[:12]}",
                    "a moved release tag is never taken silently: ask upstream why; to take "
                    f"theirs, delete yours ({command_line('git', 'tag', '-d', tag)}) and run again",
                )
    return [tag for tag, commit in local.items() if commit is None]


def _fetch(
    git: Git, source: str, refspecs: list[str], offline: str, *, unshallow: bool = False
) -> None:
    try:
        git.fetch(source, refspecs, unshallow=unshallow)
    except GitError as exc:
        raise _fetch_error(source, exc, offline) from exc


def _remote_tags(git: Git, source: str, offline: str) -> dict[str, str]:
    try:
        return git.remote_tags(source)
    except GitError as exc:
        raise _fetch_error(source, exc, offline) from exc


def _release_tags_of(config: Config, remote: dict[str, str]) -> list[str]:
    """The tags of upstream (``remote``) that ``release_tags`` names, and the pin's tag:
    the only tags forktool fetches when it looks for new releases. Any other tag
    (``nightly``, moved every night) is never fetched, so never refused as moved."""
    names = [t for t in remote if fnmatch.fnmatchcase(t, config.release_tags)]
    if config.pin_tag in remote:
        names.append(config.pin_tag)
    return sorted(set(names))


def _branch_fetch_error(source: str, branch: str, exc: GitError, offline: str) -> FatalError:
    """A branch upstream does not have is a setting to fix, not a tag name to check."""
    if "couldn't find remote ref" not in cause_line(exc):
        return _fetch_error(source, exc, offline)
    return FatalError(
        exc.message,
        f"{source} has no branch '{branch}': set upstream.branch in forktool.yaml to "
        "upstream's development branch "
        f"({command_line('git', 'ls-remote', '--symref', source, 'HEAD')} names it)",
    )


# upload-pack refuses an object id none of its refs reach (or that it lacks)
_NOT_OUR_REF = re.compile(r"not our ref ([0-9a-f]{40})")


def _fetch_error(source: str, exc: GitError, offline: str) -> FatalError:
    """git's own words (the remote, its URL and the cause line), with a hint that fits."""
    if "couldn't find remote ref" in cause_line(exc):
        hint = (
            f"{source} does not have it: check the name "
            f"({command_line('git', 'ls-remote', '--tags', source)}), "
            f"or {offline} to use what is here"
        )
    elif (unknown := _NOT_OUR_REF.search(exc.stderr)) is not None:
        hint = (
            f"{source} has no commit {unknown.group(1)[:12]} that its branches or tags "
            "reach: check the id in upstream.map (one from a fork or from a PR upstream "
            f"never merged is not upstream's), or {offline} to use what is here"
        )
    elif "would clobber existing tag" in exc.stderr or "(already exists)" in exc.stderr:
        hint = (
            "a tag here differs from upstream's (a moved tag is never taken silently): "
            "compare them with " + command_line("git", "ls-remote", "--tags", source)
        )
    else:
        hint = (
            f"check that {source} is reachable ({command_line('git', 'ls-remote', source)}), "
            f"or {offline} to use what is here"
        )
    return FatalError(exc.message, hint)
