"""The revisions a user names, resolved once at the command: one rule, one refusal.

The option vocabulary (docs/contract.md, "Revisions"):

* **TAG** (``--tag``, ``--onto``, ``--pin``, ``--tags``, ``pin bump TAG``, ``sync TAG``)
  names a tag: ``refs/tags/TAG``, peeled through any chain of annotated tags to its
  commit. A revision expression (``v1.2.0~1``), a branch or a commit id is refused: a
  verdict, a refresh or a pin is about a release as upstream tagged it.
* **REV** (``--from``, ``--base``, ``check-history REV``, ``forecast --branch``) names
  any commit git can resolve: a branch, a tag, a commit id, ``HEAD~2``.

A command resolves each one with :func:`resolve` and passes the :class:`Revision` down.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from packaging.version import Version

from forktool.config import Config
from forktool.engine.release.pin_sites import validate_tag_name
from forktool.engine.upstream.fetch import Fetched, fetch_upstream, no_source_hint
from forktool.errors import command_line
from forktool.git import Git
from forktool.model.revision import Revision

Kind = Literal["tag", "revision"]
Switch = Literal["--fetch", "--no-fetch"]
Notice = Callable[[str], None]


@dataclass(frozen=True)
class Upstream:
    """Where a TAG that is not here would come from, and how this command reaches it.

    ``switch``: the command's option, named in the hint (``--fetch``: fetching is off
    unless given; ``--no-fetch``: on unless given; None: the command does not fetch).
    ``fetch``: reach upstream for TAG before resolving it (the one rule,
    :func:`fetch_upstream`). ``fetched``: what the command's own fetch did, when it
    fetched more than TAG itself (``absorbed --fetch``, ``forecast``).
    """

    remote: str
    config: Config | None = None
    switch: Switch | None = None
    fetch: bool = False
    fetched: Fetched | None = None
    notice: Notice | None = None

    @classmethod
    def of(
        cls,
        config: Config,
        switch: Switch | None = None,
        *,
        fetch: bool = False,
        fetched: Fetched | None = None,
        notice: Notice | None = None,
    ) -> Upstream:
        return cls(config.upstream_remote, config, switch, fetch, fetched, notice)

    @property
    def offline(self) -> str:
        """How this command uses what is here instead of fetching."""
        return "drop --fetch" if self.switch == "--fetch" else "pass --no-fetch"


def resolve(
    git: Git,
    name: str,
    *,
    kind: Kind = "tag",
    what: str = "revision",
    upstream: Upstream | None = None,
    pinning: bool = False,
) -> Revision:
    """``name`` as a :class:`Revision`: a TAG (``kind="tag"``: a tag and nothing else,
    fetched first when ``upstream.fetch``; its version when it is a release tag) or a REV
    (``kind="revision"``: any commit; ``what`` names it in the refusal). ``pinning``: the
    TAG is to become the pin, so its name must be safe to write into every pin site
    (checked before anything is fetched).

    Refuses (``FatalError``, exit 2) what names no such thing, with the one wording for
    each case and a hint that says how this command would bring a missing tag in.
    """
    if kind == "revision":
        return Revision(name, git.require_commit(name, what=what))
    return resolve_tag(git, name, upstream=upstream, pinning=pinning)[0]


def resolve_tag(
    git: Git, name: str, *, upstream: Upstream | None = None, pinning: bool = False
) -> tuple[Revision, Fetched | None]:
    """:func:`resolve` of a TAG, and what reaching upstream for it did (None when this
    call did not fetch)."""
    if pinning:
        validate_tag_name(git, name)
    reached = None
    if upstream is not None and upstream.fetch and upstream.config is not None:
        reached = fetch_upstream(upstream.config, git, tags=[name], offline=upstream.offline)
        for line in reached.notices:
            if upstream.notice is not None:
                upstream.notice(line)
        upstream = Upstream(upstream.remote, upstream.config, upstream.switch, False, reached)
    commit = git.require_tag_commit(name, hint=unknown_tag_hint(name, upstream))
    config = upstream.config if upstream is not None else None
    return Revision(name, commit, release_version(config, name)), reached


def release_version(config: Config | None, tag: str) -> Version | None:
    """The version ``tag`` reads as when the fork's ``release_tags`` names it, else None."""
    if config is None or not fnmatch.fnmatchcase(tag, config.release_tags):
        return None
    return config.version_scheme.read(tag)


def unknown_tag_hint(name: str, upstream: Upstream | None) -> str:
    """The one hint for a TAG that is not here: how this command would bring it in."""
    if upstream is not None and upstream.fetched is not None and not upstream.fetched.reached:
        assert upstream.config is not None
        return (
            f"there is no upstream to fetch it from (no remote '{upstream.remote}', no "
            f"upstream.url): {no_source_hint(upstream.config)}"
        )
    remote = command_line(upstream.remote) if upstream is not None else "<upstream-remote>"
    ways = [f"git fetch {remote} tag {command_line(name)}"]
    if upstream is not None and upstream.fetched is None and upstream.switch is not None:
        ways.insert(0, "pass --fetch" if upstream.switch == "--fetch" else "drop --no-fetch")
    return f"fetch it ({', or '.join(ways)}), or check the name (git tag --list)"
