"""Objects and the repository itself: blobs, trees, commits by id, the git directory."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from forktool.errors import FatalError
from forktool.git.runner import Runner
from forktool.model.text import whole_number

# Every blob of a tree with its size (``git ls-tree -l``): see :func:`blob_sizes`.
LS_TREE_SIZES = ("ls-tree", "-r", "-l", "-z", "--full-tree")


def user_config_files() -> list[Path]:
    """The user's own git config files, the one git reads last (and so wins) first."""
    home = os.environ.get("HOME")
    xdg = os.environ.get("XDG_CONFIG_HOME") or (f"{home}/.config" if home else None)
    return [
        *([Path(home) / ".gitconfig"] if home else []),
        *([Path(xdg) / "git" / "config"] if xdg else []),
    ]


def blob_sizes(out: str) -> dict[str, int]:
    """``{path: size}`` of every blob in ``git ls-tree -r -l -z`` output (submodules,
    which have no size, left out)."""
    sizes: dict[str, int] = {}
    for record in out.split("\0"):
        meta, tab, path = record.partition("\t")
        size = whole_number(meta.rpartition(" ")[2])
        if tab and size is not None:
            sizes[path] = size
    return sizes


class Objects(Runner):
    def toplevel(self, resolving: str | None = None) -> Path:
        """The top level of the work tree ``cwd`` is in (asked of git once).

        ``resolving``: a revision spec (``rev^{kind}``) to resolve in the same call
        when git is asked now; the next :meth:`find_object` of it takes the answer
        (one process fewer before ``verify`` can start git on the series)."""
        if self._top is not None:
            return self._top
        # The object directory in the same call: every temporary index needs it.
        ask = ["rev-parse", "--show-toplevel", "--git-path", "objects"]
        if resolving is not None:
            ask += ["--verify", "--quiet", "--end-of-options", resolving]
        res = self.run(ask, purpose="find the repository", check=False)
        lines = res.out.splitlines()
        # A spec that resolves to nothing fails the call (exit 1) after both answers.
        if len(lines) < 2 or not (res.ok or (resolving is not None and res.returncode == 1)):
            raise FatalError(
                f"{self.cwd} is not inside a git repository",
                "run forktool inside the fork's git checkout, or pass -C DIR",
            )
        if resolving is not None:
            self._resolved[resolving] = lines[2].strip() if res.ok and len(lines) > 2 else None
        self._objects = (self.cwd / lines[1].strip()).resolve()
        self._top = Path(lines[0].strip())
        return self._top

    def objects_dir(self) -> Path:
        """The repository's object directory (absolute), asked of git once."""
        if self._objects is None:
            out = self.out(["rev-parse", "--git-path", "objects"], purpose="find the object store")
            self._objects = (self.cwd / out).resolve()
        return self._objects

    def git_dir(self) -> Path:
        out = self.out(["rev-parse", "--absolute-git-dir"], purpose="find the git directory")
        return Path(out)

    def is_shallow(self) -> bool:
        return (
            self.out(
                ["rev-parse", "--is-shallow-repository"], purpose="ask if the clone is shallow"
            )
            == "true"
        )

    def vanished_alternates(self) -> tuple[Path, list[str]]:
        """(the alternates file, the object directories it names that are gone): a
        clone made with ``--shared`` or ``--reference`` borrows its objects from them."""
        listed = Path(
            self.out(
                ["rev-parse", "--git-path", "objects/info/alternates"],
                purpose="find the alternates file",
            )
        )
        listed = listed if listed.is_absolute() else self.cwd / listed
        try:
            lines = listed.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return listed, []
        entries = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
        objects = listed.parent.parent
        return listed, [e for e in entries if not (objects / e).is_dir()]

    def require_objects(self) -> None:
        """Refuse (exit 2) a repository whose borrowed objects are gone: every tag and
        commit would look unknown, and "fetch it" would be the wrong advice."""
        listed, gone = self.vanished_alternates()
        if gone:
            raise FatalError(
                f"the repository's objects are missing: {listed} says they are in {gone[0]}, "
                "which no longer exists",
                "restore that directory (the clone was made with --shared or --reference), "
                "or clone the fork again without it",
            )

    def object_types(self, oids: Iterable[str]) -> dict[str, str | None]:
        """Type of each object (``commit``, ``tree``...), None when missing. One process."""
        return {oid: hit[1] if hit else None for oid, hit in self.resolve_names(oids).items()}

    def resolve_names(self, names: Iterable[str]) -> dict[str, tuple[str, str] | None]:
        """Each object name (full or abbreviated) -> (full id, type); None when it is
        missing or ambiguous. One ``cat-file --batch-check`` for all of them."""
        items = list(dict.fromkeys(names))
        if not items:
            return {}
        res = self.run(
            ["cat-file", "--batch-check=%(objectname) %(objecttype)"],
            purpose="look up object names",
            input=("\n".join(items) + "\n").encode(),
        )
        found: dict[str, tuple[str, str] | None] = {}
        for name, line in zip(items, res.out.splitlines(), strict=True):
            parts = line.split()
            known = len(parts) == 2 and parts[1] not in ("missing", "ambiguous")
            found[name] = (parts[0], parts[1]) if known else None
        return found

    def commit_messages(self, commits: Sequence[str]) -> dict[str, str]:
        """Each commit's message exactly as stored (undecodable bytes escaped). One process."""
        if not commits:
            return {}
        data = self.run(
            ["cat-file", "--batch"],
            purpose="read commit messages",
            input=("\n".join(commits) + "\n").encode(),
        ).stdout
        found: dict[str, str] = {}
        at = 0
        for commit in commits:
            eol = data.index(b"\n", at)
            _oid, _kind, size = data[at:eol].split(b" ")
            body = data[eol + 1 : eol + 1 + int(size)]
            at = eol + 1 + int(size) + 1
            _headers, _, message = body.partition(b"\n\n")
            found[commit] = message.decode("utf-8", "surrogateescape")
        return found

    def blob(self, rev: str, path: str) -> bytes | None:
        res = self.run(
            ["cat-file", "blob", f"{rev}:{path}"], purpose=f"read {path} at {rev}", check=False
        )
        return res.stdout if res.ok else None

    def tracked_paths(self, rev: str) -> list[str]:
        """Every file path in ``rev``'s tree (recursively, full tree)."""
        out = self.run(
            ["ls-tree", "-r", "-z", "--full-tree", "--name-only", rev],
            purpose=f"list the files of {rev}",
        ).out
        return [path for path in out.split("\0") if path]

    def archive(self, rev: str) -> bytes:
        """The whole tree at ``rev`` as a tar archive (what was committed, nothing else)."""
        return self.run(
            ["archive", "--format=tar", "--end-of-options", rev], purpose=f"export {rev}"
        ).stdout

    def blob_id(self, rev: str, path: str) -> str | None:
        """The id of the blob at ``path`` in ``rev``'s tree, or None when there is none."""
        res = self.run(
            ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}:{path}"],
            purpose=f"find {path} in {rev}",
            check=False,
        )
        oid = res.out.strip()
        if not res.ok or self.object_types([oid]).get(oid) != "blob":
            return None
        return oid

    def local_config(self, key: str) -> str | None:
        """A value from the repository's own config (global and system config are off)."""
        res = self.run(["config", "--local", "--get", key], purpose=f"read {key}", check=False)
        return (res.out.strip() or None) if res.ok else None

    def identity_config(self, key: str) -> str | None:
        """``user.name`` or ``user.email`` as git finds it after the environment: the
        repository's, else the user's own (:meth:`user_config`)."""
        return self.local_config(key) or self.user_config(key)

    def user_config(self, key: str) -> str | None:
        """A value from the user's own git config files (``~/.gitconfig``, then
        ``$XDG_CONFIG_HOME/git/config``, the first that has it, as git ranks them), each
        read as a file for ``key`` alone: nothing else in them (aliases, hooks, filters)
        reaches a git call of forktool's, whose global config stays off."""
        for path in user_config_files():
            if not path.is_file():
                continue
            args = ["config", "--file", str(path), "--includes", "--get", key]
            res = self.run(args, purpose=f"read {key} from {path}", check=False)
            if res.ok and res.out.strip():
                return res.out.strip()
        return None

    def common_dir(self) -> Path:
        """The repository's shared git directory (the same from every worktree)."""
        out = self.out(["rev-parse", "--git-common-dir"], purpose="find the git directory")
        return (self.cwd / out).resolve()

    def tree_id(self, rev: str) -> str:
        """The tree ``rev`` records."""
        return self.out(["rev-parse", f"{rev}^{{tree}}"], purpose=f"read the tree of {rev}")

    def commit_tree(
        self,
        tree: str,
        parents: Sequence[str],
        message: bytes,
        *,
        purpose: str,
        env: Mapping[str, str] | None = None,
    ) -> str:
        """A new commit of ``tree`` on ``parents`` (``git commit-tree``); no ref moves."""
        args = ["commit-tree", tree]
        for parent in parents:
            args += ["-p", parent]
        return self.run(args, purpose=purpose, input=message, env=env).out.strip()

    def ls_tree(self, rev: str) -> list[tuple[str, str, str]]:
        """``(mode, oid, path)`` for every file in ``rev``'s tree."""
        out = self.run(["ls-tree", "-r", "-z", "--full-tree", rev], purpose=f"list {rev}").out
        entries = []
        for record in out.split("\0"):
            if record:
                meta, path = record.split("\t", 1)
                mode, _kind, oid = meta.split()
                entries.append((mode, oid, path))
        return entries

    def import_commit(self, stream: bytes, ref: str) -> str:
        """``git fast-import`` of ``stream`` (one commit onto ``ref``, replacing what
        ``ref`` held); the commit ``ref`` then names."""
        self.run(
            ["fast-import", "--quiet", "--done", "--date-format=raw", "--force"],
            purpose=f"import the tarball as {ref}",
            input=stream,
        )
        return self.out(["rev-parse", "--verify", f"{ref}^{{commit}}"], purpose=f"read {ref}")

    def parents(self, commit: str) -> list[str]:
        """The parents of ``commit``, in order."""
        line = self.out(
            ["rev-list", "--no-walk", "--parents", "-n1", commit, "--"],
            purpose=f"read the parents of {commit}",
        )
        return line.split()[1:]
