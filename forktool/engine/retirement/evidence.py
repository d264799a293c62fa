"""The witnesses ``absorbed`` weighs besides ancestry, each gathered in bulk over the
tag's history since the pin, and only where it can change a verdict: for a patch the
tag lacks, ``(cherry picked from commit X)`` trailers (one ``git log``, also read for
picks of upstream merges) and identical changes (one ``git patch-id --stable`` over the
patch files, one over ``git log -p``); for a patch the tag contains, reverts of its
commits (:mod:`forktool.engine.retirement.reverts`); for every patch, how it applies on
the tag (:mod:`forktool.engine.retirement.apply_states`). What they mean for a verdict
is :func:`forktool.engine.retirement.absorbed.decide`'s to say."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from forktool.engine.apply.attempt import MOVED_PRESENT
from forktool.engine.retirement.absorption import Evidence
from forktool.engine.retirement.apply_states import ApplyState, apply_states
from forktool.engine.retirement.knowledge import first_release_map
from forktool.engine.retirement.reverts import (
    REVERT_GREP,
    Need,
    Revert,
    find_reverts,
    pathspec_dirs,
    range_patch_ids,
)
from forktool.engine.upstream.fetch import upstream_project
from forktool.engine.upstream.resolve import claims_pr, merged_prs, parse_pr
from forktool.fork import Fork, Patch
from forktool.git import Git, LogEntry, short
from forktool.model.patchfile import PatchFile, touched_paths
from forktool.model.revision import Release

_CHERRY = re.compile(r"\(cherry picked from commit ([0-9a-f]{40})\)")
CHERRY_GREP = "cherry picked from commit "
WITNESS_WORKERS = 4


@dataclass(frozen=True)
class Witnesses:
    """Everything ``absorbed`` weighs, for the whole series against one tag."""

    missing: set[str]  # mapped commits that are not ancestors of the tag
    first: dict[str, str | None]  # patch -> first release ({} when not sought)
    picks: dict[str, list[tuple[str, str]]]
    merged_picks: dict[str, list[Evidence]]
    origins: dict[str, list[str]]  # mapped commit -> what it was picked from, in the tag
    same: dict[str, list[str]]
    states: dict[str, ApplyState]
    reverts: dict[str, list[Revert]]

    def not_in_tag(self, patch: Patch) -> tuple[str, ...]:
        return tuple(c for c in patch.commits if c in self.missing)

    def evidence(self, patch: Patch, tag: str) -> list[Evidence]:
        """Every witness on ``patch``, in the order the report shows them."""
        ancestor = bool(patch.commits) and not self.not_in_tag(patch)
        found = patch_evidence(patch, tag, ancestor, self.picks, self.same, self.states[patch.name])
        return [
            *self.merged_picks.get(patch.name, ()),
            *_picked_from(patch, tag, self.origins),
            *found,
            *revert_evidence(patch, tag, self.reverts),
        ]


def gather_witnesses(
    fork: Fork, git: Git, tag: str, tag_commit: str, releases: Sequence[Release] | None
) -> Witnesses:
    """Ancestry of every mapped commit and the witnesses, side by side (they are
    independent read-only git runs); first releases too when ``releases`` are given."""
    patches = list(fork.patches)
    commits = [c for p in patches for c in p.commits]
    since = fork.config.pin_commit
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
        origins = picked_origins(git, sorted(missing), tag_commit)
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
            messages=[(c, m) for c, m in messages if REVERT_GREP in m.lower()],
        )
        first = first_f.result() if first_f else {}
        same = same_f.result()
    return Witnesses(missing, first, picks, merged_picks, origins, same, states, reverts)


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


def picked_origins(git: Git, commits: Sequence[str], tip: str) -> dict[str, list[str]]:
    """Commit -> the commits it says it was cherry-picked from (its own ``(cherry picked
    from commit Y)`` lines) that ``tip`` contains: a patch mapped to a release branch's
    backport meets the original on the next main-line release (libarchive's patch/3.7
    91e81431, picked from master's 42565b88, which v3.8.0 holds). An origin that is not
    a commit here (a mirror of the stable repository only) is no witness. Two processes
    for all of them, and none when no commit names an origin."""
    if not commits:
        return {}
    said = {
        commit: [o for o in dict.fromkeys(_CHERRY.findall(message)) if o != commit]
        for commit, message in git.commit_messages(commits).items()
    }
    named = {o for origins in said.values() for o in origins}
    if not named:
        return {}
    here = [o for o, kind in git.object_types(sorted(named)).items() if kind == "commit"]
    held = set(here) - git.not_ancestors(here, tip)
    return {
        c: [o for o in origins if o in held] for c, origins in said.items() if held & set(origins)
    }


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
    alone), whether or not another patch maps M itself. Only patches whose commits
    ``tag`` lacks are judged (``missing``).
    """
    undecided = [p for p in patches if missing.intersection(p.commits)]
    picked: dict[str, list[tuple[str, str]]] = {}
    wanted = {c for p in undecided for c in p.commits}
    for commit, message in messages:
        for origin in _CHERRY.findall(message):  # a merge another patch maps counts too
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
            if merge.commit in patch.commits:
                continue  # a pick of the patch's own commit: cherry_picks says it
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
    """What a commit's diff must name to share the patch's patch-id (reverts.Need),
    compared within the directories the patch touches."""
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
    dirs = pathspec_dirs(touched_paths(parsed))
    return Need(files, named, tuple(dirs) if dirs is not None else None)


# The lines of a file diff's header that say what the diff is: all git patch-id is
# given besides the hunks. Anything else a patch file carries between its diffs (the
# next mail's ``From <sha>`` line in a file of several mails, a ``Submodule x a..b:``
# line of ``git diff --submodule=log``) would start a commit of its own there.
_DIFF_HEADER = re.compile(
    r"(diff --git |--- |\+\+\+ |index |old mode |new mode |deleted file mode |new file mode "
    r"|similarity index |dissimilarity index |rename from |rename to |copy from |copy to "
    r"|Binary files )"
)


def _diff_bytes(parsed: PatchFile) -> bytes:
    lines: list[str] = []
    for diff in parsed.files:
        lines += [line for line in diff.header_lines if _DIFF_HEADER.match(line)]
        for hunk in diff.hunks:
            lines.append(hunk.header)
            lines += hunk.lines
    return "".join(line + "\n" for line in lines).encode("utf-8", "surrogateescape")


def same_changes(git: Git, patches: Sequence[Patch], tip: str, since: str) -> dict[str, list[str]]:
    """Patch name -> commits in ``tip`` (since ``since``) with the same stable patch-id.

    Two kinds of ``git patch-id --stable`` run: one over every patch file (each
    introduced by a placeholder id), and one over the diffs of the range's commits
    limited to the directories a patch touches, once per such set of directories (so a
    commit matches when its change there is the patch's change, even if it also changed
    files elsewhere, and whatever other patches the series holds); only commits
    touching every file of the patch are read (:func:`range_patch_ids`).
    """
    if not patches:
        return {}
    # Placeholders from 1: git names what it reads before any commit line all zeros.
    placeholders = {f"{index:040x}": p.name for index, p in enumerate(patches, start=1)}
    stream = b"".join(
        f"commit {placeholder}\n".encode() + _diff_bytes(patches[index].parsed)
        for index, placeholder in enumerate(placeholders)
    )
    own = {
        placeholders[placeholder]: pid
        for pid, placeholder in git.patch_ids(stream)
        if placeholder in placeholders
    }
    needs = {p.name: _need(p.parsed) for p in patches}
    candidates = range_patch_ids(git, tip, [since], needs.values())
    found: dict[str, list[str]] = {}
    for patch in patches:
        for patch_id, commit in candidates.get(needs[patch.name], ()):
            if patch_id == own.get(patch.name):
                found.setdefault(patch.name, []).append(commit)
    return found


def patch_evidence(
    patch: Patch,
    tag: str,
    ancestor: bool,
    picks: Mapping[str, list[tuple[str, str]]],
    same: Mapping[str, list[str]],
    state: ApplyState,
) -> list[Evidence]:
    """The patch's evidence from cherry-picks of its commits, identical changes, and how
    it applies on ``tag`` (``ancestor``: whether ancestry says the tag has it)."""
    return [
        *_picked(patch, tag, picks),
        *_copied(patch, tag, same),
        *_applies(tag, ancestor, state),
    ]


def _picked(patch: Patch, tag: str, picks: Mapping[str, list[tuple[str, str]]]) -> list[Evidence]:
    return [
        Evidence(
            "cherry-pick",
            pick,
            f"{short(pick)} '{subject}' in {tag} was cherry-picked from {short(commit)}",
        )
        for commit in patch.commits
        for pick, subject in picks.get(commit, ())
    ]


def _picked_from(patch: Patch, tag: str, origins: Mapping[str, list[str]]) -> list[Evidence]:
    return [
        Evidence(
            "cherry-pick",
            origin,
            f"{short(commit)} was cherry-picked from {short(origin)}, which {tag} contains",
        )
        for commit in patch.commits
        for origin in origins.get(commit, ())
    ]


def _copied(patch: Patch, tag: str, same: Mapping[str, list[str]]) -> list[Evidence]:
    return [
        Evidence(
            "patch-id",
            commit,
            f"{short(commit)} in {tag} makes the same change (same patch-id --stable)",
        )
        for commit in same.get(patch.name, ())
        if commit not in patch.commits
    ]


def _applies(tag: str, ancestor: bool, state: ApplyState) -> list[Evidence]:
    """What the patch's apply on ``tag`` says: present (it reverse-applies), absent (it
    still applies forward, wholly or in most hunks), moved, or no longer applying."""
    found: list[Evidence] = []
    if state.reverse:
        found.append(
            Evidence("content-present", None, f"the patch reverse-applies exactly on {tag}")
        )
    found += _still_applies(tag, ancestor, state)
    if not state.forward and not state.reverse and not state.forward_shifted:
        detail = state.message
        if state.reverse_shifted:
            detail += f"; {MOVED_PRESENT}"
        found.append(Evidence("no-longer-applies", None, detail))
    return found


def _still_applies(tag: str, ancestor: bool, state: ApplyState) -> list[Evidence]:
    """A forward apply: an objection to ancestry where the tag has the commits, offset
    drift where it does not."""
    found: list[Evidence] = []
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
    return found


def revert_evidence(patch: Patch, tag: str, reverts: Mapping[str, list[Revert]]) -> list[Evidence]:
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
