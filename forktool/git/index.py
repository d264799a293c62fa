"""Temporary indexes: a series applied and reverted without touching a checkout."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from forktool.errors import GitError
from forktool.git.changes import Changes
from forktool.git.objects import LS_TREE_SIZES, Objects, blob_sizes
from forktool.git.runner import GitResult, Started, run, scratch_dir, start
from forktool.git.tree_cache import TreeCache, is_object_id
from forktool.model.text import line_count

# but no diff is refused before anything runs: forktool.engine.apply.attempt.precheck).
APPLY_CACHED_ARGS = ("apply", "--cached", "-v", "--whitespace=nowarn", "--allow-empty", "-p1")


def _loaded() -> None:
    """Nothing to wait for: the index was loaded from the tree cache."""


def git_apply_args(
    files: Sequence[Path],
    *,
    reverse: bool = False,
    check: bool = False,
    context: int | None = None,
    unanchored: bool = False,
) -> list[str]:
    """``git apply --cached -v -p1`` of ``files`` onto an index (``-R``, ``--check``,
    ``-C<context>`` as asked; ``unanchored``: ``--unidiff-zero``, so no hunk is held to
    the top or the end of its file, every context line still matching): the one
    strict apply command line."""
    args = list(APPLY_CACHED_ARGS)
    if reverse:
        args.append("-R")
    if check:
        args.append("--check")
    if context is not None:
        args.append(f"-C{context}")
    if unanchored:
        args.append("--unidiff-zero")
    return [*args, *(str(f) for f in files)]


class TreeChange(NamedTuple):
    """One path two trees differ in (``git diff-tree -r --raw``): its modes and blobs on
    each side (``000000`` and the null id for a side without it)."""

    path: str
    old_mode: str
    new_mode: str
    old_blob: str
    new_blob: str

    @property
    def same_content(self) -> bool:
        """Only the mode differs."""
        return self.old_blob == self.new_blob

    @property
    def left_behind(self) -> bool:
        """The old tree lacks the path: the new one has it left over."""
        return set(self.old_mode) == {"0"}

    def describe(self) -> str:
        if set(self.new_mode) == {"0"}:
            return f"{self.path} is missing"
        if self.left_behind:
            return f"{self.path} is left behind"
        if self.same_content:
            return f"{self.path} comes back with mode {self.new_mode}, not {self.old_mode}"
        return f"{self.path} comes back with other content"


class MergeTreeResult(NamedTuple):
    """What ``git merge-tree --write-tree`` said: clean or not, the tree it wrote (with
    conflict markers when not clean), the conflicted paths and git's messages."""

    clean: bool
    tree: str
    conflicted: tuple[str, ...]
    messages: str


class TempIndex(NamedTuple):
    """A throwaway index file; git commands given ``env`` read and write it."""

    git: Objects
    path: Path
    env: dict[str, str]

    def run(self, args: Sequence[str], *, purpose: str, **kw: object) -> GitResult:
        """``args`` on this index, run from the work tree's top level: every path in an
        index is from there, and ``git apply`` skips every path outside the directory it
        runs in (a fork whose forktool.yaml sits in a subdirectory would pass them all)."""
        return run(args, cwd=self.git.toplevel(), purpose=purpose, env=self.env, **kw)  # type: ignore[arg-type]

    def start(self, args: Sequence[str], *, purpose: str) -> Started:
        """Start ``args`` on this index in the background (see :class:`Started`), from
        the work tree's top level (:meth:`run`)."""
        return start(args, cwd=self.git.toplevel(), purpose=purpose, env=self.env)

    def read_tree(self, treeish: str, *, cache: bool = False) -> None:
        """Load ``treeish`` into this index (``cache``: see :meth:`loading`)."""
        with self.loading(treeish, cache=cache) as loaded:
            loaded()

    @contextmanager
    def loading(self, treeish: str, *, cache: bool = False) -> Iterator[Callable[[], None]]:
        """``treeish`` loading into this index in the background; yields the function
        that waits until the index holds it. Leaving the block early stops git.

        ``cache``, for a release's tree that runs load again and again (the pin, a
        forecast's targets): an object id (a commit or a tree) comes from the tree
        cache when a run kept it there, and is kept there once read
        (:mod:`forktool.git.tree_cache`)."""
        store = self._cache(treeish) if cache else None
        if store is not None and store.index(treeish, self.path):
            yield _loaded
            return
        with self.start(
            ["read-tree", treeish], purpose=f"load {treeish} into a temporary index"
        ) as started:
            done = False

            def loaded() -> None:
                nonlocal done
                if not done:
                    started.wait()
                    done = True
                    if store is not None:
                        store.keep_index(treeish, self.path)

            yield loaded

    @contextmanager
    def listing_sizes(self, treeish: str) -> Iterator[Callable[[], dict[str, int]]]:
        """The size of every blob in ``treeish`` (``git ls-tree -r -l``), listed in the
        background: yields the function that waits for them. From the tree cache, as
        :meth:`loading` with ``cache`` does (only a base tree is listed)."""
        cache = self._cache(treeish)
        kept = cache.sizes(treeish) if cache is not None else None
        if kept is not None:
            sizes = blob_sizes(kept)
            yield lambda: sizes
            return
        with self.start(
            [*LS_TREE_SIZES, treeish], purpose="weigh the files of the base tree"
        ) as listing:

            def listed() -> dict[str, int]:
                nonlocal kept
                if kept is None:
                    kept = listing.wait().out
                    if cache is not None:
                        cache.keep_sizes(treeish, kept)
                return blob_sizes(kept)

            yield listed

    def _cache(self, treeish: str) -> TreeCache | None:
        """The tree cache, when ``treeish`` is an object id (whose tree never changes)."""
        if not is_object_id(treeish):
            return None
        return TreeCache.of(self.git.objects_dir())

    def write_tree(self) -> str:
        return self.run(["write-tree"], purpose="write the temporary index as a tree").out.strip()

    def staged(self, path: str) -> bytes | None:
        """The bytes this index holds for ``path``; None when it holds none."""
        res = self.run(["cat-file", "blob", f":{path}"], purpose=f"read {path}", check=False)
        return res.stdout if res.ok else None

    def line_counts(self, tree: str, paths: Sequence[str]) -> dict[str, int]:
        """How many lines each of ``paths`` has in ``tree`` (a last line without its
        newline counted; a path the tree lacks, or that is no file, left out). One
        ``git cat-file --batch`` for all of them."""
        names = {f"{tree}:{path}": path for path in paths}
        blobs = self.blobs(list(names), purpose="count the lines of files in the base tree")
        return {names[name]: line_count(data) for name, data in blobs.items()}

    def blobs(self, names: Sequence[str], *, purpose: str) -> dict[str, bytes]:
        """The bytes of each blob ``names`` name (``TREE:PATH``, ``:PATH`` for this
        index, an id); a name that names nothing, or no blob, left out. One
        ``git cat-file --batch`` for all of them."""
        wanted = [n for n in dict.fromkeys(names) if "\n" not in n]  # one name a line
        if not wanted:
            return {}
        res = self.run(
            ["cat-file", "--batch"],
            purpose=purpose,
            input="".join(f"{name}\n" for name in wanted).encode(),
        )
        data, at, found = res.stdout, 0, {}
        for name in wanted:
            end = data.index(b"\n", at)
            head = data[at:end].split()
            at = end + 1
            if len(head) != 3 or not head[2].isdigit():
                continue  # "<name> missing" (or ambiguous): nothing follows
            size = int(head[2])
            if head[1] == b"blob":
                found[name] = data[at : at + size]
            at += size + 1
        return found

    def staged_entries(self, paths: Sequence[str]) -> dict[str, tuple[str, str]]:
        """(mode, blob id) of each of ``paths`` this index holds at stage 0 (a path it
        holds none for left out; each path taken literally, never as a pattern)."""
        if not paths:
            return {}
        res = self.run(
            ["ls-files", "--stage", "-z", "--", *(f":(literal){p}" for p in paths)],
            purpose="list files in the temporary index",
        )
        entries = {}
        for record in res.stdout.split(b"\0"):
            meta, _, name = record.partition(b"\t")
            parts = meta.decode().split(" ")
            if name and len(parts) == 3 and parts[2] == "0":
                entries[name.decode("utf-8", "surrogateescape")] = (parts[0], parts[1])
        return entries

    def tree_changes(self, old: str, new: str) -> list[TreeChange]:
        """Every path trees ``old`` and ``new`` differ in (either may live in this
        index's own object directory), renames not looked for."""
        out = self.run(
            ["diff-tree", "-r", "-z", "--raw", "--no-renames", old, new],
            purpose="compare the reverted tree with the base tree",
        ).out
        fields = out.split("\0")
        changes = []
        for meta, path in zip(fields[0::2], fields[1::2], strict=False):
            parts = meta.lstrip(":").split(" ")
            if len(parts) >= 4:
                changes.append(TreeChange(path, parts[0], parts[1], parts[2], parts[3]))
        return changes

    def tree_ids(self, commits: Sequence[str]) -> list[str]:
        """The tree each of ``commits`` records (commits this index's objects hold
        included), in one ``rev-parse``."""
        if not commits:
            return []
        out = self.run(
            ["rev-parse", *(f"{c}^{{tree}}" for c in commits)], purpose="read commit trees"
        ).out
        return out.split()

    def twin(self, name: str) -> TempIndex:
        """A second index beside this one, starting as a copy of it (no git call), with
        the same object directory; it goes when this one's directory does. Two git
        processes may then work side by side, one on each."""
        path = self.path.with_name(name)
        if path.exists() or path == self.path:
            raise ValueError(f"index {name} exists already")
        path.write_bytes(self.path.read_bytes())
        return TempIndex(self.git, path, {**self.env, "GIT_INDEX_FILE": str(path)})

    def unlock(self) -> None:
        """Remove the lock file a git process stopped while writing this index left."""
        self.path.with_name(self.path.name + ".lock").unlink(missing_ok=True)

    def snapshot(self) -> Callable[[], None]:
        """A way back to this index as it is now (its file's bytes, restored on call)."""
        saved = self.path.read_bytes()

        def restore() -> None:
            self.path.write_bytes(saved)

        return restore

    def add_all(self, *, purpose: str = "stage the changes") -> None:
        """Stage every change of the work tree (``git add --all``) into this index."""
        self.run(["add", "--all"], purpose=purpose)

    def changed_names(self, base: str) -> list[str]:
        """The paths this index changes from ``base`` (no rename detection)."""
        out = self.run(
            ["diff", "--cached", "--name-only", "-z", "--no-renames", base],
            purpose="list the resolved files",
        ).out
        return [name for name in out.split("\0") if name]

    def add_entry(self, mode: str, oid: str, path: str) -> None:
        """Put the blob ``oid`` at ``path`` with ``mode`` (``update-index --cacheinfo``)."""
        self.run(
            ["update-index", "--add", "--cacheinfo", f"{mode},{oid},{path}"],
            purpose=f"add {path} to the merge",
        )

    def add_entries(self, entries: Sequence[tuple[str, str, str]]) -> None:
        """Put each ``(mode, oid, path)`` into this index in one call (``update-index
        -z --index-info``); the blobs must exist already."""
        if not entries:
            return
        data = b"".join(
            f"{mode} {oid}\t".encode() + path.encode("utf-8", "surrogateescape") + b"\0"
            for mode, oid, path in entries
        )
        self.run(
            ["update-index", "--add", "-z", "--index-info"],
            purpose="add the release tarball's files",
            input=data,
        )

    def remove_entry(self, path: str) -> None:
        """Drop ``path`` from this index."""
        self.run(["update-index", "--force-remove", "--", path], purpose=f"drop {path}")

    def apply_cached(
        self, paths: Sequence[str], *, purpose: str, unanchored: bool = False
    ) -> GitResult:
        """``git apply --cached -v -p1`` of the patch files ``paths`` onto this index, in
        order, all or nothing (``unanchored``: ``--unidiff-zero``); the caller reads the
        result (it is not checked)."""
        args = git_apply_args([Path(p) for p in paths], unanchored=unanchored)
        return self.run(args, purpose=purpose, check=False)

    def check_each(self, paths: Sequence[str], *, reverse: bool, purpose: str) -> GitResult:
        """``git apply --cached --check --reject -v`` of ``paths``: each file checked
        against this index as it is (not a series), going on past a failure; not checked."""
        args = [*APPLY_CACHED_ARGS[:2], "--check", "--reject", *APPLY_CACHED_ARGS[2:]]
        return self.run([*args, *(["-R"] if reverse else []), *paths], purpose=purpose, check=False)

    def sibling(self, name: str) -> TempIndex:
        """Another index file beside this one, sharing its object directory (removed
        with it): commits and trees written through either are seen by both."""
        path = self.path.with_name(name)
        return TempIndex(self.git, path, {**self.env, "GIT_INDEX_FILE": str(path)})

    def tree_of(self, rev: str) -> str:
        """The tree ``rev`` records, read through this index's objects (a commit made
        in its private object directory included)."""
        return self.run(
            ["rev-parse", f"{rev}^{{tree}}"], purpose=f"read the tree of {rev}"
        ).out.strip()

    def merge_tree(self, ours: str, theirs: str) -> MergeTreeResult:
        """``git merge-tree --write-tree`` of two commits (merge-ort, the machinery of
        ``git merge`` and ``git cherry-pick``): their merge base is the one history gives.

        Rename detection is on and a directory rename is a conflict (git's defaults;
        ``diff.renames=false``, pinned above for diffs, would otherwise turn it off).
        """
        res = self.run(
            [
                "-c",
                "merge.renames=true",
                "-c",
                "merge.directoryRenames=conflict",
                "-c",
                "merge.renormalize=false",
                "merge-tree",
                "--write-tree",
                "--name-only",
                "--messages",
                ours,
                theirs,
            ],
            purpose="merge a patch onto the new tree",
            check=False,
        )
        if res.returncode not in (0, 1):
            raise GitError("merge a patch onto the new tree", res.argv, res.returncode, res.err)
        head, _, messages = res.out.partition("\n\n")
        lines = head.splitlines()
        return MergeTreeResult(
            res.returncode == 0, lines[0].strip(), tuple(lines[1:]), messages.strip()
        )

    def format_patches(
        self,
        options: Sequence[str],
        out_dir: Path,
        revisions: str,
        *,
        env: Mapping[str, str] | None = None,
        check: bool = True,
    ) -> GitResult:
        """``git format-patch`` of ``revisions`` (``base..tip``) into ``out_dir`` with
        ``options`` (the canonical form); stdout lists the files written."""
        return self.git.run(
            ["format-patch", *options, "-o", str(out_dir), revisions],
            purpose="format the patches",
            env={**self.env, **(env or {})},
            check=check,
        )

    def fast_import(self, stream: bytes, git_dir: Path) -> GitResult:
        """``git fast-import`` of ``stream`` into the scratch repository ``git_dir``, its
        objects going to this index's object directory; not checked."""
        return self.git.run(
            ["fast-import", "--quiet", "--done", "--date-format=raw"],
            purpose="build the chain of patch commits",
            input=stream,
            env={**self.env, "GIT_DIR": str(git_dir)},
            check=False,
        )

    def range_diff(self, old: tuple[str, str], new: tuple[str, str]) -> str:
        """``git range-diff`` of two ranges (base, tip), for a reviewer."""
        return self.git.run(
            [
                "range-diff",
                "--no-color",
                "--no-notes",
                f"{old[0]}..{old[1]}",
                f"{new[0]}..{new[1]}",
            ],
            purpose="compare the old series with the new one",
            env=self.env,
        ).out


class Indexes(Changes):
    @contextmanager
    def temp_index(
        self, treeish: str | None = None, *, keep_objects: bool = False
    ) -> Iterator[TempIndex]:
        """An index file of our own, removed afterwards (also on Ctrl-C).

        Unless ``keep_objects``, the blobs and trees git writes while we work go to a
        private object directory that is deleted too, so a read-only command leaves
        the repository byte-identical.
        """
        tmpdir = scratch_dir("forktool-index")
        try:
            env = {"GIT_INDEX_FILE": str(tmpdir / "index")}
            if not keep_objects:
                (tmpdir / "objects").mkdir()
                env["GIT_OBJECT_DIRECTORY"] = str(tmpdir / "objects")
                env["GIT_ALTERNATE_OBJECT_DIRECTORIES"] = str(self.objects_dir())
            index = TempIndex(self, tmpdir / "index", env)
            if treeish is not None:
                index.read_tree(treeish)
            yield index
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)

    @contextmanager
    def index_copy(self) -> Iterator[TempIndex]:
        """A copy of this worktree's own index (skip-worktree bits and all), removed
        afterwards: stage into it and the real index is left exactly as it was."""
        tmpdir = scratch_dir("forktool-index")
        try:
            real = self.cwd / self.out(
                ["rev-parse", "--git-path", "index"], purpose="find the index"
            )
            if real.is_file():
                shutil.copyfile(real, tmpdir / "index")
            yield TempIndex(self, tmpdir / "index", {"GIT_INDEX_FILE": str(tmpdir / "index")})
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)
