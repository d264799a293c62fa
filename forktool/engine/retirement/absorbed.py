"""Is this patch in that release? Ancestry decides; other witnesses can only object.

For every patch of the series, against a release tag:

* **ancestry** of every mapped upstream commit, in bulk: one ``cat-file
  --batch-check`` proves each commit exists (a missing commit would otherwise look
  like an ancestor), then ONE ``rev-list`` answers for all of them;
* **first release**: the earliest release tag in version order containing every
  mapped commit (:func:`forktool.engine.retirement.releases.first_releases`);
* **evidence** that can contradict or support ancestry, each gathered in bulk over
  the tag's history since the pin, and only where it can change a verdict: for a
  patch the tag lacks, ``(cherry picked from commit X)`` trailers (one ``git log``)
  and identical changes (one ``git patch-id --stable`` over the patch files, one over
  ``git log -p``); for a patch the tag contains, reverts of its commits
  (:mod:`forktool.engine.retirement.reverts`); for every patch, how it applies on the tag (one
  ``git apply --check`` forward and one in reverse, each patch checked against the
  tag's tree). A revert, or a forward apply (exact or at an offset), objects to
  ancestry.

The verdict rule lives in one place, :func:`decide`; the second witness (probe
results) is combined with it in one place, :func:`combine`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal

from forktool.config import Config
from forktool.engine import Progress
from forktool.engine.retirement.apply_states import (
    ApplyState,
    apply_states,
    substantial,
)
from forktool.engine.retirement.releases import (
    Release,
    first_releases,
    fork_releases,
    require_releases,
)
from forktool.engine.retirement.reverts import (
    REVERT_GREP,
    Need,
    Revert,
    find_reverts,
    pathspec_dirs,
    range_patch_ids,
)
from forktool.engine.upstream.fetch import Fetched, fetch_upstream
from forktool.errors import FatalError, command_line
from forktool.fork import Fork, Patch
from forktool.git import Git, LogEntry, short
from forktool.model.arm_results import ArmResults, GateVerdict
from forktool.model.patchfile import PatchFile, touched_paths
from forktool.model.revision import Revision

Verdict = Literal["retire", "keep", "revisit", "fork-only", "pending"]
EvidenceKind = Literal[
    "cherry-pick",
    "patch-id",
    "content-present",
    "still-applies",
    "still-applies-at-offset",
    "revert",
    "no-longer-applies",
    "offset",
    "hunks-still-apply",
]
Outcome = Literal[
    "retired",
    "still-required",
    "probe-blind",
    "retirement-unconfirmed",
    "broken-on-tag",
    "now-harmful",
]

# Outcomes of the second witness that make ``absorbed`` exit 1.
HARMFUL_OUTCOMES: frozenset[str] = frozenset({"broken-on-tag", "now-harmful"})
# Evidence that, without ancestry, says the change may already be in the tag.
_PRESENCE: tuple[EvidenceKind, ...] = ("cherry-pick", "patch-id", "content-present")
# Evidence that, with ancestry, says the change is absent from the tag after all.
_ABSENCE: tuple[EvidenceKind, ...] = (
    "revert",
    "still-applies",
    "still-applies-at-offset",
    "hunks-still-apply",
)
_CHERRY = re.compile(r"\(cherry picked from commit ([0-9a-f]{40})\)")
CHERRY_GREP = "cherry picked from commit "
WITNESS_WORKERS = 4


@dataclass(frozen=True)
class Evidence:
    kind: EvidenceKind
    commit: str | None
    detail: str
    # ``hunks-still-apply``: (hunks that apply forward and do not reverse-apply, all hunks)
    hunks: tuple[int, int] | None = None

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {"kind": self.kind, "commit": self.commit, "detail": self.detail}
        if self.hunks is not None:
            data["hunks"] = {"still_apply": self.hunks[0], "total": self.hunks[1]}
        return data


@dataclass(frozen=True)
class ProbeWitness:
    """One patch's leave-one-out result, combined with ancestry."""

    arm: GateVerdict  # the series without this patch, on the tag
    outcome: Outcome
    detail: str

    def to_json(self) -> dict[str, object]:
        return {"arm": self.arm, "outcome": self.outcome, "detail": self.detail}


@dataclass(frozen=True)
class PatchAbsorption:
    patch: str
    upstream_commits: tuple[str, ...]
    verdict: Verdict
    ancestor: bool | None  # None only for fork-only and pending
    first_release: str | None
    evidence: tuple[Evidence, ...]
    reason: str  # the verdict, spelled out
    not_in_tag: tuple[str, ...] = ()  # mapped commits that are not ancestors of the tag
    probe: ProbeWitness | None = None
    upstream_pr: str | None = None  # the patch's PR (trailer, else the map note's URL)

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "patch": self.patch,
            "upstream_commits": list(self.upstream_commits),
            "verdict": self.verdict,
            "ancestor": self.ancestor,
            "first_release": self.first_release,
            "evidence": [e.to_json() for e in self.evidence],
            "reason": self.reason,
            "upstream_pr": self.upstream_pr,
        }
        if self.probe is not None:
            data["probe"] = self.probe.to_json()
        return data


@dataclass(frozen=True)
class AbsorbedResult:
    tag: str
    tag_commit: str
    patches: tuple[PatchAbsorption, ...]
    probe_full: GateVerdict | None = None

    @property
    def harmful(self) -> bool:
        """The second witness found a patch that breaks, or cannot be judged on, the tag."""
        return any(
            p.probe is not None and p.probe.outcome in HARMFUL_OUTCOMES for p in self.patches
        )

    def patch(self, name: str) -> PatchAbsorption:
        return next(p for p in self.patches if p.patch == name)

    def retirable(self) -> list[PatchAbsorption]:
        return [p for p in self.patches if p.verdict == "retire"]

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "tag": self.tag,
            "tag_commit": self.tag_commit,
            "patches": [p.to_json() for p in self.patches],
        }
        if self.probe_full is not None:
            data["probe"] = {"full": self.probe_full}
        return data


# -- the rules ------------------------------------------------------------------------


def decide(
    commits: Sequence[str],
    not_in_tag: Sequence[str],
    evidence: Sequence[Evidence],
    tag: str,
    *,
    pending_pr: str | None = None,
    pending: bool = False,
) -> tuple[Verdict, bool | None, str]:
    """The one verdict rule: (verdict, ancestor, the reason in words)."""
    if not commits and pending:
        waiting = f"PR {pending_pr}" if pending_pr else "an upstream change"
        return (
            "pending",
            None,
            f"waiting for {waiting}: never retired until its commit is in upstream.map "
            "(forktool upstream resolve)",
        )
    if not commits:
        return "fork-only", None, "mapped to 'none': no upstream commit can retire it"
    if not not_in_tag:
        named = ", ".join(short(c) for c in commits)
        objection = _absence_reason(evidence, tag)
        if objection:
            return "revisit", True, f"{named} in {tag} by ancestry, yet {objection}"
        return "retire", True, f"{named} in {tag} by ancestry"
    absent = ", ".join(short(c) for c in not_in_tag)
    partly = (
        f" ({len(commits) - len(not_in_tag)} of {len(commits)} mapped commits are)"
        if len(commits) > 1
        else ""
    )
    seen = [e for e in evidence if e.kind in _PRESENCE]
    if seen:
        kinds = ", ".join(dict.fromkeys(e.kind for e in seen))
        return (
            "revisit",
            False,
            f"{absent} not an ancestor of {tag}{partly}, but {kinds} evidence says the change "
            f"may be there: decide by hand (retire --force --reason, or keep)",
        )
    return "keep", False, f"{absent} not an ancestor of {tag}{partly}"


def _absence_reason(evidence: Sequence[Evidence], tag: str) -> str:
    """Why the change is absent from ``tag`` although ancestry says it is in ("" if
    nothing says so): a revert first, then a forward apply."""
    kinds = {e.kind for e in evidence}
    reverts = [e for e in evidence if e.kind == "revert"]
    if reverts:
        named = "; ".join(e.detail for e in reverts)
        return (
            f"{named}: the fix is not in {tag}; decide by hand "
            "(keep it, or retire --force --reason)"
        )
    if "still-applies" in kinds:
        return (
            f"the patch still applies forward exactly on {tag}: the change is absent there "
            "(reverted, or lost in a merge)"
        )
    if "still-applies-at-offset" in kinds:
        return (
            f"the patch still applies forward (at an offset) on {tag}: the change is absent "
            "there (reverted, or lost in a merge)"
        )
    for e in evidence:
        if e.kind == "hunks-still-apply" and e.hunks is not None and substantial(e.hunks):
            return (
                f"{e.hunks[0]} of its {e.hunks[1]} hunks still apply forward on {tag} and do "
                "not reverse-apply there: most of the change is absent (a different change "
                "upstream, reverted, or lost in a merge); decide by hand"
            )
    return ""


def combine(verdict: Verdict, full: GateVerdict, arm: GateVerdict) -> tuple[Outcome, str]:
    """The one rule joining ancestry with a leave-one-out probe (docs/retirement.md)."""
    if full == "fail":
        if arm == "pass":
            return "now-harmful", "the full series fails on the tag and passes without this patch"
        return "broken-on-tag", "the full series fails on the tag, with and without this patch"
    if arm == "fail":
        if verdict == "retire":
            return (
                "still-required",
                "ancestry says absorbed, but the series fails without this patch: "
                "find out why before retiring it",
            )
        return "still-required", "the series fails without this patch"
    if verdict == "retire":
        return "retired", "ancestry and the probe agree: the tag no longer needs this patch"
    if verdict == "keep":
        return (
            "probe-blind",
            "the probe passes without the patch but the tag does not contain the fix: "
            "keep it, and fix the probe so it exercises the change",
        )
    return (
        "retirement-unconfirmed",
        "the probe passes without the patch, but ancestry cannot confirm the tag has the fix",
    )


# -- fail closed on missing knowledge ------------------------------------------------


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


# -- the witnesses, each in bulk -----------------------------------------------------


def cherry_picks(
    git: Git,
    tip: str,
    since: str,
    picked: Sequence[str],
    messages: Sequence[tuple[str, str]] | None = None,
) -> dict[str, list[tuple[str, str]]]:
    """Picked-from commit -> [(commit in ``tip``, its subject)] for the ``picked``
    commits, from one ``git log --grep`` (or ``messages`` already read from it).

    The scan reads messages only (no diffs) since ``since``; messages read from a
    wider range are fine: no commit older than C names C.
    """
    if not picked:
        return {}
    wanted = set(picked)
    if messages is None:
        messages = git.log_messages(tip, [since], grep=CHERRY_GREP)
    found: dict[str, list[tuple[str, str]]] = {}
    for commit, message in messages:
        subject = message.split("\n", 1)[0]
        for origin in _CHERRY.findall(message):
            if origin in wanted:
                found.setdefault(origin, []).append((commit, subject))
    return found


def merge_picks(
    fork: Fork,
    git: Git,
    tag: str,
    patches: Sequence[Patch],
    missing: set[str],
    messages: Sequence[tuple[str, str]],
) -> dict[str, list[Evidence]]:
    """Patch name -> cherry-pick evidence from picks of upstream *merges*.

    Release branches carry fixes as ``git cherry-pick -x -m1 <merge>``: the trailer
    names the merge commit, not the mapped commit. A pick of merge M is evidence for a
    patch whose mapped commit M's merged side contains (an ancestor of M, not of its
    first parent), or whose PR M merged (the same host and project, never the number
    alone). Only patches whose commits ``tag`` lacks are judged (``missing``).
    """
    undecided = [p for p in patches if missing.intersection(p.commits)]
    picked: dict[str, list[tuple[str, str]]] = {}
    wanted = {c for p in undecided for c in p.commits}
    for commit, message in messages:
        for origin in _CHERRY.findall(message):
            if origin not in wanted:
                picked.setdefault(origin, []).append((commit, message.split("\n", 1)[0]))
    if not undecided or not picked:
        return {}
    known = [o for o, kind in git.object_types(picked).items() if kind == "commit"]
    merges = [e for e in git.log_entries(known) if len(e.parents) > 1]
    if not merges:
        return {}
    found: dict[str, list[Evidence]] = {}
    why = _merged_side(git, merges, sorted(wanted & missing))
    why_pr = _merged_pr(fork, git, merges, undecided)
    for patch in undecided:
        for merge in merges:
            reason = next((w for c, w in why.get(merge.commit, ()) if c in patch.commits), None)
            reason = reason or why_pr.get((merge.commit, patch.name))
            if reason is None:
                continue
            for pick, subject in picked[merge.commit]:
                found.setdefault(patch.name, []).append(
                    Evidence(
                        "cherry-pick",
                        pick,
                        f"{short(pick)} '{subject}' in {tag} was cherry-picked from merge "
                        f"{short(merge.commit)} '{merge.subject}', {reason}",
                    )
                )
    return found


def _merged_side(
    git: Git, merges: Sequence[LogEntry], commits: Sequence[str]
) -> dict[str, list[tuple[str, str]]]:
    """Merge -> [(commit, why)] for the ``commits`` its merged side contains (an
    ancestor of the merge, not of its first parent): two git calls per commit, however
    many merges a release branch picked."""
    found: dict[str, list[tuple[str, str]]] = {}
    first = {m.commit: m.parents[0] for m in merges}
    for commit in commits:
        holding = git.tips_containing(commit, first)
        if not holding:
            continue
        before = git.tips_containing(commit, {first[m] for m in holding})
        for merge in sorted(holding):
            if first[merge] not in before:
                found.setdefault(merge, []).append(
                    (commit, f"whose merged side contains {short(commit)}")
                )
    return found


def _merged_pr(
    fork: Fork, git: Git, merges: Sequence[LogEntry], patches: Sequence[Patch]
) -> dict[tuple[str, str], str]:
    """(merge, patch name) -> why, for each merge that merged the patch's own PR."""
    # resolve reads apply states from this module: import its PR rules here, not above.
    from forktool.engine.upstream.fetch import upstream_project
    from forktool.engine.upstream.resolve import claims_pr, merged_prs, parse_pr

    prs = {p.name: parse_pr(p.upstream_pr) for p in patches if p.upstream_pr}
    if not any(prs.values()):
        return {}
    upstream, _ = upstream_project(fork.config, git)
    found: dict[tuple[str, str], str] = {}
    for merge in merges:
        merged = merged_prs(merge)
        for name, pr in prs.items():
            if (
                pr is not None
                and pr.number in merged
                and claims_pr(pr, merged[pr.number], upstream)
            ):
                found[(merge.commit, name)] = f"which merged PR {fork.patch(name).upstream_pr}"
    return found


def history_messages(git: Git, tip: str, since: str) -> list[tuple[str, str]]:
    """Every message in ``tip`` since ``since`` that names a cherry-pick or a revert:
    one ``git log`` (no diffs) serves both witnesses."""
    return git.log_messages(tip, [since], grep=(CHERRY_GREP, REVERT_GREP), ignore_case=True)


def copies(git: Git, patches: Sequence[Patch], tip: str, since: str) -> dict[str, list[str]]:
    """:func:`same_changes` for patches whose verdict it can change."""
    if not patches:
        return {}
    return same_changes(git, patches, tip, since)


def _need(parsed: PatchFile) -> Need:
    """What a commit's diff must name to share the patch's patch-id (reverts.Need)."""
    files = frozenset(
        path
        for diff in parsed.files
        if diff.hunks
        for path in [diff.new_path or diff.old_path]
        if path is not None
    )
    named = frozenset(
        path for diff in parsed.files for path in (diff.old_path, diff.new_path) if path
    )
    return Need(files, named)


def _diff_bytes(parsed: PatchFile) -> bytes:
    lines: list[str] = []
    for diff in parsed.files:
        lines += diff.header_lines
        for hunk in diff.hunks:
            lines.append(hunk.header)
            lines += hunk.lines
    return "".join(line + "\n" for line in lines).encode("utf-8", "surrogateescape")


def same_changes(git: Git, patches: Sequence[Patch], tip: str, since: str) -> dict[str, list[str]]:
    """Patch name -> commits in ``tip`` (since ``since``) with the same stable patch-id.

    Two ``git patch-id --stable`` runs: one over every patch file (each introduced
    by a placeholder id), one over the diffs of the range's commits limited to the
    directories the patches touch (so a commit matches when its change there is the
    patch's change, even if it also changed files elsewhere); only commits touching
    every file of some patch are read (:func:`range_patch_ids`).
    """
    if not patches:
        return {}
    paths = pathspec_dirs(path for p in patches for path in touched_paths(p.parsed))
    stream = b"".join(
        f"commit {index:040x}\n".encode() + _diff_bytes(p.parsed) for index, p in enumerate(patches)
    )
    ids: dict[str, list[str]] = {}
    for patch_id, placeholder in git.patch_ids(stream):
        ids.setdefault(patch_id, []).append(patches[int(placeholder, 16)].name)
    needs = [_need(p.parsed) for p in patches]
    found: dict[str, list[str]] = {}
    for patch_id, commit in range_patch_ids(git, tip, [since], paths, needs):
        for name in ids.get(patch_id, ()):
            found.setdefault(name, []).append(commit)
    return found


def _evidence(
    patch: Patch,
    tag: str,
    ancestor: bool,
    picks: Mapping[str, list[tuple[str, str]]],
    same: Mapping[str, list[str]],
    state: ApplyState,
) -> list[Evidence]:
    found: list[Evidence] = []
    for commit in patch.commits:
        for pick, subject in picks.get(commit, ()):
            found.append(
                Evidence(
                    "cherry-pick",
                    pick,
                    f"{short(pick)} '{subject}' in {tag} was cherry-picked from {short(commit)}",
                )
            )
    for commit in same.get(patch.name, ()):
        if commit not in patch.commits:
            found.append(
                Evidence(
                    "patch-id",
                    commit,
                    f"{short(commit)} in {tag} makes the same change (same patch-id --stable)",
                )
            )
    if state.reverse:
        found.append(
            Evidence("content-present", None, f"the patch reverse-applies exactly on {tag}")
        )
    if ancestor and state.forward:
        found.append(
            Evidence(
                "still-applies",
                None,
                f"the patch still applies forward exactly on {tag}: its change is not there",
            )
        )
    if state.forward_shifted and ancestor:
        found.append(
            Evidence(
                "still-applies-at-offset",
                None,
                f"the patch still applies forward on {tag}, at an offset ({state.message}): "
                "its change is not there",
            )
        )
    elif state.forward_shifted:  # offset drift: it still applies, moved
        found.append(Evidence("offset", None, state.message))
    elif (
        ancestor and not state.forward and state.hunks_forward_only and state.hunks_forward_only[0]
    ):
        still, total = state.hunks_forward_only
        found.append(
            Evidence(
                "hunks-still-apply",
                None,
                f"{still} of {total} hunks still apply forward on {tag} and do not "
                "reverse-apply there",
                state.hunks_forward_only,
            )
        )
    if not state.forward and not state.reverse and not state.forward_shifted:
        detail = state.message
        if state.reverse_shifted:
            detail += "; it reverse-applies only at an offset: the change looks present, moved"
        found.append(Evidence("no-longer-applies", None, detail))
    return found


def _revert_evidence(patch: Patch, tag: str, reverts: Mapping[str, list[Revert]]) -> list[Evidence]:
    return [
        Evidence(
            "revert",
            revert.commit,
            f"{short(revert.commit)} '{revert.subject}' in {tag} reverts {short(commit)} "
            f"(found by: {', '.join(revert.witnesses)})",
        )
        for commit in patch.commits
        for revert in reverts.get(commit, ())
    ]


# -- the report ---------------------------------------------------------------------


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


@dataclass(frozen=True)
class Shared:
    """What :func:`absorbed` finds the same whatever the tag: checked once for many."""

    first: dict[str, str | None]


def shared_knowledge(fork: Fork, git: Git) -> Shared:
    """Refuse a shallow clone or a missing commit, and find first releases: once."""
    refuse_shallow(git, fork.config)
    require_commits(fork, git)
    return Shared(first_release_map(fork, git, checked_releases(fork, git)))


def absorbed(
    fork: Fork,
    git: Git,
    revision: Revision,
    *,
    probe: ArmResults | None = None,
    progress: Progress | None = None,
    shared: Shared | None = None,
) -> AbsorbedResult:
    """Per patch: is it in ``revision`` by ancestry, its first release, and the other
    witnesses. ``revision`` is the tag as resolved at the command (or, for ``forecast``,
    the branch head: any commit, named so).

    ``shared`` (from :func:`shared_knowledge`) skips what does not depend on the tag
    when one run judges several tags (``forecast``).

    Exit-2 conditions (raised as FatalError, nothing changed): shallow clone, a mapped
    or pinned commit that is missing or is not a commit, probe results that do not
    cover the series.
    """
    tag, tag_commit = revision.name, revision.commit
    if shared is None:
        refuse_shallow(git, fork.config)
        require_commits(fork, git)
    probe_full = require_probe_covers(probe, fork, tag) if probe is not None else None
    patches = list(fork.patches)
    commits = [c for p in patches for c in p.commits]
    releases = checked_releases(fork, git) if shared is None else None
    since = fork.config.pin_commit
    # The witnesses are independent read-only git runs: gather them side by side.
    with ThreadPoolExecutor(max_workers=WITNESS_WORKERS) as pool:
        messages_f = pool.submit(history_messages, git, tag_commit, since)
        first_f = None if releases is None else pool.submit(first_release_map, fork, git, releases)
        rule = fork.config.apply_rule
        states_f = pool.submit(apply_states, git, tag_commit, patches, tag, rule)
        missing = git.not_ancestors(commits, tag_commit)
        in_tag = [c for c in dict.fromkeys(commits) if c not in missing]
        # Ancestry decides where it says no, unless other evidence says the change may
        # be there: only those patches (and fork-only ones) are sought by patch-id. Where
        # ancestry says yes, only a revert or a forward apply can object.
        undecided = [p for p in patches if not p.commits or missing.intersection(p.commits)]
        same_f = pool.submit(copies, git, undecided, tag_commit, since)
        messages = messages_f.result()
        # Only a commit TAG lacks can have a cherry-pick that changes a verdict.
        picks = cherry_picks(git, tag_commit, since, sorted(missing), messages)
        merged_picks = merge_picks(fork, git, tag, patches, missing, messages)
        states = states_f.result()
        # A change the tag visibly carries (the patch reverse-applies exactly) was not
        # reverted for good: only the others are sought by their inverse diff.
        hidden = [
            p
            for p in patches
            if p.commits and not missing.intersection(p.commits) and not states[p.name].reverse
        ]
        reverts = find_reverts(
            git,
            tag_commit,
            since,
            in_tag,
            content=[c for p in hidden for c in p.commits],
            paths=[path for p in hidden for path in touched_paths(p.parsed)],
            messages=[(c, m) for c, m in messages if REVERT_GREP in m.lower()],
        )
        first = shared.first if shared is not None else first_f.result() if first_f else {}
        same = same_f.result()
    results = []
    for patch in patches:
        not_in_tag = tuple(c for c in patch.commits if c in missing)
        ancestor = bool(patch.commits) and not not_in_tag
        evidence = _evidence(patch, tag, ancestor, picks, same, states[patch.name])
        evidence = [*merged_picks.get(patch.name, ()), *evidence]
        evidence += _revert_evidence(patch, tag, reverts)
        verdict, is_ancestor, reason = decide(
            patch.commits,
            not_in_tag,
            evidence,
            tag,
            pending=patch.pending,
            pending_pr=patch.upstream_pr,
        )
        witness = None
        if probe is not None and probe_full is not None:
            arm = probe.arms[patch.name]
            outcome, detail = combine(verdict, probe_full, arm)
            witness = ProbeWitness(arm, outcome, detail)
        results.append(
            PatchAbsorption(
                patch.name,
                patch.commits,
                verdict,
                is_ancestor,
                first[patch.name],
                tuple(evidence),
                reason,
                not_in_tag,
                witness,
                patch.upstream_pr,
            )
        )
        if progress:
            progress(1)
    return AbsorbedResult(tag, tag_commit, tuple(results), probe_full)


# -- the second witness: probe results ------------------------------------------------


def require_probe_covers(probe: ArmResults, fork: Fork, tag: str) -> GateVerdict:
    """The full series' verdict: probe results judge TAG only when they ran there, on
    this series, with the full series and one arm per patch."""
    if probe.full is None:
        raise FatalError(f"{probe.source}: missing key 'full'", "see docs/retirement.md")
    if probe.tag is not None and probe.tag != tag:
        raise FatalError(
            f"{probe.source}: the probe ran on '{probe.tag}', not on '{tag}'",
            f"run the probe on {tag}, or pass --tag {probe.tag}",
        )
    names = [p.name for p in fork.patches]
    for name in names:
        if name not in probe.arms:
            raise FatalError(
                f"{probe.source}: no arm for '{name}'",
                "a probe must run the series without each patch in turn",
            )
    for name in probe.arms:
        if name not in names:
            raise FatalError(
                f"{probe.source}: arm '{name}' is not in the series",
                f"series patches: {', '.join(names) or '(none)'}",
            )
    return probe.full


# -- for status ------------------------------------------------------------------------


# status previews the newest release with the whole absorbed engine only up to this
# many commits between the pin and it; beyond, ancestry alone and a note.
PREVIEW_MAX_COMMITS = 2000


@dataclass(frozen=True)
class ReleasePreview:
    """What the newest release tag would retire: the patches, or None and ``note``
    saying why that cannot be told yet."""

    tag: str
    tag_commit: str
    would_retire: tuple[str, ...] | None
    note: str | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "tag": self.tag,
            "tag_commit": self.tag_commit,
            "would_retire": None if self.would_retire is None else list(self.would_retire),
            "note": self.note,
        }


def newest_release_preview(fork: Fork, git: Git) -> ReleasePreview | None:
    """What the newest release tag would retire (for ``status``); None without releases.

    Never raises for missing knowledge: the reason goes into ``note`` instead, because
    status reports facts and must not fail on a commit that was not fetched yet.
    """
    config = fork.config
    releases = fork_releases(git, config)
    if not releases:
        return None
    newest = releases[-1]
    try:
        ahead = git.count_commits(newest.commit, config.pin_commit)
        if ahead > PREVIEW_MAX_COMMITS:
            # The verdicts read the range's history and diffs: too slow for one screen.
            require_commits(fork, git)
            commits = [c for p in fork.patches for c in p.commits]
            missing = git.not_ancestors(commits, newest.commit)
            mapped = [p for p in fork.patches if p.commits]
            inside = sum(1 for p in mapped if not missing.intersection(p.commits))
            return ReleasePreview(
                newest.name,
                newest.commit,
                None,
                f"{ahead} commits since the pin, more than status reads "
                f"({PREVIEW_MAX_COMMITS}); {inside} of {len(mapped)} mapped patches have "
                f"their commits in {newest.name}; `forktool absorbed --tag {newest.name}` "
                "gives the verdicts",
            )
        report = absorbed(fork, git, newest)
    except FatalError as exc:
        return ReleasePreview(newest.name, newest.commit, None, exc.message)
    return ReleasePreview(newest.name, newest.commit, tuple(p.patch for p in report.retirable()))
