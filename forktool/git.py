"""The one place that runs git.

Every git process forktool starts goes through :func:`run`: no shell, a hardened
environment (no system or global config, C locale, no prompts), and a failure
turned into a :class:`~forktool.errors.GitError` that names what we were trying
to do. Typed helpers on :class:`Git` answer the questions the engines ask.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from forktool.errors import FatalError, GitError, git_said
from forktool.faults import faultpoint

HEX40 = re.compile(r"^[0-9a-f]{40}$")
_COMMIT_LINE = re.compile(rb"^commit [0-9a-f]{40}$", re.MULTILINE)

# Every setting that could change a result, pinned in one place and passed as
# ``git -c`` to every git process: neither the user's environment nor the
# repository's own config (``.git/config``, which GIT_CONFIG_NOSYSTEM and
# GIT_CONFIG_GLOBAL do not reach) may change what apply, diff, log -p, patch-id,
# format-patch or fetch produce. Most values are git's defaults; pinning them is
# what makes a repository that sets them otherwise give the same answers.
_CONFIG_OVERRIDES = (
    "core.autocrlf=false",
    "core.safecrlf=false",
    "core.quotepath=false",
    "core.abbrev=auto",
    "core.commentChar=#",
    "core.attributesFile=/dev/null",
    "apply.whitespace=nowarn",
    "apply.ignoreWhitespace=no",
    "diff.context=3",
    "diff.interHunkContext=0",
    "diff.algorithm=myers",
    "diff.indentHeuristic=true",
    "diff.suppressBlankEmpty=false",
    "diff.orderFile=/dev/null",
    "diff.submodule=short",
    "diff.ignoreSubmodules=none",
    "diff.noprefix=false",
    "diff.mnemonicPrefix=false",
    "diff.relative=false",
    "diff.renames=false",
    "color.ui=false",
    "log.showSignature=false",
    "log.showRoot=true",
    "log.decorate=false",
    "log.abbrevCommit=false",
    "log.follow=false",
    "i18n.commitEncoding=UTF-8",
    "i18n.logOutputEncoding=UTF-8",
    "format.signature=",
    "fetch.prune=false",
    # Transports that run a command or use a file descriptor: never, whatever the
    # repository's config allows (a remote URL is checked before use, too).
    "protocol.ext.allow=never",
    "protocol.fd.allow=never",
    "fetch.pruneTags=false",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
)

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

# Inherited variables that would point git somewhere other than where we aim it.
_STRIPPED_PREFIXES = ("GIT_",)
_KEPT = {"GIT_SSH", "GIT_SSH_COMMAND", "GIT_ASKPASS", "GIT_HTTP_PROXY"}


def hardened_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment every git process runs with."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(_STRIPPED_PREFIXES) or k in _KEPT
    }
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL="/dev/null",
        LC_ALL="C",
        LANG="C",
        GIT_TERMINAL_PROMPT="0",
        GIT_PAGER="cat",
        GIT_OPTIONAL_LOCKS="0",
        # No system-wide gitattributes (core.attributesFile above covers the user's).
        GIT_ATTR_NOSYSTEM="1",
    )
    if extra:
        env.update(extra)
    return env


# What makes a name a revision expression rather than a ref (git check-ref-format
# refuses these in ref names): v1.3.0~2, v1^{tree}, v1:path, v1@{1}, a..b, globs.
_REVISION_SYNTAX = re.compile(r"[~^:?*\[\\]|@\{|\.\.")


def is_revision_expression(name: str) -> bool:
    """``v1.3.0~2`` and the like (a name with spaces or control characters is no
    expression, and no tag either: it stays an unknown tag)."""
    if any(ch.isspace() or not ch.isprintable() for ch in name):
        return False
    return bool(_REVISION_SYNTAX.search(name))


# ``git apply`` onto an index, as every verification runs it: strict paths (-p1), and
# whitespace neither fixed nor warned about (the patch is applied as it is).
# --allow-empty: a 0-byte patch is a no-op, as for quilt and dpkg-source (a patch with text
# but no diff is refused before anything runs: forktool.engine.attempt.precheck).
APPLY_CACHED_ARGS = ("apply", "--cached", "-v", "--whitespace=nowarn", "--allow-empty", "-p1")


def git_apply_args(
    files: Sequence[Path], *, reverse: bool = False, check: bool = False, context: int | None = None
) -> list[str]:
    """``git apply --cached -v -p1`` of ``files`` onto an index (``-R``, ``--check``,
    ``-C<context>`` as asked): the one strict apply command line."""
    args = list(APPLY_CACHED_ARGS)
    if reverse:
        args.append("-R")
    if check:
        args.append("--check")
    if context is not None:
        args.append(f"-C{context}")
    return [*args, *(str(f) for f in files)]


def apply_in_directory(
    directory: Path, patch: Path, *, reverse: bool, check_with_context: int | None, purpose: str
) -> GitResult:
    """``git apply -v -p1`` of ``patch`` in a plain ``directory`` (never a repository: no
    git directory is looked for above it); ``check_with_context`` only checks, with that
    much context. Not checked: the caller reads git's output."""
    args = ["apply", "-v", "--whitespace=nowarn", "--allow-empty", "-p1"]
    args += ["-R"] if reverse else []
    if check_with_context is not None:
        args += [f"-C{check_with_context}", "--check"]
    return run(
        [*args, str(patch)],
        cwd=directory,
        purpose=purpose,
        env={
            "GIT_CEILING_DIRECTORIES": str(directory.parent),
            "GIT_DIR": str(directory / ".no-git"),
        },
        check=False,
    )


# Variables that change what GNU patch does (POSIX mode picks other file names and
# makes backups; the others name backup files): never inherited.
_GNU_PATCH_VARIABLES = (
    "POSIXLY_CORRECT",
    "PATCH_GET",
    "PATCH_VERSION_CONTROL",
    "VERSION_CONTROL",
    "SIMPLE_BACKUP_SUFFIX",
    "QUOTING_STYLE",
)


def run_gnu_patch(flags: Sequence[str], directory: Path, patch: Path) -> tuple[int, str]:
    """GNU patch with ``flags`` on ``directory`` (the patch read from ``patch``): its exit
    status and its output (stdout, then stderr). Exit 2 when GNU patch is not installed."""
    env = hardened_env()
    for name in _GNU_PATCH_VARIABLES:
        env.pop(name, None)
    argv = ["patch", *flags, "-d", str(directory), "-i", str(patch)]
    try:
        proc = subprocess.run(argv, capture_output=True, env=env, check=False)  # noqa: S603
    except FileNotFoundError as exc:
        raise FatalError(
            "GNU patch is not installed", "install it (apt-get install patch) or use --engine git"
        ) from exc
    out = proc.stdout.decode("utf-8", "surrogateescape") + proc.stderr.decode(
        "utf-8", "surrogateescape"
    )
    return proc.returncode, out


def git_argv(args: Sequence[str]) -> list[str]:
    argv = ["git"]
    for setting in _CONFIG_OVERRIDES:
        argv += ["-c", setting]
    argv += list(args)
    return argv


@dataclass(frozen=True)
class GitResult:
    argv: list[str]
    returncode: int
    stdout: bytes
    stderr: bytes

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    @property
    def out(self) -> str:
        return self.stdout.decode("utf-8", "surrogateescape")

    @property
    def err(self) -> str:
        return self.stderr.decode("utf-8", "surrogateescape")


# Settling ancestry candidates (Git.ancestors): up to this many are asked one
# ``merge-base --is-ancestor`` each, more take one walk of the tip's history. Without
# a commit-graph one merge-base can walk as much as that whole walk.
_DIRECT_MAX = 2
_DIRECT_WITH_GRAPH = 48
# A history walk without a commit-graph that takes longer than this earns the notice.
SLOW_WALK_SECONDS = 1.0
GRAPH_FIX = "git commit-graph write --reachable --changed-paths"

# Who hears, once per process, that a repository without a commit-graph made a run
# slow (set by the CLI only: a notice on stderr).
_graph_notice: Callable[[str], None] | None = None
_graph_noted: set[Path] = set()


def set_graph_notice(callback: Callable[[str], None] | None) -> None:
    """Say (through ``callback``) when a walk was slow for want of a commit-graph."""
    global _graph_notice
    _graph_notice = callback
    _graph_noted.clear()


def note_missing_commit_graph(git: Git) -> None:
    """Once per repository and process: the walk was slow, a commit-graph would fix it.
    forktool never writes one unasked (it changes the user's ``.git``)."""
    key = git.cwd.resolve()
    if _graph_notice is None or key in _graph_noted:
        return
    _graph_noted.add(key)
    _graph_notice(
        "this repository has no commit-graph, so walking its history is slow; "
        f"`{GRAPH_FIX}` in it (once) makes ancestry and history scans fast"
    )


# Who wants to hear about each git command (``forktool -v``); set by the CLI only.
Observer = Callable[[str, Sequence[str], int], None]
_observer: Observer | None = None


def set_observer(observer: Observer | None) -> None:
    """Report every git command run from now on (purpose, args, exit code), or stop."""
    global _observer
    _observer = observer


# Commands whose output is a diff of objects (a patch, patch-id's input, numstat).
# .gitattributes must not change it: ``-diff``/``binary`` turn text into "Binary files
# differ" (and numstat into "-"), ``diff=python`` and other drivers change hunk headers
# and the diff algorithm, textconv and external drivers rewrite it. git 2.39 has no
# switch for the attributes of the work tree and index (``--attr-source`` came in
# 2.40; core.attributesFile and GIT_ATTR_NOSYSTEM above cover the user's and the
# system's files), so these commands run in an attribute-free view of the repository:
# the same git directory, an empty work tree (also the working directory: git reads
# ``.gitattributes`` relative to it) and an index that does not exist. None of them
# reads the index or the work tree; their pathspecs are top-relative there, as from
# the toplevel. Left: ``$GIT_DIR/info/attributes``, the repository's own file.
_ATTRIBUTE_FREE = frozenset({"format-patch", "range-diff", "diff-tree", "show"})
_git_dirs: dict[tuple[Path, str | None], str] = {}
_empty_view: list[Path] = []


def _needs_attribute_free(args: Sequence[str]) -> bool:
    if not args:
        return False
    return args[0] in _ATTRIBUTE_FREE or (args[0] == "log" and ("-p" in args or "--patch" in args))


def _attribute_free(
    args: Sequence[str], cwd: Path, env: Mapping[str, str] | None
) -> tuple[Path, Mapping[str, str] | None]:
    """Where and with what environment to run ``args`` so that no ``.gitattributes``
    of the work tree or index reaches it (see :data:`_ATTRIBUTE_FREE`)."""
    if not _needs_attribute_free(args):
        return cwd, env
    key = (cwd, (env or {}).get("GIT_DIR"))
    if key not in _git_dirs:
        found = run(
            ["rev-parse", "--absolute-git-dir"],
            cwd=cwd,
            env=env,
            purpose="find the git directory",
        ).out.strip()
        _git_dirs[key] = found
    if not _empty_view:
        view = Path(tempfile.mkdtemp(prefix="forktool-attr-free-"))
        atexit.register(shutil.rmtree, view, True)
        _empty_view.append(view)
    view = _empty_view[0]
    return view, {
        **(env or {}),
        "GIT_DIR": _git_dirs[key],
        "GIT_WORK_TREE": str(view),
        "GIT_INDEX_FILE": str(view / "no-index"),
    }


def run(
    args: Sequence[str],
    *,
    cwd: Path,
    purpose: str,
    input: bytes | None = None,
    env: Mapping[str, str] | None = None,
    check: bool = True,
) -> GitResult:
    """Run one git command. ``purpose`` completes "git could not ..."."""
    argv = git_argv(args)
    cwd, env = _attribute_free(args, cwd, env)
    try:
        proc = subprocess.run(  # noqa: S603 - fixed argv, no shell
            argv,
            cwd=cwd,
            input=input,
            env=hardened_env(env),
            capture_output=True,
            check=False,
        )
    except FileNotFoundError as exc:
        raise FatalError(
            "git is not installed or not on PATH", "install git 2.30 or newer"
        ) from exc
    result = GitResult(argv, proc.returncode, proc.stdout, proc.stderr)
    if _observer is not None:
        _observer(purpose, args, result.returncode)
    if check and not result.ok:
        if args and args[0] in ("fetch", "ls-remote"):  # reaching upstream: said alike
            raise fetch_error(args, cwd, purpose, result)
        raise GitError(purpose, argv, result.returncode, result.err)
    return result


class Started:
    """A git command running in the background (see :func:`start`): the caller works
    while git does, then calls :meth:`wait`. Leaving the ``with`` block without
    waiting (an error, Ctrl-C) kills it."""

    def __init__(
        self, args: Sequence[str], *, cwd: Path, purpose: str, env: Mapping[str, str] | None
    ) -> None:
        self.args = list(args)
        self.argv = git_argv(args)
        self.purpose = purpose
        cwd, env = _attribute_free(args, cwd, env)
        # Output goes to files, not pipes: a pipe nobody reads would stop git once full.
        self._out = tempfile.TemporaryFile()
        self._err = tempfile.TemporaryFile()
        try:
            self._proc: subprocess.Popen[bytes] = subprocess.Popen(  # noqa: S603 - no shell
                self.argv,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=self._out,
                stderr=self._err,
                env=hardened_env(env),
            )
        except FileNotFoundError as exc:
            self._close()
            raise FatalError(
                "git is not installed or not on PATH", "install git 2.30 or newer"
            ) from exc

    def done(self) -> bool:
        return self._proc.poll() is not None

    def wait(self, *, check: bool = True) -> GitResult:
        try:
            returncode = self._proc.wait()
            self._out.seek(0)
            self._err.seek(0)
            result = GitResult(self.argv, returncode, self._out.read(), self._err.read())
        finally:
            self._close()
        if _observer is not None:
            _observer(self.purpose, self.args, result.returncode)
        if check and not result.ok:
            raise GitError(self.purpose, self.argv, result.returncode, result.err)
        return result

    def _close(self) -> None:
        self._out.close()
        self._err.close()

    def __enter__(self) -> Started:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc.returncode is None:
            self._proc.kill()
            self._proc.wait()
        self._close()


def start(
    args: Sequence[str], *, cwd: Path, purpose: str, env: Mapping[str, str] | None = None
) -> Started:
    """Start one git command (like :func:`run`) and return at once; use it as a context
    manager and call ``wait()`` for the result."""
    return Started(args, cwd=cwd, purpose=purpose, env=env)


_REJECTED = re.compile(r"^ ! \[(?:remote )?rejected\]\s+(\S+)\s+->\s+(\S+)\s*(?:\((.*)\))?\s*$")


def rejected_refs(stderr: str) -> list[str]:
    """Each ref a fetch rejected, as ``<ref> (<why>)`` from git's `` ! [rejected]`` lines."""
    found = []
    for line in stderr.splitlines():
        if match := _REJECTED.match(line):
            why = f" ({match.group(3)})" if match.group(3) else ""
            found.append(f"{match.group(2)}{why}")
    return found


def fetch_error(args: Sequence[str], cwd: Path, purpose: str, result: GitResult) -> GitError:
    """A failed fetch, said in full: git's first meaningful line, and the remote with
    its URL (the last line alone, "and the repository exists.", says nothing)."""
    options = list(args[1:])
    if "--end-of-options" in options:
        options = options[options.index("--end-of-options") + 1 :]
    source = next((a for a in options if not a.startswith("-")), "")
    url = run(
        ["config", "--get", f"remote.{source}.url"],
        cwd=cwd,
        purpose=f"read the URL of remote {source}",
        check=False,
    ).out.strip()
    where = f"{source} ({url})" if url and url != source else source
    said = git_said(result.err) or f"exit status {result.returncode}"
    if rejected := rejected_refs(result.err):
        said = "rejected " + ", ".join(rejected)
    error = GitError(
        purpose,
        result.argv,
        result.returncode,
        result.err,
        hint=f"check that {url or source} is reachable and the remote is right "
        "(git remote -v), then run the command again",
    )
    error.message = f"git could not fetch from {where}: {said}"
    return error


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


@dataclass(frozen=True)
class MergeTreeResult:
    """What ``git merge-tree --write-tree`` said: clean or not, the tree it wrote (with
    conflict markers when not clean), the conflicted paths and git's messages."""

    clean: bool
    tree: str
    conflicted: tuple[str, ...]
    messages: str


@dataclass
class TempIndex:
    """A throwaway index file; git commands given ``env`` read and write it."""

    git: Git
    path: Path
    env: dict[str, str]

    def run(self, args: Sequence[str], *, purpose: str, **kw: object) -> GitResult:
        return self.git.run(args, purpose=purpose, env=self.env, **kw)  # type: ignore[arg-type]

    def start(self, args: Sequence[str], *, purpose: str) -> Started:
        """Start ``args`` on this index in the background (see :class:`Started`)."""
        return start(args, cwd=self.git.cwd, purpose=purpose, env=self.env)

    def read_tree(self, treeish: str) -> None:
        self.run(["read-tree", treeish], purpose=f"load {treeish} into a temporary index")

    def write_tree(self) -> str:
        return self.run(["write-tree"], purpose="write the temporary index as a tree").out.strip()

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

    def apply_cached(self, paths: Sequence[str], *, purpose: str) -> GitResult:
        """``git apply --cached -v -p1`` of the patch files ``paths`` onto this index, in
        order, all or nothing; the caller reads the result (it is not checked)."""
        return self.run([*APPLY_CACHED_ARGS, *paths], purpose=purpose, check=False)

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


class Git:
    """Typed questions to one repository."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = Path(cwd)
        self._graph: bool | None = None
        # (commit, reverse, paths) -> its diff as commit_patches reads it: each commit's
        # diff is read at most once per run, however many tags the run judges.
        self._diffs: dict[tuple[str, bool, tuple[str, ...] | None], bytes] = {}
        self._changes: dict[tuple[str, tuple[str, ...]], list[tuple[str, frozenset[str]]]] = {}

    # -- running -----------------------------------------------------------------

    def run(
        self,
        args: Sequence[str],
        *,
        purpose: str,
        input: bytes | None = None,
        env: Mapping[str, str] | None = None,
        check: bool = True,
    ) -> GitResult:
        return run(args, cwd=self.cwd, purpose=purpose, input=input, env=env, check=check)

    def out(self, args: Sequence[str], *, purpose: str, input: bytes | None = None) -> str:
        return self.run(args, purpose=purpose, input=input).out.strip()

    # -- repository --------------------------------------------------------------

    def toplevel(self) -> Path:
        res = self.run(["rev-parse", "--show-toplevel"], purpose="find the repository", check=False)
        if not res.ok:
            raise FatalError(
                f"{self.cwd} is not inside a git repository",
                "run forktool inside the fork's git checkout, or pass -C DIR",
            )
        return Path(res.out.strip())

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

    def head(self) -> str | None:
        return self.try_resolve("HEAD")

    def remotes(self) -> list[str]:
        return self.out(["remote"], purpose="list remotes").split()

    def remote_urls(self, remote: str) -> list[str]:
        """Every URL git would fetch ``remote`` from (after ``insteadOf`` rewriting)."""
        res = self.run(
            ["remote", "get-url", "--all", "--end-of-options", remote],
            purpose=f"read the URL of remote {remote}",
            check=False,
        )
        return res.out.splitlines() if res.ok else []

    def remote_url(self, remote: str) -> str | None:
        """The URL ``remote`` fetches from (``insteadOf`` rewrites applied), or None."""
        if remote.startswith("-") or remote not in self.remotes():
            return None
        urls = self.remote_urls(remote)
        return urls[0] if urls else None

    # -- objects and refs --------------------------------------------------------

    def symbolic_target(self, ref: str) -> str | None:
        """The ref that the symbolic ref ``ref`` points to (``refs/remotes/upstream/HEAD``
        -> ``refs/remotes/upstream/master``); None when ``ref`` is not a symbolic ref."""
        res = self.run(
            ["symbolic-ref", "--quiet", "--end-of-options", ref],
            purpose=f"read where {ref} points",
            check=False,
        )
        return (res.out.strip() or None) if res.ok else None

    def try_resolve(self, rev: str, kind: str = "commit") -> str | None:
        """The object ``rev`` names, peeled to ``kind``, or None if there is none."""
        if rev.startswith("-") or "\0" in rev:
            return None
        res = self.run(
            ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{{kind}}}"],
            purpose=f"resolve {rev}",
            check=False,
        )
        return res.out.strip() if res.ok else None

    def resolve_commit(self, rev: str, *, what: str = "revision") -> str:
        oid = self.try_resolve(rev)
        if oid is None:
            found = self.try_resolve(rev, kind="object")
            if found is not None:
                kind = self.object_types([found]).get(found) or "object"
                raise FatalError(f"{what} '{rev}' is a {kind}, not a commit")
            self.require_objects()
            raise FatalError(
                f"unknown {what} '{rev}'",
                "fetch it first (git fetch <remote> --tags), or check the spelling",
            )
        return oid

    def tag_commit(self, tag: str) -> str | None:
        """The commit an existing tag peels to, or None if there is no such tag (a
        revision expression such as ``v1.3.0~2`` names no tag)."""
        if is_revision_expression(tag):
            return None
        if not self.try_resolve(f"refs/tags/{tag}", kind="object"):
            return None
        return self.try_resolve(f"refs/tags/{tag}")

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

    def peel_tag(self, tag: str) -> str:
        if is_revision_expression(tag):
            raise FatalError(
                f"'{tag}' is a revision expression, not a tag: a tag (refs/tags/...) is needed",
                "name a tag (git tag --list); to judge another commit, tag it first",
            )
        oid = self.tag_commit(tag)
        if oid is None:
            self.require_objects()
            raise FatalError(
                f"unknown tag '{tag}'",
                "fetch upstream tags (git fetch <upstream-remote> --tags) or pass --fetch",
            )
        return oid

    def list_tags(self, pattern: str | None = None) -> list[str]:
        args = ["tag", "--list"]
        if pattern:
            args.append(pattern)
        return [t for t in self.out(args, purpose="list tags").splitlines() if t]

    def tag_commits(self, pattern: str | None = None) -> dict[str, str]:
        """Every tag (matching ``pattern``) mapped to the commit it peels to, in two calls.

        ``%(*objectname)`` peels one level only: a tag of a tag (of a tag...) is peeled
        fully by one ``cat-file --batch-check`` of ``refs/tags/NAME^{commit}``. A tag
        of a tree or a blob names no commit and is left out.
        """
        fmt = "%(refname:strip=2)%00%(objectname)%00%(*objectname)%00%(objecttype)%00%(*objecttype)"
        args = ["for-each-ref", f"--format={fmt}", "refs/tags/" + (pattern or "")]
        if pattern and not any(c in pattern for c in "*?["):
            args[-1] = f"refs/tags/{pattern}"
        out = self.run(args, purpose="list tags").out
        peeled_to: dict[str, str | None] = {}
        for line in out.splitlines():
            name, oid, peeled, otype, ptype = line.split("\0")
            if otype == "commit":
                peeled_to[name] = oid
            elif ptype == "commit":
                peeled_to[name] = peeled
            elif ptype == "tag":
                peeled_to[name] = None  # a tag of a tag: peeled below
        nested = [f"refs/tags/{name}^{{commit}}" for name, oid in peeled_to.items() if oid is None]
        found = self.resolve_names(nested)
        result: dict[str, str] = {}
        for name, known in peeled_to.items():
            hit = found.get(f"refs/tags/{name}^{{commit}}") if known is None else (known, "commit")
            if hit is not None and hit[1] == "commit":
                result[name] = hit[0]
        return result

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

    # -- ancestry: the one rule ----------------------------------------------------

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

    def blob(self, rev: str, path: str) -> bytes | None:
        res = self.run(
            ["cat-file", "blob", f"{rev}:{path}"], purpose=f"read {path} at {rev}", check=False
        )
        return res.stdout if res.ok else None

    # -- temporary indexes -------------------------------------------------------

    @contextmanager
    def temp_index(
        self, treeish: str | None = None, *, keep_objects: bool = False
    ) -> Iterator[TempIndex]:
        """An index file of our own, removed afterwards (also on Ctrl-C).

        Unless ``keep_objects``, the blobs and trees git writes while we work go to a
        private object directory that is deleted too, so a read-only command leaves
        the repository byte-identical.
        """
        tmpdir = Path(tempfile.mkdtemp(prefix="forktool-index-"))
        try:
            env = {"GIT_INDEX_FILE": str(tmpdir / "index")}
            if not keep_objects:
                objects = self.out(
                    ["rev-parse", "--git-path", "objects"], purpose="find the object store"
                )
                (tmpdir / "objects").mkdir()
                env["GIT_OBJECT_DIRECTORY"] = str(tmpdir / "objects")
                env["GIT_ALTERNATE_OBJECT_DIRECTORIES"] = str((self.cwd / objects).resolve())
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
        tmpdir = Path(tempfile.mkdtemp(prefix="forktool-index-"))
        try:
            real = self.cwd / self.out(
                ["rev-parse", "--git-path", "index"], purpose="find the index"
            )
            if real.is_file():
                shutil.copyfile(real, tmpdir / "index")
            yield TempIndex(self, tmpdir / "index", {"GIT_INDEX_FILE": str(tmpdir / "index")})
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)

    # -- pins and alignment --------------------------------------------------------

    def check_ref_format(self, ref: str) -> bool:
        """Whether ``ref`` (a full ref name such as ``refs/tags/v1``) is a valid ref name."""
        if ref.startswith("-") or "\0" in ref:
            return False
        return self.run(
            ["check-ref-format", ref], purpose=f"check the ref name {ref!r}", check=False
        ).ok

    def fetch_tag(self, remote: str, tag: str) -> None:
        """Fetch one tag from ``remote`` (never overwriting a local tag of that name)."""
        self.run(
            [
                "fetch",
                "--no-tags",
                "--end-of-options",
                remote,
                f"refs/tags/{tag}:refs/tags/{tag}",
            ],
            purpose=f"fetch tag {tag} from {remote}",
        )

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

    def tracked_paths(self, rev: str) -> list[str]:
        """Every file path in ``rev``'s tree (recursively, full tree)."""
        out = self.run(
            ["ls-tree", "-r", "-z", "--full-tree", "--name-only", rev],
            purpose=f"list the files of {rev}",
        ).out
        return [path for path in out.split("\0") if path]

    def count_commits(self, include: str, exclude: str) -> int:
        """How many commits ``include`` has that ``exclude`` does not."""
        return int(
            self.out(
                ["rev-list", "--count", include, f"^{exclude}"],
                purpose=f"count the commits in {include} not in {exclude}",
            )
        )

    # -- images and frozen releases ----------------------------------------------

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

    def uncommitted(self, pathspecs: Sequence[str], exclude: Sequence[str] = ()) -> list[str]:
        """Paths under ``pathspecs`` (from the top) that differ from HEAD or are untracked."""
        specs = [f":(top,literal){p}" for p in pathspecs]
        specs += [f":(top,literal,exclude){p}" for p in exclude]
        out = self.run(
            ["status", "--porcelain=v1", "-z", "--untracked-files=all", "--", *specs],
            purpose="list uncommitted changes to the fork's files",
        ).out
        return [entry[3:] for entry in out.split("\0") if len(entry) > 3 and entry[2] == " "]

    def local_config(self, key: str) -> str | None:
        """A value from the repository's own config (global and system config are off)."""
        res = self.run(["config", "--local", "--get", key], purpose=f"read {key}", check=False)
        return (res.out.strip() or None) if res.ok else None

    def annotated_tag(self, name: str) -> tuple[str, str] | None:
        """(commit, message) of the annotated tag ``name``; None when there is no such tag.

        A lightweight tag yields an empty message.
        """
        commit = self.tag_commit(name)
        if commit is None:
            return None
        res = self.run(
            ["cat-file", "-p", f"refs/tags/{name}"], purpose=f"read tag {name}", check=False
        )
        if not res.ok or not res.out.startswith("object "):
            return commit, ""
        _header, _, message = res.out.partition("\n\n")
        return commit, message

    def create_annotated_tag(
        self, name: str, commit: str, message: str, identity: Mapping[str, str]
    ) -> None:
        """``git tag -a``; ``identity`` carries GIT_COMMITTER_NAME/EMAIL (the tagger)."""
        self.run(
            ["tag", "-a", "--cleanup=verbatim", "-F", "-", "--end-of-options", name, commit],
            purpose=f"create tag {name}",
            input=message.encode("utf-8"),
            env=identity,
        )

    # -- retirement: absorbed and retire ---------------------------------------------

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

    def fetch(self, source: str, refspecs: Sequence[str], *, unshallow: bool = False) -> None:
        """Fetch exactly ``refspecs`` (tags, commit ids) from ``source`` (a remote or a
        URL): no tag is followed or taken beyond them (``--no-tags`` also overrides a
        remote's ``tagOpt``); refspecs go on stdin, so a thousand tags fit. Not
        ``--quiet``: git names each ref it rejects only when it may speak."""
        args = ["fetch", "--no-auto-gc", "--no-tags", "--no-write-fetch-head", "--stdin"]
        if unshallow:
            args.append("--unshallow")
        self.run(
            [*args, "--end-of-options", source],
            purpose=f"fetch from {source}",
            input="".join(f"{r}\n" for r in refspecs).encode(),
        )

    def remote_tags(self, source: str) -> dict[str, str]:
        """Every tag of ``source`` and the commit it peels to (``ls-remote``, no objects
        fetched)."""
        return self.remote_tag_commits(source, ())

    def remote_head_branch(self, source: str) -> str | None:
        """The branch ``source``'s HEAD names (``ls-remote --symref``), None when it cannot
        be read (no network, no such remote, a detached HEAD)."""
        res = self.run(
            ["ls-remote", "--symref", "--end-of-options", source, "HEAD"],
            purpose=f"read the default branch of {source}",
            check=False,
        )
        for line in res.out.splitlines() if res.ok else ():
            ref, _, name = line.partition("\t")
            if name == "HEAD" and ref.startswith("ref: refs/heads/"):
                return ref.removeprefix("ref: refs/heads/")
        return None

    def remote_tag_commits(self, source: str, tags: Sequence[str]) -> dict[str, str]:
        """The commit each of ``tags`` peels to on ``source`` (``ls-remote``, no objects
        fetched); a tag ``source`` does not have is absent. No ``tags``: every tag."""
        refs = [f"refs/tags/{t}" for t in tags]
        out = self.out(
            [
                "ls-remote",
                "--tags",
                "--end-of-options",
                source,
                *refs,
                *(f"{r}^{{}}" for r in refs),
            ],
            purpose=f"read tags of {source}",
        )
        found: dict[str, str] = {}
        for line in out.splitlines():
            oid, _, ref = line.partition("\t")
            name = ref.removeprefix("refs/tags/")
            if name.endswith("^{}"):
                found[name[:-3]] = oid  # the peeled commit wins over the tag object
            else:
                found.setdefault(name, oid)
        return found

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

    # -- the release sync ----------------------------------------------------------

    def common_dir(self) -> Path:
        """The repository's shared git directory (the same from every worktree)."""
        out = self.out(["rev-parse", "--git-common-dir"], purpose="find the git directory")
        return (self.cwd / out).resolve()

    def branch_commit(self, name: str) -> str | None:
        return self.try_resolve(f"refs/heads/{name}")

    def worktree_add(self, path: Path, branch: str, start: str) -> None:
        """A new worktree at ``path`` on a new ``branch`` starting at ``start``."""
        faultpoint("git.worktree_add")
        self.run(
            ["worktree", "add", "--quiet", "-b", branch, "--end-of-options", str(path), start],
            purpose=f"create a worktree for {branch}",
        )

    def worktree_remove(self, path: Path) -> None:
        """Remove the worktree at ``path`` and forget it, whatever state it is in."""
        faultpoint("git.worktree_remove")
        self.remove_worktree(path, check=False)
        self.worktree_prune(check=False)

    def remove_worktree(self, path: Path, *, check: bool = True) -> None:
        """``git worktree remove --force``: the directory and its registration."""
        self.run(
            ["worktree", "remove", "--force", str(path)],
            purpose=f"remove the worktree {path}",
            check=check,
        )

    def reset_hard(self, rev: str, *, purpose: str) -> None:
        """Move this worktree's branch (or HEAD), index and files to ``rev``."""
        self.run(["reset", "--quiet", "--hard", rev], purpose=purpose)

    def clean(self, *, purpose: str = "clean the worktree") -> None:
        """Delete every untracked file and directory of this worktree."""
        self.run(["clean", "-fdq"], purpose=purpose)

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

    def delete_branch(self, name: str) -> None:
        faultpoint("git.delete_branch")
        self.run(["branch", "-D", "--end-of-options", name], purpose=f"delete branch {name}")

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

    # -- tracking upstream: upstream resolve, forecast ------------------------------

    def fetch_branch(self, source: str, branch: str, remote: str) -> None:
        """Fetch ``branch`` from ``source`` (a remote or a URL) into
        ``refs/remotes/<remote>/<branch>``."""
        self.run(
            [
                "fetch",
                "--no-tags",
                "--no-write-fetch-head",
                "--end-of-options",
                source,
                f"+refs/heads/{branch}:refs/remotes/{remote}/{branch}",
            ],
            purpose=f"fetch {branch} from {source}",
        )

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

    # -- interrupted runs ----------------------------------------------------------

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
        Git(path).sparse_reset(rev, paths)

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

    def is_valid_branch_name(self, branch: str) -> bool:
        """Whether ``branch`` may name a branch (``check-ref-format --branch``)."""
        if branch.startswith("-") or "\0" in branch:
            return False
        return self.run(
            ["check-ref-format", "--branch", branch], purpose="check the branch name", check=False
        ).ok

    def commit_date_raw(self, rev: str) -> str:
        """``rev``'s committer date as git stores it (``<seconds> <zone>``)."""
        return self.out(
            ["log", "-1", "--format=%cd", "--date=raw", rev], purpose=f"read the date of {rev}"
        )

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

    def create_ref(self, ref: str, new: str, old: str, *, reason: str) -> None:
        """Point ``ref`` at ``new`` if it is still at ``old`` (the zero id: if it does
        not exist), logging ``reason``."""
        self.run(["update-ref", "-m", reason, ref, new, old], purpose=f"create {ref}")

    def patch_id(self, data: bytes) -> str | None:
        """``git patch-id --stable`` of one patch file; None when git reads no diff in it."""
        res = self.run(
            ["patch-id", "--stable"], purpose="compute a patch id", input=data, check=False
        )
        words = res.out.split()
        return words[0] if res.ok and words else None

    # -- a patch branch's history ----------------------------------------------------

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


def is_hex40(text: str) -> bool:
    return bool(HEX40.match(text))


def short(oid: str | None) -> str:
    """A commit id as messages and tables show it: its first 12 hex digits ('-' for none)."""
    return oid[:12] if oid else "-"
