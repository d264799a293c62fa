"""Which project a URL names: a repository URL (upstream.url, a remote's URL) or a
review URL (a PR, a merge request), reduced to one comparable form.

A PR of another project must never be taken for upstream's PR of the same number, so
``upstream resolve`` compares projects, and a project is its host and its path:
``https://github.com/Acme/App.git``, ``ssh://git@github.com:22/acme/app``,
``git@github.com:acme/app.git`` and ``https://github.com/acme/app/pull/12`` all name
``github.com/acme/app``. A local path or a ``file://`` URL names no project.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SCHEME = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<rest>.*)$")
# git's scp-like syntax: [user@]host:path, with no slash before the first colon.
_SCP = re.compile(r"^(?:[^@/]+@)?(?P<host>[^/:]+):(?P<path>(?!/).*)$")
_REMOTE_SCHEMES = frozenset({"http", "https", "git", "ssh", "git+ssh", "ssh+git"})
# The part of a review URL that follows the project: GitHub and Gitea/Forgejo pulls,
# GitLab merge requests (after "/-"), Bitbucket pull requests.
_REVIEW = re.compile(
    r"^(?P<project>.+?)(?:/-)?/(?:pull|pulls|merge_requests|pull-requests)/(?P<number>[0-9]+)"
    r"(?:[/?#].*)?$"
)
_TRAILING_NUMBER = re.compile(r"^(?P<project>.*?)/(?P<number>[0-9]+)/?$")


@dataclass(frozen=True)
class Project:
    """A host and a project path, lower-cased (forges match both without case)."""

    host: str
    path: str

    def __str__(self) -> str:
        return f"{self.host}/{self.path}" if self.path else self.host


def _host(authority: str) -> str:
    """``user:secret@Host:22`` -> ``host`` (no credentials, no port, no ``www.``)."""
    host = authority.rsplit("@", 1)[-1]
    if host.startswith("["):  # an IPv6 literal
        host = host[: host.find("]") + 1]
    else:
        host = host.split(":", 1)[0]
    return host.lower().removeprefix("www.")


def _path(path: str) -> str:
    path = path.split("?", 1)[0].split("#", 1)[0].strip("/")
    path = path.removesuffix(".git").strip("/")
    return "/".join(part for part in path.split("/") if part).lower()


def repository_project(url: str) -> Project | None:
    """The project a git repository URL names; None for a local path, a ``file://``
    URL, or anything else that names no host and project."""
    url = url.strip()
    if match := _SCHEME.match(url):
        if match.group("scheme").lower() not in _REMOTE_SCHEMES:
            return None
        authority, _, path = match.group("rest").partition("/")
        host, project = _host(authority), _path(path)
    elif (match := _SCP.match(url)) and not url.startswith((".", "/", "~")):
        host, project = _host(match.group("host")), _path(match.group("path"))
    else:
        return None
    if not host or not project:
        return None
    return Project(host, project)


def review_project(url: str) -> tuple[Project, str] | None:
    """(project, number) of a review URL: ``https://github.com/o/p/pull/12``,
    ``https://gitlab.com/g/sub/p/-/merge_requests/21``, ``https://codeberg.org/o/p/pulls/3``;
    for any other URL that ends in a number (``https://review.example.org/c/777``) the
    project is what precedes the number. None when ``url`` is not such a URL."""
    match = _SCHEME.match(url.strip())
    if not match or match.group("scheme").lower() not in ("http", "https"):
        return None
    authority, _, rest = match.group("rest").partition("/")
    host = _host(authority)
    found = _REVIEW.match(rest) or _TRAILING_NUMBER.match(rest.split("?", 1)[0].split("#", 1)[0])
    if not host or not found:
        return None
    return Project(host, _path(found.group("project"))), found.group("number")
