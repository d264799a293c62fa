"""Patch files -> commits: ``import --branch NAME``.

A branch of one commit per patch on the pin, made in a temporary index with
``commit-tree`` and ``update-ref``, never touching the checkout. Each commit carries
the patch's own author, date and message plus its series and map lines (see
:mod:`forktool.model.carrier`), so ``export`` (:mod:`forktool.engine.patches.export`) gives
the same files back: import then export is byte-identical for a canonical series.
Under the dpkg rule a patch that applies only at an offset is committed where it lands
(export then gives it back regenerated at its new lines).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from forktool.engine.apply.verdict import acceptable, allows_offset
from forktool.engine.patches.canonical import build_chain
from forktool.engine.patches.commit_meta import CommitMeta, commit_meta
from forktool.errors import FatalError
from forktool.faults import faultpoint
from forktool.fork import Fork, Patch
from forktool.git import Git
from forktool.model.carrier import Carrier, carrier_text, plain_message, with_carrier
from forktool.model.patchfile import UPSTREAM_MERGE, UPSTREAM_PR

ZERO = "0" * 40


@dataclass(frozen=True)
class ImportResult:
    branch: str
    base: str
    base_commit: str
    tip: str
    replaced: str | None  # the branch's earlier tip under --force
    commits: tuple[tuple[str, str], ...]  # (patch, commit)
    offset: tuple[str, ...] = ()  # patches applied where they landed (the dpkg rule)

    def to_json(self) -> dict[str, object]:
        return {
            "branch": self.branch,
            "base": self.base,
            "base_commit": self.base_commit,
            "tip": self.tip,
            "replaced": self.replaced,
            "commits": [{"patch": p, "commit": c} for p, c in self.commits],
            "offset": list(self.offset),
        }


def import_meta(fork: Fork, patch: Patch, pin_date: str) -> CommitMeta | str:
    """The commit ``import`` makes of a patch: its own author, date and message, plus
    the series and map lines (see :mod:`forktool.model.carrier`), so that ``export``
    gives the same files back. A plain diff has no date: it gets the pin's commit date."""
    meta = commit_meta(patch)
    if isinstance(meta, str):
        return meta
    header = patch.parsed.header
    plain = header.style == "plain"
    mapping = patch.mapping
    series_line = fork.series.lines[patch.entry.line - 1].strip()
    map_line = (
        fork.upstream_map.lines[mapping.line - 1].strip() if mapping else f"{patch.name} none"
    )
    extra = []
    if (plain or header.trailer(UPSTREAM_MERGE) is None) and mapping and not mapping.pending:
        extra.append((UPSTREAM_MERGE, ",".join(mapping.commits) or "none"))
    if (plain or header.trailer(UPSTREAM_PR) is None) and patch.upstream_pr:
        extra.append((UPSTREAM_PR, patch.upstream_pr))
    sha = header.from_sha or ""
    from_sha = "" if plain or sha.strip("0") == "" else sha
    carrier = carrier_text(Carrier(series_line, map_line, plain, from_sha), extra)
    if plain:
        subject = header.subject or Path(patch.name).stem
        message = plain_message(subject, header.lines, carrier)
        return CommitMeta(meta.name, meta.email, pin_date, message)
    return CommitMeta(meta.name, meta.email, meta.date, with_carrier(meta.message, carrier))


def import_series(
    fork: Fork, git: Git, branch: str, *, base_commit: str, force: bool = False
) -> ImportResult:
    """A branch ``branch``: the pin plus one commit per patch, in series order, each
    applied under the fork's rule (exactly; under dpkg-source's, a patch that lands at an
    offset is committed where it lands, and named in ``offset``)."""
    if not fork.patches:
        raise FatalError(
            f"{fork.config.series} lists no patches: there is nothing to import",
            "add patches to the series first",
        )
    if not git.is_valid_branch_name(branch):
        raise FatalError(f"'{branch}' is not a valid branch name")
    ref = f"refs/heads/{branch}"
    existing = git.find_commit(ref)
    if existing is not None and not force:
        raise FatalError(
            f"branch '{branch}' already exists (at {existing[:12]})",
            "pick another name, or pass --force to replace it",
        )
    if existing is not None and ref in git.worktree_branches():
        raise FatalError(
            f"branch '{branch}' is checked out; import never moves a checked-out branch",
            "check out another branch first, or import under another name",
        )
    tag = fork.config.pin_tag
    rule = fork.config.apply_rule
    pin_date = git.commit_date_raw(base_commit)
    with git.temp_index(keep_objects=True) as index:
        chain = build_chain(
            index,
            base_commit,
            fork.patches,
            base_name=tag,
            allow_offset=allows_offset(rule),
            meta_for=lambda patch: import_meta(fork, patch, pin_date),
            rule=rule,
        )
        accepted = allows_offset(rule)
        failed = chain.failed or next(  # one GNU patch holds to a file's end is committed
            (link for link in chain.links if not acceptable(link.verdict.status, accepted)), None
        )
        if failed is not None:
            unnamed = isinstance(commit_meta(failed.patch), str)
            raise FatalError(
                f"{failed.patch.rel}: {failed.verdict.message}",
                "give it a 'From: Name <email>' and a 'Date:' line: import makes a commit of "
                "each patch, with its own author and date, so that export gives the same "
                "file back"
                if unnamed
                else f"import needs every patch to apply on the pin under the fork's rule "
                f"({rule}): run 'forktool verify', and 'forktool refresh' for a patch that "
                "does not",
            )
        faultpoint("import.update_ref")
        git.create_ref(ref, chain.tip, existing or ZERO, reason="forktool import")
    commits = tuple((link.patch.name, link.commit or "") for link in chain.links)
    offset = tuple(link.patch.name for link in chain.links if link.verdict.status == "offset")
    return ImportResult(branch, tag, base_commit, chain.tip, existing, commits, offset)
