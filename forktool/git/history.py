"""History: ancestry, logs, patch-ids, the changes a commit makes."""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from forktool.errors import GitError
from forktool.git.remote import Remotes
from forktool.git.runner import note_missing_commit_graph, run
from forktool.model.revision import HEX40

_COMMIT_LINE = re.compile(rb"^commit [0-9a-f]{40}$", re.MULTILINE)


# Diff options for every ``git log -p`` whose output feeds ``git patch-id``: the
# config above already pins these, and the command line says them again so that the
# patch text cannot depend on anything but the commits (no external diff driver, no
# textconv filter, three lines of context).
PATCH_ID_DIFF_ARGS = (
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--no-renames",
    "-U3",
    "--inter-hunk-context=0",
    "--diff-algorithm=myers",
    "--src-prefix=a/",
    "--dst-prefix=b/",
    "--no-relative",
)


# Settling ancestry candidates (Git.ancestors): up to this many are asked one
# ``merge-base --is-ancestor`` each, more take one walk of the tip's history. Without
# a commit-graph one merge-base can walk as much as that whole walk.
_DIRECT_MAX = 2


_DIRECT_WITH_GRAPH = 48


# A history walk without a commit-graph that takes longer than this earns the notice.
SLOW_WALK_SECONDS = 1.0


@dataclass(frozen=True)
class LogEntry:
    """One commit as ``git log`` shows it."""

    commit: str
    parents: tuple[str, ...]
    author: str  # "Name <email>"
    date: str  # author date, ISO 8601
    message: str

    @property
    def subject(self) -> str:
        return self.message.split("\n", 1)[0].strip()


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


def _changed_files(out: bytes) -> list[tuple[str, frozenset[str]]]:
    """``log -z --name-only --format=%x01%H`` output -> [(commit, files)]."""
    found: list[tuple[str, set[str]]] = []
    for token in out.split(b"\0"):
        token = token.lstrip(b"\n")
        if token.startswith(b"\x01"):
            found.append((token[1:].decode(), set()))
        elif token and found:
            found[-1][1].add(token.decode("utf-8", "surrogateescape"))
    return [(c, frozenset(files)) for c, files in found]


def _literal_pattern(path: str) -> str:
    """``path`` as a gitignore-style pattern that matches only itself."""
    return "".join("\\" + ch if ch in "\\*?[]!# " else ch for ch in path)


class History(Remotes):
    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        """``git merge-base --is-ancestor ancestor descendant`` (see :meth:`ancestors`)."""
        return bool(self.ancestors([ancestor], descendant))

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

    def renames(self, old: str, new: str) -> dict[str, str]:
        """Each path of ``old`` that ``new`` has under another name (git's rename
        detection, 50% similarity): old path -> new path."""
        out = self.run(
            [
                "diff",
                "--no-ext-diff",
                "--no-textconv",
                "--find-renames",
                "--diff-filter=R",
                "--name-status",
                "-z",
                old,
                new,
                "--",
            ],
            purpose=f"find the files renamed between {old} and {new}",
        ).out
        fields = out.split("\0")
        found: dict[str, str] = {}
        for i in range(0, len(fields) - 2, 3):
            if fields[i].startswith("R"):
                found[fields[i + 1]] = fields[i + 2]
        return found

    def diff_name_status(self, old: str, new: str) -> list[tuple[str, str]]:
        """``(status letter, path)`` for every path that differs between two commits."""
        out = self.run(
            [
                "diff",
                "--no-ext-diff",
                "--no-textconv",
                "--no-renames",
                "--name-status",
                "-z",
                old,
                new,
                "--",
            ],
            purpose=f"compare {new} with {old}",
        ).out
        fields = out.split("\0")
        if fields and fields[-1] == "":
            fields.pop()
        return [(fields[i][:1], fields[i + 1]) for i in range(0, len(fields) - 1, 2)]

    def count_commits(self, include: str, exclude: str) -> int:
        """How many commits ``include`` has that ``exclude`` does not."""
        return int(
            self.out(
                ["rev-list", "--count", include, f"^{exclude}"],
                purpose=f"count the commits in {include} not in {exclude}",
            )
        )

    def log_messages(
        self,
        tip: str,
        exclude: Sequence[str] = (),
        *,
        grep: str | Sequence[str] | None = None,
        ignore_case: bool = False,
    ) -> list[tuple[str, str]]:
        """(commit, full message) for every commit in ``tip`` and not in ``exclude``.

        One ``git log`` call; ``grep`` (fixed strings) keeps only messages holding one
        of them (in any case with ``ignore_case``).
        """
        args = ["log", "-z", "--no-color", "--format=%H%n%B"]
        if grep is not None:
            args.append("--fixed-strings")
            args += [f"--grep={g}" for g in ([grep] if isinstance(grep, str) else grep)]
            if ignore_case:
                args.append("--regexp-ignore-case")
        res = self.run(
            [*args, tip, *(f"^{e}" for e in exclude), "--"], purpose=f"read the history of {tip}"
        )
        found = []
        for entry in res.out.split("\0"):
            commit, _, message = entry.strip("\n").partition("\n")
            if commit:
                found.append((commit, message))
        return found

    def log_patches(
        self, tip: str, exclude: Sequence[str] = (), paths: Sequence[str] | None = None
    ) -> bytes:
        """``git log -p`` of the non-merge commits in ``tip`` and not in ``exclude``,
        each introduced by a ``commit <id>`` line (the input ``git patch-id`` reads).

        With ``paths`` (relative to the top of the work tree), only commits touching
        them, and only their changes to them.
        """
        # Run from the top with plain literal pathspecs: ":(top)" magic would keep git
        # from using the commit-graph's changed-path filters.
        pathspecs = [f":(literal){p}" for p in paths] if paths is not None else []
        return run(
            [
                "log",
                "--no-merges",
                *PATCH_ID_DIFF_ARGS,
                "-p",
                "--format=commit %H",
                tip,
                *(f"^{e}" for e in exclude),
                "--",
                *pathspecs,
            ],
            cwd=self.toplevel(),
            purpose=f"read the changes in {tip}",
        ).stdout

    def commit_patches(
        self,
        commits: Sequence[str],
        *,
        reverse: bool = False,
        paths: Sequence[str] | None = None,
    ) -> bytes:
        """``git log -p`` of exactly ``commits`` (a merge against its first parent),
        each introduced by a ``commit <id>`` line; ``reverse``: each change inverted,
        as a revert of it would read. With ``paths`` (relative to the top of the work
        tree), only their changes to them: the text :meth:`log_patches` gives them.
        Each commit's diff is read once per :class:`Git` (full commit ids)."""
        if not commits:
            return b""
        if not all(HEX40.match(c) for c in commits):  # only full ids name their diff
            return self._read_patches(commits, reverse=reverse, paths=paths)
        commits = list(dict.fromkeys(commits))
        scope = tuple(paths) if paths is not None else None
        unread = [c for c in commits if (c, reverse, scope) not in self._diffs]
        if unread:
            data = self._read_patches(unread, reverse=reverse, paths=paths)
            starts = [m.start() for m in _COMMIT_LINE.finditer(data)]
            for at, end in zip(starts, [*starts[1:], len(data)], strict=True):
                commit = data[at + 7 : at + 47].decode()
                self._diffs[(commit, reverse, scope)] = data[at:end]
            for commit in unread:  # a commit git showed nothing for (pathspec) is empty
                self._diffs.setdefault((commit, reverse, scope), b"")
        return b"".join(self._diffs[(c, reverse, scope)] for c in commits)

    def _read_patches(
        self, commits: Sequence[str], *, reverse: bool, paths: Sequence[str] | None
    ) -> bytes:
        pathspecs = [f":(literal){p}" for p in paths] if paths is not None else []
        return run(
            [
                "log",
                "--no-walk=unsorted",
                "--stdin",
                "--diff-merges=first-parent",
                *PATCH_ID_DIFF_ARGS,
                # -R swaps the prefixes too: swap them first, so the inverse reads a/, b/.
                *(["-R", "--src-prefix=b/", "--dst-prefix=a/"] if reverse else []),
                "-p",
                "--format=commit %H",
                "--",
                *pathspecs,
            ],
            cwd=self.toplevel() if paths is not None else self.cwd,
            purpose="read the changes of the mapped commits",
            input=("\n".join(commits) + "\n").encode(),
        ).stdout

    def commit_names(self, commits: Sequence[str]) -> dict[str, frozenset[str]]:
        """Each commit -> every file its diff (a merge against its first parent) names,
        relative to the top: tree comparisons only. One ``git log``."""
        if not commits:
            return {}
        out = self.run(
            [
                "log",
                "-z",
                "--no-walk=unsorted",
                "--stdin",
                "--diff-merges=first-parent",
                "--no-renames",
                "--name-only",
                "--format=%x01%H",
            ],
            purpose="list the files of the mapped commits",
            input=("\n".join(commits) + "\n").encode(),
        ).stdout
        return dict(_changed_files(out))

    def log_changes(
        self, tip: str, exclude: Sequence[str] = ()
    ) -> list[tuple[str, frozenset[str]]]:
        """(commit, every file its diff names, relative to the top) for the non-merge
        commits of ``tip`` and not in ``exclude``. Tree comparisons only
        (``--name-only``), no file is read: the cheap first pass before any diff. Read
        once per :class:`Git` for each range."""
        key = (tip, tuple(exclude))
        if key in self._changes:
            return self._changes[key]
        out = self.run(
            [
                "log",
                "-z",
                "--no-merges",
                "--no-renames",
                "--name-only",
                "--format=%x01%H",
                tip,
                *(f"^{e}" for e in exclude),
                "--",
            ],
            purpose=f"list the files changed in {tip}",
        ).stdout
        found = _changed_files(out)
        self._changes[key] = found
        return found

    def patch_ids(self, patches: bytes) -> list[tuple[str, str]]:
        """(patch id, commit) for each patch in ``patches`` (``git patch-id --stable``)."""
        if not patches:
            return []
        out = self.run(["patch-id", "--stable"], purpose="compute patch ids", input=patches).out
        pairs = []
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 2:
                pairs.append((parts[0], parts[1]))
        return pairs

    def write_commit_graph(self) -> None:
        """Write a commit-graph, with changed-path filters, for every reachable commit
        (changes .git: opt-in only)."""
        self.run(
            ["commit-graph", "write", "--reachable", "--changed-paths"],
            purpose="write a commit-graph",
        )

    def commits_changing(self, text: str, path: str) -> list[tuple[str, tuple[str, ...]]]:
        """Newest first: (commit, parents) for each commit in HEAD's history that changed
        how often ``text`` occurs in ``path`` (``git log -S``)."""
        out = self.out(
            ["log", "--no-color", "--format=%H %P", f"-S{text}", "HEAD", "--", path],
            purpose=f"search the history of {path}",
        )
        found = []
        for line in out.splitlines():
            commit, *parents = line.split()
            found.append((commit, tuple(parents)))
        return found

    def parents_graph(self, tips: Sequence[str], exclude: Sequence[str] = ()) -> list[list[str]]:
        """``[commit, parent...]`` for every commit in ``tips`` and not in ``exclude``,
        children before parents (``rev-list --topo-order --parents``; one call)."""
        if not tips:
            return []
        stdin = "\n".join([*tips, *(f"^{e}" for e in exclude)]) + "\n"
        res = self.run(
            ["rev-list", "--topo-order", "--parents", "--stdin"],
            purpose="read the history of the release tags",
            input=stdin.encode(),
        )
        return [line.split() for line in res.out.splitlines() if line]

    def first_parent_log(self, tip: str, exclude: Sequence[str] = ()) -> list[LogEntry]:
        """Newest first: every commit on ``tip``'s first-parent line and not in
        ``exclude``, with parents, author, date and full message. One ``git log``."""
        args = ["log", "--first-parent", tip, *(f"^{e}" for e in exclude)]
        return self._log_entries(args, None, purpose=f"read the history of {tip}")

    def log_entries(self, commits: Sequence[str]) -> list[LogEntry]:
        """Exactly ``commits``, in that order, as :meth:`first_parent_log` shows them."""
        stdin = ("\n".join(commits) + "\n").encode()
        return self._log_entries(
            ["log", "--no-walk=unsorted", "--stdin"], stdin, purpose="read commits"
        )

    def _log_entries(self, args: list[str], stdin: bytes | None, *, purpose: str) -> list[LogEntry]:
        fmt = "--format=%H%x1f%P%x1f%an <%ae>%x1f%aI%x1f%B%x1e"
        res = self.run([*args, "--no-color", fmt, "--"], purpose=purpose, input=stdin)
        entries = []
        for record in res.out.split("\x1e"):
            fields = record.lstrip("\n").split("\x1f", 4)
            if len(fields) == 5:
                commit, parents, author, date, message = fields
                entries.append(LogEntry(commit, tuple(parents.split()), author, date, message))
        return entries

    def first_parent_touching(
        self, tip: str, start: str, paths: Sequence[str], *, top: Path | None = None
    ) -> list[str]:
        """Oldest first: the commits on ``tip``'s first-parent line after ``start`` whose
        change from their first parent touches ``paths`` (relative to ``top``, the top of
        the work tree; one ``rev-list``)."""
        return run(
            [
                "rev-list",
                "--first-parent",
                "--reverse",
                tip,
                f"^{start}",
                "--",
                *(f":(literal){p}" for p in paths),
            ],
            cwd=top or self.toplevel(),
            purpose=f"list the commits touching the patch's files up to {tip[:12]}",
        ).out.split()

    def merge_base(self, one: str, other: str) -> str | None:
        res = self.run(["merge-base", one, other], purpose="find the branch point", check=False)
        if res.returncode not in (0, 1):
            raise GitError("find the branch point", res.argv, res.returncode, res.err)
        return res.out.strip() or None

    def commit_date_raw(self, rev: str) -> str:
        """``rev``'s committer date as git stores it (``<seconds> <zone>``)."""
        return self.out(
            ["log", "-1", "--format=%cd", "--date=raw", rev], purpose=f"read the date of {rev}"
        )

    def patch_id(self, data: bytes) -> str | None:
        """``git patch-id --stable`` of one patch file; None when git reads no diff in it."""
        res = self.run(
            ["patch-id", "--stable"], purpose="compute a patch id", input=data, check=False
        )
        words = res.out.split()
        return words[0] if res.ok and words else None

    def commits_with_parents(self, base: str, tip: str) -> list[list[str]]:
        """Oldest first, ``[commit, parent...]`` for each commit of ``base..tip``."""
        listing = self.out(
            ["rev-list", "--reverse", "--topo-order", "--parents", f"{base}..{tip}"],
            purpose=f"list the commits between {base[:12]} and {tip[:12]}",
        )
        return [line.split() for line in listing.splitlines() if line]

    def subjects_and_trailers(
        self, commits: Sequence[str]
    ) -> list[tuple[str, str, list[tuple[str, str]]]]:
        """``(commit, subject, [(trailer key, value)...])`` for exactly ``commits``, in order."""
        res = self.run(
            [
                "log",
                "--no-walk=unsorted",
                "--stdin",
                "-z",
                "--format=%H%x1f%s%x1f%(trailers:unfold,separator=%x1e)",
            ],
            purpose="read the commit messages",
            input=("\n".join(commits) + "\n").encode(),
        )
        found = []
        for record in res.out.split("\0"):
            if not record.strip():
                continue
            commit, subject, trailer_text = [*record.lstrip("\n").split("\x1f"), "", ""][:3]
            trailers = []
            for item in trailer_text.split("\x1e"):
                key, sep, value = item.partition(":")
                if sep:
                    trailers.append((key.strip(), value.strip()))
            found.append((commit, subject, trailers))
        return found

    def raw_changes(self, parent: str, commit: str) -> list[tuple[str, str, str, tuple[str, ...]]]:
        """``(old mode, new mode, status, paths)`` per file ``commit`` changes from
        ``parent``, renames detected (a rename or copy has two paths)."""
        out = self.run(
            ["diff-tree", "-r", "-z", "-M", "--raw", "--no-commit-id", parent, commit],
            purpose=f"list the files {commit[:12]} changes",
        ).out
        fields = out.split("\0")
        changes = []
        index = 0
        while index < len(fields) and fields[index].startswith(":"):
            old_mode, new_mode, _old, _new, status = fields[index][1:].split(" ")
            count = 2 if status[:1] in ("R", "C") else 1
            changes.append(
                (old_mode, new_mode, status, tuple(fields[index + 1 : index + 1 + count]))
            )
            index += 1 + count
        return changes

    def binary_paths(self, parent: str, commit: str) -> list[str]:
        """The binary files ``commit`` changes from ``parent``."""
        out = self.run(
            [
                "diff-tree",
                "-r",
                "-z",
                "--no-renames",
                "--numstat",
                "--no-commit-id",
                parent,
                commit,
            ],
            purpose=f"find binary files in {commit[:12]}",
        ).out
        found = []
        for record in out.split("\0"):
            added, _, rest = record.partition("\t")
            deleted, _, path = rest.partition("\t")
            if added == "-" and deleted == "-" and path:
                found.append(path)
        return found
