"""Ancestry: which commits a tip contains, and which tips contain a commit, exactly as
``git merge-base --is-ancestor`` answers; the commit-graph that makes it cheap."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from forktool.errors import GitError
from forktool.git.remote import Remotes
from forktool.git.runner import note_missing_commit_graph

# Settling ancestry candidates (Git.ancestors): up to this many are asked one
# ``merge-base --is-ancestor`` each, more take one walk of the tip's history. Without
# a commit-graph one merge-base can walk as much as that whole walk.
_DIRECT_MAX = 2
_DIRECT_WITH_GRAPH = 48


# A history walk without a commit-graph that takes longer than this earns the notice.
SLOW_WALK_SECONDS = 1.0


def _descendants(commit: str, children: Mapping[str, Sequence[str]]) -> set[str]:
    """Every commit that reaches ``commit`` through the ``children`` links."""
    found: set[str] = set()
    stack = [commit]
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


class Ancestry(Remotes):
    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        """``git merge-base --is-ancestor ancestor descendant`` (see :meth:`ancestors`)."""
        return bool(self.ancestors([ancestor], descendant))

    def tags_containing(self, commit: str) -> set[str]:
        """The names of the tags whose commit has ``commit`` as an ancestor, as
        ``merge-base --is-ancestor`` answers for each: one ``git tag --contains``, a
        single walk for every tag (a question per tag costs a walk each).

        ``git tag`` and not ``for-each-ref``: the same exact answer, but ``git tag``
        walks with a cache shared by every tag (git's contains_tag_algo), where
        ``for-each-ref --contains`` walks again for each tag: on git.git's 1,008 tags
        with no commit-graph, 1.3 s against 22 s."""
        started = time.monotonic()
        out = self.out(
            ["tag", "--list", "--no-column", f"--contains={commit}", "--format=%(refname:strip=2)"],
            purpose=f"list the tags that contain {commit[:12]}",
        )
        if time.monotonic() - started > SLOW_WALK_SECONDS and not self.has_commit_graph():
            note_missing_commit_graph(self)  # thousands of tags: seconds without one
        return set(out.splitlines())

    def not_ancestors(self, commits: Iterable[str], tip: str) -> set[str]:
        """Those of ``commits`` that are NOT ancestors of ``tip``: the complement of
        :meth:`ancestors`, in the names the caller gave."""
        items = list(dict.fromkeys(commits))
        return set(items) - self.ancestors(items, tip)

    def ancestors(self, commits: Iterable[str], tip: str) -> set[str]:
        """Those of ``commits`` that are ancestors of ``tip`` (a commit is its own
        ancestor): for each, exactly what ``git merge-base --is-ancestor <commit> <tip>``
        answers, in the names the caller gave.

        Every commit must exist: one that is missing or is not a commit is an error
        (GitError), never an answer. Then, by construction:

        1. one walking ``rev-list --parents --stdin`` of the commits and ``^tip``. git
           hides a commit from that output only when it marked it reachable from
           ``tip``, and marks travel only from ``tip`` along parent links: a commit it
           does not print IS an ancestor. A printed commit that reaches ``tip`` through
           the printed parent links descends from it, so is NOT one (no cycles). Any
           other printed commit is only a candidate: with commit dates out of order git
           may stop walking ``tip``'s side before it reaches an ancestor.
        2. each candidate is settled exactly: ``merge-base --is-ancestor`` for a few
           (cheap with a commit-graph's generation numbers), else one full walk of
           ``tip``'s history (``rev-list tip``, no negative: nothing stops it early),
           a membership test.

        Never ``--no-walk`` with ``^tip``: that hides only what git happened to mark
        while reading its input, which is no ancestry test.
        """
        items = list(dict.fromkeys(commits))
        if not items:
            return set()
        ids = self._commit_ids([*items, f"{tip}^{{commit}}"], tip)
        tip_id = ids[f"{tip}^{{commit}}"]
        full = {ids[c] for c in items}
        stdin = "\n".join([*sorted(full), f"^{tip_id}"]) + "\n"
        listing = self.run(
            ["rev-list", "--parents", "--stdin"],
            purpose=f"check ancestry against {tip}",
            input=stdin.encode(),
        ).out
        printed: set[str] = set()
        children: dict[str, list[str]] = {}
        for line in listing.splitlines():
            commit, *parents = line.split()
            printed.add(commit)
            for parent in parents:
                children.setdefault(parent, []).append(commit)
        above = _descendants(tip_id, children)
        candidates = full.intersection(printed) - above
        yes = full - candidates - above
        if candidates:
            yes |= self._settle(sorted(candidates), tip_id, tip)
        return {c for c in items if ids[c] in yes}

    def _commit_ids(self, names: Sequence[str], tip: str) -> dict[str, str]:
        """name -> full commit id; a missing name or a non-commit is a GitError."""
        res = self.run(
            ["cat-file", "--batch-check=%(objectname) %(objecttype)"],
            purpose=f"check ancestry against {tip}",
            input=("\n".join(names) + "\n").encode(),
        )
        found: dict[str, str] = {}
        for name, line in zip(names, res.out.splitlines(), strict=True):
            parts = line.split()
            if len(parts) != 2 or parts[1] != "commit":
                what = "missing" if len(parts) != 2 or parts[1] == "missing" else parts[1]
                raise GitError(
                    f"check ancestry against {tip}",
                    res.argv,
                    1,
                    f"{name} is not a commit in this repository ({what})",
                )
            found[name] = parts[0]
        return found

    def _settle(self, candidates: Sequence[str], tip_id: str, tip: str) -> set[str]:
        """Those of ``candidates`` (full ids) that are ancestors of ``tip_id``, exactly."""
        graph = self.has_commit_graph()
        if len(candidates) <= (_DIRECT_WITH_GRAPH if graph else _DIRECT_MAX):
            return {c for c in candidates if self._merge_base_is_ancestor(c, tip_id)}
        started = time.monotonic()
        reachable = self.run(["rev-list", tip_id], purpose=f"read the history of {tip}").out.split()
        if not graph and time.monotonic() - started > SLOW_WALK_SECONDS:
            note_missing_commit_graph(self)
        return set(candidates).intersection(reachable)

    def _merge_base_is_ancestor(self, ancestor: str, descendant: str) -> bool:
        res = self.run(
            ["merge-base", "--is-ancestor", ancestor, descendant],
            purpose=f"check whether {ancestor[:12]} is in {descendant[:12]}",
            check=False,
        )
        if res.returncode not in (0, 1):
            raise GitError(f"check ancestry of {ancestor[:12]}", res.argv, res.returncode, res.err)
        return res.returncode == 0

    def tips_containing(self, commit: str, tips: Iterable[str]) -> set[str]:
        """Those of ``tips`` that contain ``commit`` (it is one of their ancestors, or
        them): for each tip, exactly what ``git merge-base --is-ancestor commit tip``
        answers. Every commit must exist.

        One ``rev-list --ancestry-path --stdin`` lists descendants of ``commit`` that
        git reached through parent links: a tip it lists contains it. A tip it does not
        list is only a candidate (with commit dates out of order git may stop early) and
        is settled exactly, as :meth:`ancestors` settles its candidates: ``merge-base
        --is-ancestor`` for a few, else one full walk of the candidates' history (no
        negative ref: nothing stops it early) and reachability over its parent links.
        """
        items = list(dict.fromkeys(tips))
        if not items:
            return set()
        stdin = "\n".join([*items, f"^{commit}"]) + "\n"
        res = self.run(
            ["rev-list", "--ancestry-path", "--stdin"],
            purpose=f"find what contains {commit[:12]}",
            input=stdin.encode(),
        )
        listed = set(res.out.split())
        found = {tip for tip in items if tip == commit or tip in listed}
        rest = [tip for tip in items if tip not in found]
        if not rest:
            return found
        limit = _DIRECT_WITH_GRAPH if self.has_commit_graph() else _DIRECT_MAX
        if len(rest) <= limit:
            return found | {t for t in rest if self._merge_base_is_ancestor(commit, t)}
        walk = self.run(
            ["rev-list", "--parents", "--stdin"],
            purpose=f"find what contains {commit[:12]}",
            input=("\n".join(rest) + "\n").encode(),
        ).out
        children: dict[str, list[str]] = {}
        for line in walk.splitlines():
            child, *parents = line.split()
            for parent in parents:
                children.setdefault(parent, []).append(child)
        return found | (_descendants(commit, children) & set(rest))

    def in_any(self, commits: Iterable[str], tips: Iterable[str]) -> set[str]:
        """Those of ``commits`` that at least one of ``tips`` contains: for each, whether
        ``git merge-base --is-ancestor commit tip`` holds for some tip. Every commit must
        exist. A few commits are settled by :meth:`tips_containing` each; more by ONE
        walk of the tips' whole history (no negative ref: nothing stops it early, so a
        commit it does not list is in no tip), whatever their number."""
        items = list(dict.fromkeys(commits))
        heads = list(dict.fromkeys(tips))
        if not items or not heads:
            return set()
        if len(items) <= _DIRECT_MAX:
            return {c for c in items if self.tips_containing(c, heads)}
        ids = self._commit_ids(items, "the release tags")
        started = time.monotonic()
        walk = self.run(
            ["rev-list", "--stdin"],
            purpose=f"read the history of {len(heads)} tips",
            input=("\n".join(heads) + "\n").encode(),
        ).out
        if time.monotonic() - started > SLOW_WALK_SECONDS and not self.has_commit_graph():
            note_missing_commit_graph(self)
        reachable = set(walk.split())
        return {c for c in items if ids[c] in reachable}

    def has_commit_graph(self) -> bool:
        """Whether git can use a commit-graph here (generation numbers, changed paths)."""
        if self._graph is None:
            paths = self.out(
                [
                    "rev-parse",
                    "--git-path",
                    "objects/info/commit-graph",
                    "--git-path",
                    "objects/info/commit-graphs/commit-graph-chain",
                ],
                purpose="look for a commit-graph",
            ).splitlines()
            setting = self.run(
                ["config", "--type=bool", "core.commitGraph"],
                purpose="read core.commitGraph",
                check=False,
            ).out.strip()
            here = [p if Path(p).is_absolute() else self.cwd / p for p in paths]
            self._graph = setting != "false" and any(Path(p).is_file() for p in here)
        return self._graph

    def write_commit_graph(self) -> None:
        """Write a commit-graph, with changed-path filters, for every reachable commit
        (changes .git: opt-in only)."""
        self.run(
            ["commit-graph", "write", "--reachable", "--changed-paths"],
            purpose="write a commit-graph",
        )

    def merge_base(self, one: str, other: str) -> str | None:
        res = self.run(["merge-base", one, other], purpose="find the branch point", check=False)
        if res.returncode not in (0, 1):
            raise GitError("find the branch point", res.argv, res.returncode, res.err)
        return res.out.strip() or None
