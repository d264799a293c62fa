"""The changes commits make: their diffs as ``git patch-id`` reads them, the files they
name, renames, modes and binary files."""

from __future__ import annotations

import re
from collections.abc import Sequence

from forktool.git.history import History
from forktool.git.runner import run
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


class Changes(History):
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

    def patch_id(self, data: bytes) -> str | None:
        """``git patch-id --stable`` of one patch file; None when git reads no diff in it."""
        res = self.run(
            ["patch-id", "--stable"], purpose="compute a patch id", input=data, check=False
        )
        words = res.out.split()
        return words[0] if res.ok and words else None

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
