"""Worktrees and sparse checkouts forktool makes for itself (refresh, sync)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from forktool.faults import faultpoint
from forktool.git.index import Indexes
from forktool.git.runner import GitResult


def _literal_pattern(path: str) -> str:
    """``path`` as a gitignore-style pattern that matches only itself."""
    return "".join("\\" + ch if ch in "\\*?[]!# " else ch for ch in path)


class Worktrees(Indexes):
    def ignored(self, paths: Sequence[str]) -> list[str]:
        """Those of ``paths`` (from ``cwd``) that git ignores and does not track: a
        commit leaves them out, so a fresh clone lacks them (``git check-ignore``)."""
        if not paths:
            return []
        res = self.run(
            ["check-ignore", "-z", "--stdin"],
            purpose="look for ignored fork files",
            input=b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths),
            check=False,
        )
        if res.returncode not in (0, 1):  # 1: none is ignored
            return []
        return [p.decode("utf-8", "surrogateescape") for p in res.stdout.split(b"\0") if p]

    def uncommitted(self, pathspecs: Sequence[str], exclude: Sequence[str] = ()) -> list[str]:
        """Paths under ``pathspecs`` (from the top) that differ from HEAD or are untracked."""
        specs = [f":(top,literal){p}" for p in pathspecs]
        specs += [f":(top,literal,exclude){p}" for p in exclude]
        out = self.run(
            ["status", "--porcelain=v1", "-z", "--untracked-files=all", "--", *specs],
            purpose="list uncommitted changes to the fork's files",
        ).out
        return [entry[3:] for entry in out.split("\0") if len(entry) > 3 and entry[2] == " "]

    def worktree_add(self, path: Path, branch: str, start: str) -> None:
        """A new worktree at ``path`` on a new ``branch`` starting at ``start``."""
        faultpoint("git.worktree_add")
        self.run(
            ["worktree", "add", "--quiet", "-b", branch, "--end-of-options", str(path), start],
            purpose=f"create a worktree for {branch}",
        )

    def remove_worktree(self, path: Path, *, check: bool = True) -> None:
        """``git worktree remove --force``: the directory and its registration. With
        ``check=False``, whatever state it is in: git's refusal is ignored and what it
        could not remove is pruned."""
        faultpoint("git.worktree_remove")
        self.run(
            ["worktree", "remove", "--force", str(path)],
            purpose=f"remove the worktree {path}",
            check=check,
        )
        if not check:
            self.worktree_prune(check=False)

    def reset_hard(self, rev: str, *, purpose: str) -> None:
        """Move this worktree's branch (or HEAD), index and files to ``rev``."""
        self.run(["reset", "--quiet", "--hard", rev], purpose=purpose)

    def clean(self, *, purpose: str = "clean the worktree") -> None:
        """Delete every untracked file and directory of this worktree."""
        self.run(["clean", "-fdq"], purpose=purpose)

    def apply_3way(self, patch: Path) -> GitResult:
        """``git apply --3way`` of ``patch`` in this worktree, leaving conflict markers
        where it cannot merge (the result is not checked)."""
        return self.run(
            ["apply", "--3way", "--whitespace=nowarn", str(patch)],
            purpose=f"apply {patch.name} with 3-way merge",
            check=False,
        )

    def apply_with_rejects(self, patch: Path) -> GitResult:
        """``git apply --reject`` of ``patch`` in this worktree: the hunks that apply,
        and a ``.rej`` file per file for the others (the result is not checked)."""
        return self.run(
            ["apply", "--reject", "--whitespace=nowarn", str(patch)],
            purpose=f"apply {patch.name} leaving rejects",
            check=False,
        )

    def status_entries(self, paths: Sequence[Path | str]) -> list[str]:
        """The paths under ``paths`` that are uncommitted, staged or untracked, as
        ``git status --porcelain`` names them."""
        res = self.run(
            ["status", "--porcelain", "--untracked-files=all", "--", *(str(p) for p in paths)],
            purpose="look for uncommitted changes to the fork's files",
        )
        return [line[3:] for line in res.out.splitlines() if line]

    def unmerged_paths(self) -> list[str]:
        """The paths a merge left unmerged (with conflict markers) in this worktree."""
        out = self.run(
            ["diff", "--name-only", "--diff-filter=U", "-z"], purpose="list unmerged paths"
        ).out
        return sorted({path for path in out.split("\0") if path})

    def uncommitted_anywhere(self) -> list[str]:
        """Every path in the index or the work tree that HEAD does not have as it is."""
        out = self.run(
            ["status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames"],
            purpose="list uncommitted files",
        ).out
        return [item[3:] for item in out.split("\0") if len(item) > 3]

    def commit_all(self, message: str, identity: Mapping[str, str]) -> str | None:
        """Stage everything in this worktree and commit it; None when nothing changed."""
        self.run(["add", "--all"], purpose="stage the changes")
        if self.run(["diff", "--cached", "--quiet"], purpose="look for changes", check=False).ok:
            return None
        faultpoint("git.commit")
        self.run(
            ["commit", "--quiet", "--no-verify", "-F", "-"],
            purpose="commit",
            input=message.encode("utf-8"),
            env=identity,
        )
        return self.out(["rev-parse", "HEAD"], purpose="read the new commit")

    def worktree_checkout(self, path: Path, branch: str) -> None:
        """A new worktree at ``path`` on the existing ``branch``."""
        faultpoint("git.worktree_add")
        self.run(
            ["worktree", "add", "--quiet", "--end-of-options", str(path), branch],
            purpose=f"re-create the worktree of {branch}",
        )

    def worktree_add_sparse(self, path: Path, rev: str, paths: Sequence[str]) -> None:
        """A detached worktree at ``path`` on ``rev`` with only ``paths`` checked out (a
        hand resolution needs the conflicting patch's files, not the whole tree)."""
        self.run(
            [
                *("worktree", "add", "--quiet", "--no-checkout", "--detach", "--end-of-options"),
                *(str(path), rev),
            ],
            purpose=f"create the worktree {path}",
        )
        Worktrees(path).sparse_reset(rev, paths)

    def sparse_reset(self, rev: str, paths: Sequence[str]) -> None:
        """Make this worktree's index ``rev`` and check out only ``paths`` (the others
        are marked skip-worktree: add, diff and reset leave them alone). The patterns
        live in this worktree's own git directory; no config is written."""
        info = self.git_dir() / "info"
        info.mkdir(exist_ok=True)
        whole = not paths or any("\n" in p or "\r" in p for p in paths)
        patterns = "/*\n" if whole else "".join(f"/{_literal_pattern(p)}\n" for p in paths)
        (info / "sparse-checkout").write_text(patterns, encoding="utf-8")
        self.run(
            ["-c", "core.sparseCheckout=true", "read-tree", "--reset", "-u", rev],
            purpose=f"check out the files to resolve at {rev}",
        )

    def worktree_prune(self, *, check: bool = True) -> None:
        """Forget worktrees whose directory is gone."""
        self.run(["worktree", "prune"], purpose="prune worktrees", check=check)

    def worktree_branches(self) -> list[str]:
        """The refs checked out in any worktree of this repository."""
        listing = self.out(["worktree", "list", "--porcelain"], purpose="list worktrees")
        return [
            line[len("branch ") :] for line in listing.splitlines() if line.startswith("branch ")
        ]
