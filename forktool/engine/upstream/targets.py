"""What a forecast judges: release tags newer than the pin (or the tags given), and
upstream's branch head, each a revision carrying a tarball-import pin's files."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from forktool.config import Config
from forktool.engine.release.tarball import carried_files
from forktool.engine.retirement.releases import newer_releases
from forktool.engine.revisions import Upstream, resolve
from forktool.engine.upstream.fetch import Fetched, fetch_upstream
from forktool.engine.upstream.resolve import branch_ref
from forktool.git import Git
from forktool.model.revision import CommitId, Revision

if TYPE_CHECKING:
    from packaging.version import Version

Entry = tuple[str, str, str]  # (mode, blob, path)


class Target(NamedTuple):
    """A revision the forecast judges: a release tag, or upstream's branch head."""

    revision: Revision
    # A tarball-import pin: the files its release tarball adds to the pinned tag that this
    # target lacks, carried onto it (the next tarball will have them too).
    overlay: tuple[Entry, ...] = ()
    tarball: bool = False  # judged with a tarball-import pin's files

    @property
    def name(self) -> str:
        return self.revision.name

    @property
    def commit(self) -> CommitId:
        return self.revision.commit

    @property
    def version(self) -> Version | None:
        return self.revision.version

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"ref": self.name, "commit": self.commit}
        if self.tarball:
            out["tarball_files"] = len(self.overlay)
        return out


def fetch_targets(config: Config, git: Git, *, branch: bool) -> Fetched:
    """Upstream's tags, and its development branch when asked (the one rule for
    reaching upstream)."""
    return fetch_upstream(
        config, git, all_tags=True, branch=config.upstream_branch if branch else None
    )


def branch_target(config: Config, git: Git, ref: str) -> Target:
    """``--branch REF``: upstream's remote-tracking branch of that name, else any commit."""
    remote = f"refs/remotes/{config.upstream_remote}/{ref}"
    if ref == config.upstream_branch:
        remote = branch_ref(config)
    commit = git.find_commit(remote)
    if commit is None:
        return Target(resolve(git, ref, kind="revision", what="--branch"))
    return Target(Revision(ref, commit))


def choose_targets(
    config: Config,
    git: Git,
    tags: Sequence[str] | None,
    branch: str | None,
    fetched: Fetched | None = None,
) -> list[Target]:
    """``tags`` as given (TAGs, resolved here: the command's edge; ``fetched``: what
    reaching upstream did first), else every release newer than the pin; then the
    branch head."""
    if tags:
        upstream = Upstream.of(config, "--no-fetch", fetched=fetched)
        targets = [Target(resolve(git, tag, upstream=upstream)) for tag in dict.fromkeys(tags)]
    else:
        targets = [Target(r) for r in newer_releases(config, git)]
    if branch is not None:
        targets.append(branch_target(config, git, branch))
    return targets


def with_tarball_files(config: Config, git: Git, targets: Sequence[Target]) -> list[Target]:
    """``targets``, each carrying the files the pinned release tarball adds to the tag
    that the target lacks (none without a tarball-import pin): a patch to ``ltmain.sh``
    is judged on the target as its next tarball will have it, not failed for a file
    no git tag ever has."""
    if config.pin_import is None:
        return list(targets)
    return [t._replace(overlay=carried_files(config, git, t.commit), tarball=True) for t in targets]
