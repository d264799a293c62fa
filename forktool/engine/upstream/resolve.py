"""``forktool upstream resolve``: which of our pending upstream PRs have merged, and as
which commit?

One ``git log`` over the first-parent line of upstream's development branch
(``upstream.branch``, read from ``refs/remotes/<remote>/<branch>``) is indexed by the
PR each commit *merged*:

* a squash merge: the subject ends with `` (#N)`` (GitHub's default);
* a merge commit: ``Merge pull request #N from ...``;
* GitLab: ``See merge request <group>/<project>!N`` in the message;
* ``upstream.pr_patterns``: the user's regexes, each with a ``(?P<pr>...)`` group.

A commit that only mentions a PR does not count: a revert (``Revert "... (#N)" (#M)``
merged #M, not #N) or a follow-up whose subject ends "from (#N)". When two commits
still claim the same PR the patch stays pending and both are listed.

A number alone never resolves a PR: ``(#64)`` on upstream's branch is upstream's PR 64,
so a patch's PR resolves only when its host and project are upstream's (from
``upstream.url``, else the remote's URL), or when the merging commit names the PR's
own URL (a ``pr_patterns`` match). A PR of another project, a PR named by its number
only, and a PR of an upstream whose project cannot be known stay pending, with the
reason. A commit the pin already contains, while the patch still applies exactly on
the pin, cannot be the change the patch carries: it is listed, never written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from forktool.config import Config
from forktool.engine.retirement.apply_states import apply_states, substantial
from forktool.engine.upstream.fetch import (
    Fetched,
    fetch_upstream,
    no_source_hint,
    remote_default_branch,
    upstream_project,
    upstream_source,
)
from forktool.errors import FatalError, command_line
from forktool.fork import Fork, Patch
from forktool.fsutil import write_files
from forktool.git import Git, LogEntry, short
from forktool.model.project_url import Project, review_project
from forktool.model.text import whole_number
from forktool.model.upstream_map import MapEntry, UpstreamMap
from forktool.regex_safety import RegexTimeout, run_limited

How = Literal[
    "squash",
    "merge",
    "gitlab",
    "pattern",
    "not-merged",
    "ambiguous",
    "no-pr",
    "other-project",
    "unknown-project",
    "in-pin",
]

_MERGE = re.compile(r"^Merge pull request #(?P<pr>[0-9]+) from \S")
_GITLAB = re.compile(r"^See merge request (?P<project>\S+)!(?P<pr>[0-9]+)\s*$", re.MULTILINE)
# A subject that names a PR it did not merge ends in a linking word: "Fix X from (#N)".
# (A revert, 'Revert "x (#N)" (#M)', needs no rule: it ends with the PR that merged it.)
_MENTION_WORDS = frozenset(
    "from in of for after since see by per to follow follows follow-up followup re".split()
)


def squashed_pr(subject: str) -> str | None:
    """N when ``subject`` is a squash merge's, ``<title> (#N)``; None otherwise.

    Read by hand, not by a regex: it runs once per commit of a long history.
    """
    if not subject.endswith(")"):
        return None
    at = subject.rfind("(#")
    number = subject[at + 2 : -1]
    if at < 1 or whole_number(number) is None or not subject[at - 1].isspace():
        return None
    title = subject[:at].rstrip()
    if not title or title.rsplit(None, 1)[-1].lower() in _MENTION_WORDS:
        return None
    return number


_PR_SHORT = re.compile(r"^[#!]?(?P<pr>[0-9]+)$")
_URL = re.compile(r"https?://[^\s<>\"')\]]+")


@dataclass(frozen=True)
class PrRef:
    """A pending patch's PR: its number, and the project it belongs to when its URL
    names one (``host`` None: named by its number only)."""

    number: str
    project: str | None
    host: str | None = None

    @property
    def where(self) -> Project | None:
        if self.host is None or self.project is None:
            return None
        return Project(self.host, self.project)


def parse_pr(text: str) -> PrRef | None:
    """The PR number (and project) in a PR URL or ``#N``/``!N``/``N``; None otherwise."""
    text = text.strip()
    if found := review_project(text):
        project, number = found
        return PrRef(number, project.path or None, project.host)
    if match := _PR_SHORT.match(text):
        return PrRef(match.group("pr"), None)
    return None


@dataclass(frozen=True)
class Merged:
    """A commit that merged a PR, and how that was recognised."""

    commit: str
    subject: str
    how: How
    project: str | None = None  # GitLab's group/project
    named: Project | None = None  # the review URL's project, when the commit names one


EMPTY: Mapping[str, Sequence[str]] = {}


def merged_prs(
    entry: LogEntry, pattern_hits: Mapping[str, Sequence[str]] = EMPTY
) -> dict[str, Merged]:
    """PR number -> how ``entry`` merged it (usually one PR, or none). ``pattern_hits``:
    the ``pr`` group of each ``upstream.pr_patterns`` match, by commit (:func:`pattern_prs`)."""
    found: dict[str, Merged] = {}
    subject = entry.subject
    if len(entry.parents) > 1 and (match := _MERGE.match(subject)):
        found[match.group("pr")] = Merged(entry.commit, subject, "merge")
    elif (number := squashed_pr(subject)) is not None:
        # "Title (#N)" as a two-parent merge (a merge queue, or a titled merge commit).
        how: How = "merge" if len(entry.parents) > 1 else "squash"
        found[number] = Merged(entry.commit, subject, how)
    if "See merge request " in entry.message:
        for match in _GITLAB.finditer(entry.message):
            found.setdefault(
                match.group("pr"), Merged(entry.commit, subject, "gitlab", match.group("project"))
            )
    for text in pattern_hits.get(entry.commit, ()):
        pr = parse_pr(text)
        if pr is not None:
            named = _named_review(entry.message, pr.number) if pr.where is None else pr.where
            found.setdefault(pr.number, Merged(entry.commit, subject, "pattern", None, named))
    return found


def _named_review(text: str, number: str) -> Project | None:
    """The project of the review URL for PR ``number`` that ``text`` names, if any."""
    for url in _URL.findall(text):
        pr = parse_pr(url)
        if pr is not None and pr.number == number and pr.where is not None:
            return pr.where
    return None


def pattern_prs(config: Config, entries: Sequence[LogEntry]) -> dict[str, list[str]]:
    """Commit -> the ``pr`` group of every ``upstream.pr_patterns`` match in its message,
    each pattern under the user-regex time limit (exit 2 naming the pattern's line)."""
    if not config.pr_patterns or not entries:
        return {}
    try:
        found = run_limited(config.pr_patterns, [e.message for e in entries], "pr")
    except RegexTimeout as stop:
        line = config.lines.get(f"upstream.pr_patterns.{stop.pattern}", 0)
        raise FatalError(
            f"{config.rel(config.path)}:{line}: upstream.pr_patterns pattern "
            f"{config.pr_patterns[stop.pattern]!r} did not finish within {stop.seconds:g} s "
            f"on the message of {entries[stop.text].commit} (catastrophic backtracking?)",
            "simplify the pattern: anchor it and avoid repeating overlapping alternatives "
            "like (?:\\d|\\d)+",
        ) from None
    except RuntimeError as exc:
        raise FatalError(
            f"could not search commit messages with upstream.pr_patterns: {exc}"
        ) from None
    hits: dict[str, list[str]] = {}
    for entry, per_pattern in zip(entries, found, strict=True):
        for spans in per_pattern:
            texts = [entry.message[start:end] for start, end in spans if start >= 0]
            if texts:
                hits.setdefault(entry.commit, []).extend(texts)
    return hits


def merged_index(entries: Sequence[LogEntry], config: Config) -> dict[str, list[Merged]]:
    """PR number -> every commit that merged it, oldest first."""
    index: dict[str, list[Merged]] = {}
    hits = pattern_prs(config, entries)
    for entry in entries:
        for number, merged in merged_prs(entry, hits).items():
            index.setdefault(number, []).insert(0, merged)
    return index


@dataclass(frozen=True)
class Resolution:
    patch: str
    pr: str | None
    commit: str | None
    subject: str
    how: How
    candidates: tuple[str, ...]
    written: bool = False
    reason: str = ""  # why it stays pending, when a commit claims it ("" otherwise)

    def to_json(self) -> dict[str, object]:
        return {
            "patch": self.patch,
            "pr": self.pr,
            "commit": self.commit,
            "subject": self.subject,
            "how": self.how,
            "candidates": list(self.candidates),
            "written": self.written,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class ResolveResult:
    branch: str
    branch_commit: str
    fetched: bool
    patches: tuple[Resolution, ...]
    written: tuple[str, ...] = ()  # files changed by --write
    changes: tuple[str, ...] = ()  # what --write changed, one line each
    warnings: tuple[str, ...] = ()
    project: str | None = None  # upstream's host/project, None when it cannot be known

    @property
    def merged(self) -> tuple[Resolution, ...]:
        return tuple(r for r in self.patches if r.commit is not None)

    def to_json(self) -> dict[str, object]:
        return {
            "branch": self.branch,
            "branch_commit": self.branch_commit,
            "fetched": self.fetched,
            "patches": [p.to_json() for p in self.patches],
            "written": list(self.written),
            "changes": list(self.changes),
            "warnings": list(self.warnings),
            "project": self.project,
        }


# -- fetching ------------------------------------------------------------------------


def fetch_upstream_branch(config: Config, git: Git) -> Fetched:
    """Fetch ``upstream.branch`` by the one rule for reaching upstream."""
    return fetch_upstream(config, git, branch=config.upstream_branch)


def branch_ref(config: Config) -> str:
    return f"refs/remotes/{config.upstream_remote}/{config.upstream_branch}"


def upstream_branch_commit(config: Config, git: Git) -> str:
    """Where upstream's development branch is, as fetched (exit 2 when it is not here)."""
    ref = branch_ref(config)
    commit = git.find_commit(ref)
    if commit is None:
        raise FatalError(
            f"{ref} is not in this repository (upstream.branch: {config.upstream_branch})",
            _branch_fetch_hint(config, git),
        )
    return commit


def _branch_fetch_hint(config: Config, git: Git) -> str:
    """How to bring the branch: by the remote when there is one, else from upstream.url
    (``git fetch <remote>`` would name a remote this repository does not have). When the
    remote's HEAD names another branch (``master``), that is the likely setting."""
    source = upstream_source(config, git)
    remote, branch = config.upstream_remote, config.upstream_branch
    other = remote_default_branch(git, remote) if source == remote else None
    if other is not None and other != branch:
        return (
            f"upstream's default branch is '{other}' (refs/remotes/{remote}/HEAD): "
            f"set upstream.branch: {other} in forktool.yaml"
        )
    if source == remote:
        how = f"{command_line('git', 'fetch', source, branch)}, or drop --no-fetch"
    elif source is None:
        how = no_source_hint(config)
    else:
        how = f"drop --no-fetch to fetch it from upstream.url ({source})"
    return f"{how}; set upstream.branch in forktool.yaml if upstream develops on another branch"


# -- resolving -----------------------------------------------------------------------


def tracked(patch: Patch) -> bool:
    """Pending (or unmapped with an Upstream-PR trailer): a PR we wait for."""
    return patch.pending or (not patch.commits and patch.upstream_pr is not None)


def claims_pr(pr: PrRef, merged: Merged, upstream: Project | None) -> bool | None:
    """Did ``merged`` merge the patch's ``pr``? None when that cannot be known (the PR
    is named by its number only, or upstream's project is not known)."""
    if merged.named is not None:  # the commit names a review URL: compare the URLs
        return pr.where == merged.named
    if pr.where is None:
        return None
    if merged.project is not None:  # GitLab names the project; its host is upstream's
        if pr.project != merged.project.lower():
            return False
        return upstream is None or upstream.host == pr.host
    if upstream is None:
        return None
    return pr.where == upstream


def _resolve_one(
    patch: Patch, index: dict[str, list[Merged]], upstream: Project | None, unknown: str
) -> Resolution:
    pr_text = patch.upstream_pr
    pr = parse_pr(pr_text) if pr_text else None
    if pr is None:
        return Resolution(patch.name, pr_text, None, "", "no-pr", ())
    claims = [(m, claims_pr(pr, m, upstream)) for m in index.get(pr.number, [])]
    found = [m for m, claim in claims if claim]
    if len(found) > 1:
        return Resolution(
            patch.name, pr_text, None, "", "ambiguous", tuple(m.commit for m in found)
        )
    if found:
        one = found[0]
        return Resolution(patch.name, pr_text, one.commit, one.subject, one.how, (one.commit,))
    if pr.where is not None and upstream is not None and pr.where != upstream:
        return Resolution(
            patch.name,
            pr_text,
            None,
            "",
            "other-project",
            tuple(m.commit for m, claim in claims if claim is None),
            reason=f"{pr_text} is a PR of {pr.where}, not of upstream ({upstream}): "
            "upstream's commits with the same number are other PRs; map the patch "
            "to upstream's commit by hand once upstream has the change",
        )
    maybe = tuple(m.commit for m, claim in claims if claim is None)
    if maybe:
        why = (
            f"{pr_text} names a PR by its number only: write the PR's URL "
            "(https://HOST/OWNER/PROJECT/pull/N) so upstream's PR can be told from "
            "another project's"
            if pr.where is None
            else unknown
        )
        return Resolution(patch.name, pr_text, None, "", "unknown-project", maybe, reason=why)
    return Resolution(patch.name, pr_text, None, "", "not-merged", ())


def _already_in_pin(fork: Fork, git: Git, found: Sequence[Resolution]) -> dict[str, str]:
    """Patch name -> why its resolved commit cannot be its change: the pin already
    contains the commit, yet the patch still applies exactly on the pin."""
    config = fork.config
    merged = [r for r in found if r.commit is not None]
    if not merged:
        return {}
    outside = git.not_ancestors([r.commit for r in merged if r.commit], config.pin_commit)
    inside = [r for r in merged if r.commit not in outside]
    if not inside:
        return {}
    states = apply_states(
        git, config.pin_commit, [fork.patch(r.patch) for r in inside], config.pin_tag
    )
    why: dict[str, str] = {}
    for r in inside:
        state = states[r.patch]
        part = state.hunks_forward_only
        if state.forward:
            how = "exactly"
        elif part is not None and substantial(part):
            how = f"hunk by hunk ({part[0]} of its {part[1]} hunks, not reverse-applying)"
        else:
            continue
        why[r.patch] = (
            f"{short(r.commit)} '{r.subject}' is already in the pin {config.pin_tag}, yet the "
            f"patch still applies {how} on {config.pin_tag}: that commit is not the change "
            "this patch carries (another PR of the same number, or a change upstream lost); "
            "map the patch by hand"
        )
    return why


def resolve(fork: Fork, git: Git, *, fetch: bool) -> ResolveResult:
    """Each pending patch's PR -> the commit that merged it on upstream's branch."""
    config = fork.config
    if fetch:
        fetch_upstream_branch(config, git)
    tip = upstream_branch_commit(config, git)
    pending = [p for p in fork.patches if tracked(p)]
    index = merged_index(git.first_parent_log(tip), config) if pending else {}
    upstream, unknown = upstream_project(config, git)
    found = [_resolve_one(p, index, upstream, unknown) for p in pending]
    contradicted = _already_in_pin(fork, git, found)
    found = [
        Resolution(r.patch, r.pr, None, r.subject, "in-pin", r.candidates, reason=why)
        if (why := contradicted.get(r.patch))
        else r
        for r in found
    ]
    return ResolveResult(
        config.upstream_branch,
        tip,
        fetch,
        tuple(found),
        project=None if upstream is None else str(upstream),
    )


def write_resolved(fork: Fork, result: ResolveResult) -> ResolveResult:
    """Record each merged PR's commit in upstream.map (the PR URL stays as the note):
    one all-or-nothing write. Call it under the fork lock."""
    umap: UpstreamMap = fork.upstream_map
    changes: list[str] = []
    warnings: list[str] = []
    done: set[str] = set()
    for found in result.merged:
        assert found.commit is not None
        patch = fork.patch(found.patch)
        trailer = patch.parsed.header.trailer("Upstream-Merge")
        if trailer is not None:
            warnings.append(
                f"{patch.rel}:{trailer.line}: its Upstream-Merge trailer says "
                f"'{trailer.value}': set it to {found.commit} and run resolve --write again"
            )
            continue
        old = umap.get(found.patch)
        note = old.note if old else ""
        if found.pr and found.pr not in note.split():
            note = f"{found.pr} {note}".strip()
        entry = MapEntry(found.patch, (found.commit,), note, 0, "commits")
        umap = umap.with_entry(entry)
        before = old.render() if old else "(no line)"
        changes.append(f"{fork.config.upstream_map}: {before} -> {entry.render()}")
        done.add(found.patch)
    if not done:
        return _with(result, (), (), tuple(warnings), done)
    write_files({fork.config.map_path: umap.to_bytes()})
    return _with(result, (fork.config.upstream_map,), tuple(changes), tuple(warnings), done)


def _with(
    result: ResolveResult,
    written: tuple[str, ...],
    changes: tuple[str, ...],
    warnings: tuple[str, ...],
    done: set[str],
) -> ResolveResult:
    patches = tuple(
        Resolution(
            p.patch, p.pr, p.commit, p.subject, p.how, p.candidates, p.patch in done, p.reason
        )
        for p in result.patches
    )
    return ResolveResult(
        result.branch,
        result.branch_commit,
        result.fetched,
        patches,
        written,
        changes,
        warnings,
        result.project,
    )
