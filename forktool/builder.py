"""Deterministic git repositories for tests, the demo and benchmarks.

Every commit and tag a :class:`RepoBuilder` makes has a fixed author, committer
and date, taken from a clock that starts at 2024-01-01T00:00:00Z and advances one
hour per commit, merge, cherry-pick or tag. Identity travels in the environment of
each git call, never in any config file, so the same sequence of calls yields the
same commit ids on any machine.
"""

from __future__ import annotations

import io
import re
import tarfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from forktool.git import Git

EPOCH = 1_704_067_200  # 2024-01-01T00:00:00Z
TICK = 3600
DEFAULT_AUTHOR = "A U Thor <author@example.com>"
COMMITTER = "C O Mitter <committer@example.com>"

FileContent = str | bytes | None

_IDENTITY = re.compile(r"^(?P<name>[^<>]+?)\s*<(?P<email>[^<>\s]+)>$")

# Local settings only: keep .git free of background rewrites so that
# byte-for-byte snapshots of a built repository stay stable.
_LOCAL_CONFIG = (("gc.auto", "0"), ("maintenance.auto", "false"))


@dataclass(frozen=True)
class Identity:
    name: str
    email: str

    @classmethod
    def parse(cls, text: str) -> Identity:
        match = _IDENTITY.match(text.strip())
        if not match:
            raise ValueError(f"identity must read 'Name <email>', got {text!r}")
        return cls(match["name"], match["email"])


class RepoBuilder:
    """Builds one repository at ``path`` through real git commands."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.git = Git(self.path)
        self._clock = self._resume_clock()

    # -- creating repositories -------------------------------------------------

    @classmethod
    def init(cls, path: Path, *, branch: str = "main") -> RepoBuilder:
        """A new empty repository on ``branch`` (no template, so no hooks)."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        Git(path).run(
            ["init", "--quiet", "--template=", f"--initial-branch={branch}", "."],
            purpose=f"create a repository in {path}",
        )
        builder = cls(path)
        builder._configure()
        return builder

    @classmethod
    def clone(cls, src: Path, dest: Path) -> RepoBuilder:
        """A full clone of ``src``; its clock resumes after the newest ref."""
        return cls._clone(["--no-local", Path(src).resolve().as_uri()], dest)

    @classmethod
    def shallow_clone(
        cls, src: Path, dest: Path, depth: int, *, branch: str | None = None
    ) -> RepoBuilder:
        """A really shallow clone (``file://`` URL, so git does not copy objects)."""
        if depth < 1:
            raise ValueError("depth must be at least 1")
        args = [f"--depth={depth}"]
        if branch is not None:
            args.append(f"--branch={branch}")
        return cls._clone([*args, Path(src).resolve().as_uri()], dest)

    @classmethod
    def _clone(cls, args: list[str], dest: Path) -> RepoBuilder:
        dest = Path(dest).resolve()
        dest.parent.mkdir(parents=True, exist_ok=True)
        Git(dest.parent).run(
            ["clone", "--quiet", "--template=", *args, str(dest)],
            purpose=f"clone into {dest}",
        )
        builder = cls(dest)
        builder._configure()
        return builder

    def _configure(self) -> None:
        for key, value in _LOCAL_CONFIG:
            self.git.run(["config", key, value], purpose=f"set {key} in {self.path}")

    # -- the clock --------------------------------------------------------------

    def _resume_clock(self) -> int:
        """The next timestamp: the epoch, or one tick after the newest ref."""
        if not (self.path / ".git").exists():
            return EPOCH
        res = self.git.run(
            ["for-each-ref", "--sort=-creatordate", "--count=1", "--format=%(creatordate:unix)"],
            purpose="find the newest ref",
        )
        newest = res.out.strip()
        return int(newest) + TICK if newest else EPOCH

    def _tick(self, author: str | None = None) -> dict[str, str]:
        """The identity environment for one new object; advances the clock."""
        date = f"@{self._clock} +0000"
        self._clock += TICK
        who = Identity.parse(author or DEFAULT_AUTHOR)
        committer = Identity.parse(COMMITTER)
        return {
            "GIT_AUTHOR_NAME": who.name,
            "GIT_AUTHOR_EMAIL": who.email,
            "GIT_AUTHOR_DATE": date,
            "GIT_COMMITTER_NAME": committer.name,
            "GIT_COMMITTER_EMAIL": committer.email,
            "GIT_COMMITTER_DATE": date,
        }

    # -- history ----------------------------------------------------------------

    def commit(
        self,
        message: str,
        files: Mapping[str, FileContent] | None = None,
        *,
        author: str | None = None,
    ) -> str:
        """Write ``files`` (None deletes), stage everything, commit; the new commit id.

        With nothing to change the commit is empty, which is allowed.
        """
        for name, content in (files or {}).items():
            self._write(name, content)
        self.git.run(["add", "--all"], purpose="stage the work tree")
        self.git.run(
            [
                "commit",
                "--quiet",
                "--allow-empty",
                "--no-verify",
                "--cleanup=whitespace",
                "--file=-",
            ],
            purpose=f"commit {message.splitlines()[0] if message else '(empty message)'!r}",
            input=message.encode(),
            env=self._tick(author),
        )
        return self.rev("HEAD")

    def branch(self, name: str, start: str = "HEAD") -> str:
        """Create branch ``name`` at ``start`` (without checking it out); its commit."""
        self.git.run(["branch", "--end-of-options", name, start], purpose=f"create branch {name}")
        return self.rev(f"refs/heads/{name}")

    def checkout(self, name: str) -> str:
        self.git.run(["checkout", "--quiet", name, "--"], purpose=f"check out {name}")
        return self.rev("HEAD")

    def merge(self, rev: str, message: str, *, author: str | None = None) -> str:
        """A ``--no-ff`` merge of ``rev`` into the current branch; the merge commit."""
        self.git.run(
            ["merge", "--quiet", "--no-ff", "--no-verify", "-m", message, rev],
            purpose=f"merge {rev}",
            env=self._tick(author),
        )
        return self.rev("HEAD")

    def cherry_pick(self, commit: str, *, x: bool = True, mainline: int | None = None) -> str:
        """A real ``git cherry-pick`` (with ``-x`` by default; ``mainline`` picks a merge
        against that parent, as ``-m1`` does on release branches); the new commit."""
        args = ["cherry-pick", "--allow-empty"]
        if x:
            args.append("-x")
        if mainline is not None:
            args.append(f"--mainline={mainline}")
        self.git.run([*args, commit], purpose=f"cherry-pick {commit[:12]}", env=self._tick())
        return self.rev("HEAD")

    # -- tags -------------------------------------------------------------------

    def tag(
        self,
        name: str,
        rev: str = "HEAD",
        *,
        annotated: bool = True,
        message: str | None = None,
    ) -> str:
        """Tag ``rev``; the commit the tag peels to."""
        return self._tag(name, rev, annotated=annotated, message=message, force=False)

    def move_tag(self, name: str, rev: str, *, message: str | None = None) -> str:
        """Re-create annotated tag ``name`` at ``rev`` (upstream moving a release tag)."""
        return self._tag(name, rev, annotated=True, message=message, force=True)

    def _tag(
        self, name: str, rev: str, *, annotated: bool, message: str | None, force: bool
    ) -> str:
        args = ["tag"]
        if force:
            args.append("--force")
        if annotated:
            args += ["--annotate", f"--message={message or name}"]
        self.git.run(
            [*args, "--end-of-options", name, rev], purpose=f"tag {rev} as {name}", env=self._tick()
        )
        return self.rev(f"refs/tags/{name}")

    # -- release tarballs ----------------------------------------------------------

    def release_tarball(
        self,
        rev: str,
        dest: Path,
        *,
        top: str | None,
        extra: Mapping[str, FileContent] | None = None,
        executable: tuple[str, ...] = (),
        symlinks: Mapping[str, str] | None = None,
        mtime: int = EPOCH,
        reverse: bool = False,
    ) -> Path:
        """A release tarball of ``rev`` at ``dest`` (compressed as its suffix says), as
        upstreams make them: the tree under ``top/`` (None: at the root) plus ``extra``
        generated files (``None`` drops a file), with ``executable`` paths mode 0755
        and ``symlinks``. ``mtime`` and ``reverse`` (member order) vary what an import
        must not depend on."""
        files: dict[str, bytes] = {}
        with tarfile.open(fileobj=io.BytesIO(self.git.archive(rev))) as tree:
            for member in tree.getmembers():
                handle = tree.extractfile(member) if member.isfile() else None
                if handle is not None:
                    files[member.name] = handle.read()
        for name, content in (extra or {}).items():
            if content is None:
                files.pop(name, None)
            else:
                files[name] = content.encode() if isinstance(content, str) else content
        entries = sorted(files.items(), reverse=reverse)
        mode = {".gz": "w:gz", ".xz": "w:xz", ".bz2": "w:bz2"}.get(Path(dest).suffix, "w")
        prefix = f"{top}/" if top else ""
        with tarfile.open(dest, mode) as out:  # type: ignore[call-overload]
            if top:
                directory = tarfile.TarInfo(top)
                directory.type, directory.mode, directory.mtime = tarfile.DIRTYPE, 0o755, mtime
                out.addfile(directory)
            for name, data in entries:
                info = tarfile.TarInfo(prefix + name)
                info.size, info.mtime = len(data), mtime
                info.mode = 0o755 if name in executable else 0o644
                out.addfile(info, io.BytesIO(data))
            for name, target in sorted((symlinks or {}).items()):
                info = tarfile.TarInfo(prefix + name)
                info.type, info.linkname, info.mtime = tarfile.SYMTYPE, target, mtime
                out.addfile(info)
        return Path(dest)

    # -- reading ----------------------------------------------------------------

    def rev(self, name: str) -> str:
        """The commit ``name`` resolves to."""
        return self.git.require_commit(name)

    def read(self, path: str) -> str:
        """A file of the work tree, as text."""
        return (self.path / self._checked(path)).read_text(encoding="utf-8")

    # -- the work tree ----------------------------------------------------------

    def _write(self, name: str, content: FileContent) -> None:
        target = self.path / self._checked(name)
        if content is None:
            target.unlink()
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode() if isinstance(content, str) else content)

    @staticmethod
    def _checked(name: str) -> PurePosixPath:
        """``name`` as a path inside the work tree, refusing escapes and ``.git``."""
        path = PurePosixPath(name)
        if path.is_absolute() or ".." in path.parts or not path.parts or path.parts[0] == ".git":
            raise ValueError(f"not a work-tree path: {name!r}")
        return path
