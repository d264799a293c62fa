"""The first break: for a patch that applied exactly at the start (the pin, or its branch
point with the target when the pin is on a release branch) but not on the target, the
first commit on the target's first-parent line after which it stops applying exactly,
found by bisection over only the commits touching its files."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from forktool.config import Config
from forktool.engine.apply.attempt import try_patch
from forktool.engine.apply.verdict import Attempt, is_exact
from forktool.engine.upstream.cumulative import apply_prefix
from forktool.engine.upstream.resolve import merged_prs, pattern_prs
from forktool.engine.upstream.targets import Entry, Target
from forktool.fork import Patch
from forktool.git import Git, TempIndex
from forktool.model.patchfile import touched_paths


@dataclass(frozen=True)
class FirstBreak:
    commit: str
    subject: str
    author: str
    date: str
    pr: str | None
    checks: int  # git apply checks the bisection ran
    touching: int  # commits touching the patch's files between the start and the target

    def to_json(self) -> dict[str, object]:
        return {
            "commit": self.commit,
            "subject": self.subject,
            "author": self.author,
            "date": self.date,
            "pr": self.pr,
            "checks": self.checks,
            "touching": self.touching,
        }


class Prober:
    """Does a patch (after the earlier patches that touch its files) apply exactly on a
    commit? Each answer is one ``git apply --check --cached`` in a temporary index, and
    is remembered across targets."""

    def __init__(self, git: Git) -> None:
        self.git = git
        self.top = git.toplevel()
        self.known: dict[tuple[str, str], bool] = {}

    def exact(
        self,
        index: TempIndex,
        commit: str,
        before: Callable[[str], Sequence[Patch]],
        patch: Patch,
        overlay: Sequence[Entry] = (),
    ) -> tuple[bool, int]:
        """(applies exactly, checks run: 0 when remembered); ``before``: the patches
        that go first on a commit (what they are depends on the commit alone)."""
        key = (commit, patch.name)
        if key in self.known:
            return self.known[key], 0
        ok, _ = apply_prefix(index, commit, before(commit), overlay)
        attempt = try_patch(index, patch, check=True) if ok else Attempt(ok=False)
        exact = ok and is_exact(attempt)
        self.known[key] = exact
        return exact, 1


def _related(patches: Sequence[Patch], patch: Patch) -> list[Patch]:
    """The earlier patches of ``patches`` that touch a file ``patch`` touches."""
    mine = set(touched_paths(patch.parsed))
    before = patches[: patches.index(patch)]
    return [p for p in before if mine & set(touched_paths(p.parsed))]


def find_first_break(
    git: Git,
    prober: Prober,
    start: str,
    target: Target,
    series: Sequence[Patch],
    patch: Patch,
) -> tuple[str, int, int] | None:
    """(commit, checks, commits touching) of the first commit after which ``patch`` stops
    applying exactly, or None when it did not apply exactly at ``start`` either.

    On each commit the earlier patches of ``series`` that touch its files go first, but
    for those whose mapped commits are all ancestors of that commit (retirement's own
    rule): so a patch built on one the target retires still applies at the start, and
    what goes first depends on the commit alone (the prober's answers hold across
    targets).

    At most ceil(log2(n)) + 1 checks for n commits touching the files: one at the
    start, then a bisection (the target itself is known not to apply).
    """
    related = _related(series, patch)
    paths = sorted({path for p in (*related, patch) for path in touched_paths(p.parsed)})
    commits = git.first_parent_touching(target.commit, start, paths, top=prober.top)
    if not commits:
        return None
    held = [p for p in related if p.commits]

    def before(commit: str) -> list[Patch]:
        if not held:
            return related
        there = git.ancestors({c for p in held for c in p.commits}, commit)
        absorbed = {p.name for p in held if set(p.commits) <= there}
        return [p for p in related if p.name not in absorbed]

    with git.temp_index() as index:
        good_at_start, checks = prober.exact(index, start, before, patch, target.overlay)
        if not good_at_start:
            return None
        good, bad = -1, len(commits) - 1
        while bad - good > 1:
            mid = (good + bad) // 2
            exact, ran = prober.exact(index, commits[mid], before, patch, target.overlay)
            checks += ran
            if exact:
                good = mid
            else:
                bad = mid
    assert checks <= math.ceil(math.log2(len(commits))) + 2
    return commits[bad], checks, len(commits)


def start_point(git: Git, pin_commit: str, target: Target) -> str | None:
    """Where the first-break search starts: the pin, or its branch point with the target
    when the pin is on a release branch the target does not contain (the merge-base is
    the pin itself when the target contains it)."""
    return git.merge_base(pin_commit, target.commit)


def describe_breaks(
    git: Git, config: Config, found: dict[str, tuple[str, int, int]]
) -> dict[str, FirstBreak]:
    """The first-break commits' subjects, authors, dates and PRs: one ``git log``."""
    commits = sorted({commit for commit, _, _ in found.values()})
    if not commits:
        return {}
    entries = {e.commit: e for e in git.log_entries(commits)}
    hits = pattern_prs(config, list(entries.values()))
    described = {}
    for name, (commit, checks, touching) in found.items():
        entry = entries[commit]
        prs = merged_prs(entry, hits)
        pr = next(iter(prs), None)
        described[name] = FirstBreak(
            commit,
            entry.subject,
            entry.author,
            entry.date,
            f"#{pr}" if pr else None,
            checks,
            touching,
        )
    return described
