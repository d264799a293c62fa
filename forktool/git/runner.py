"""The runner: the one place forktool starts a process (git, and GNU patch for
patch_tools). No shell, a hardened environment (no system or global config, C
locale, no prompts, every result-changing setting pinned), a failure turned into
a GitError that names what forktool was trying to do, and the ``-v`` observer."""

from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from forktool.errors import FatalError, GitError, git_said
from forktool.fsutil import pid_alive

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


def run_program(argv: Sequence[str], env: Mapping[str, str]) -> subprocess.CompletedProcess[bytes]:
    """A program beside git (GNU patch) with ``env``: no shell, output captured, its
    exit status the caller's to read. FileNotFoundError when it is not installed."""
    return subprocess.run(list(argv), capture_output=True, env=dict(env), check=False)  # noqa: S603


def git_argv(args: Sequence[str]) -> list[str]:
    argv = ["git"]
    for setting in _CONFIG_OVERRIDES:
        argv += ["-c", setting]
    argv += list(args)
    return argv


class GitResult(NamedTuple):
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


def note_missing_commit_graph(git: Runner) -> None:
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


# Temporary indexes, the objects git writes into them and git's captured output are
# many small files: on a journaled disk each costs a fraction of a millisecond to
# create (hundreds for one verify), in RAM a few microseconds. They go to RAM when the
# machine offers a RAM-backed directory with room to spare, unless TMPDIR says where.
RAM_SCRATCH = Path("/dev/shm")


RAM_SCRATCH_MIN_FREE = 1 << 30


def scratch_root() -> str:
    """Where temporary indexes and git's output files go: TMPDIR when it is set; else
    :data:`RAM_SCRATCH` when it is a writable directory with
    :data:`RAM_SCRATCH_MIN_FREE` bytes free; else the system's temporary directory."""
    if not os.environ.get("TMPDIR"):
        try:
            info = os.statvfs(RAM_SCRATCH)
            if (
                info.f_bavail * info.f_frsize >= RAM_SCRATCH_MIN_FREE
                and RAM_SCRATCH.is_dir()
                and os.access(RAM_SCRATCH, os.W_OK | os.X_OK)
            ):
                return str(RAM_SCRATCH)
        except OSError:
            pass
    return tempfile.gettempdir()


def scratch_dir(kind: str) -> Path:
    """A new private directory under :func:`scratch_root`, named for this process
    (``<kind>-<pid>-...``); the caller removes it. Directories of this kind that a
    killed forktool run left there (its process gone) are removed first: in RAM they
    would otherwise hold memory until the machine restarts."""
    root = Path(scratch_root())
    _sweep_scratch(root, kind)
    made = Path(tempfile.mkdtemp(prefix=f"{kind}-{os.getpid()}-", dir=root))
    if not _made:
        atexit.register(_remove_made)
    _made.append(made)
    return made


# Every scratch directory this process made. Its caller removes it, but a Ctrl-C can
# land in that removal, or a worker thread's git can still write into it (recreating
# it) after the caller has gone: at exit, once worker threads are joined (atexit runs
# after that), whatever is left of them goes too.
_made: list[Path] = []


def _remove_made() -> None:
    for path in _made:
        shutil.rmtree(path, ignore_errors=True)


_SCRATCH_PID = re.compile(r"-(\d+)-[^-]+$")


def _sweep_scratch(root: Path, kind: str) -> None:
    try:
        names = [name for name in os.listdir(root) if name.startswith(kind + "-")]
    except OSError:
        return
    for name in names:
        found = _SCRATCH_PID.search(name[len(kind) :])
        if found is None or (pid := int(found.group(1))) == os.getpid() or pid_alive(pid):
            continue
        path = root / name
        if path.is_dir() and not path.is_symlink() and path.stat().st_uid == os.getuid():
            shutil.rmtree(path, ignore_errors=True)


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


STOP_GRACE_SECONDS = 2.0  # a git told to stop has this long before it is killed


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
        self._result: GitResult | None = None
        cwd, env = _attribute_free(args, cwd, env)
        # Output goes to files, not pipes: a pipe nobody reads would stop git once full.
        root = scratch_root()
        self._out = tempfile.TemporaryFile(dir=root)
        self._err = tempfile.TemporaryFile(dir=root)
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

    def exited(self) -> None:
        """Block until git has exited (for a thread that waits on it while another may
        stop it: ``Popen`` collects a process once, whichever thread gets there first)."""
        self._proc.wait()

    def wait(self, *, check: bool = True) -> GitResult:
        """git's result, once it is done (waited for once; later calls give it again)."""
        result = self._result
        if result is None:
            try:
                returncode = self._proc.wait()
                self._out.seek(0)
                self._err.seek(0)
                result = GitResult(self.argv, returncode, self._out.read(), self._err.read())
            finally:
                self._close()
            self._result = result
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
            # SIGTERM first: git removes the lock files it holds (an index.lock) on it.
            self._proc.terminate()
            try:
                self._proc.wait(timeout=STOP_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
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


class Runner:
    def __init__(self, cwd: Path) -> None:
        self.cwd = Path(cwd)
        self._graph: bool | None = None
        self._objects: Path | None = None  # the object directory, once asked for
        self._top: Path | None = None  # the work tree's top level, once asked for
        # rev^{kind} -> the object it named, resolved with the top level (toplevel's
        # ``resolving``): the next find_object of it takes the answer, once.
        self._resolved: dict[str, str | None] = {}
        # (commit, reverse, paths) -> its diff as commit_patches reads it: each commit's
        # diff is read at most once per run, however many tags the run judges.
        self._diffs: dict[tuple[str, bool, tuple[str, ...] | None], bytes] = {}
        self._changes: dict[tuple[str, tuple[str, ...]], list[tuple[str, frozenset[str]]]] = {}

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
