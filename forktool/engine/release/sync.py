"""``sync TAG``: the release procedure, started, continued and aborted.

A sync is planned (:mod:`.sync_plan`), run stage by stage in a worktree of its own
(:mod:`.sync_run`, the merge's tree in :mod:`.sync_merge`), resumable from its state
(:mod:`.sync_state`), and reported (:mod:`.sync_report`). This module holds what
begins and ends one: what refuses to start, the roll-back of a start that fails,
``--continue`` and ``--abort``.
"""

from __future__ import annotations

import json
import secrets
import signal
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from forktool.config import Config, load_config, parse_config
from forktool.engine.patches.refresh_resolution import refresh_abort
from forktool.engine.patches.refresh_state import load_state as load_refresh_state
from forktool.engine.release.sync_report import SyncReport
from forktool.engine.release.sync_run import (
    CommitIdentity,
    Progress,
    ReportWriter,
    commit_identity,
    drive,
    remove_worktrees,
)
from forktool.engine.release.sync_state import (
    SyncState,
    drop_state,
    load_sync_state,
    report_dir,
    require_stage,
    save_state,
)
from forktool.engine.release.tarball import import_tarballs
from forktool.engine.revisions import Upstream, resolve
from forktool.errors import FatalError, Interrupted, command_line, rolled_back
from forktool.fork import Fork, load_fork
from forktool.git import Git
from forktool.model.record import has_markers, parse_record
from forktool.model.revision import Revision

Notice = Callable[[str], None]


def default_branch(tag: str) -> str:
    return f"forktool/sync-{tag}"


# -- what stops a sync before it starts ---------------------------------------------------


def sync_blockers(
    fork: Fork, git: Git, tag: str, plan: SyncReport, env: Mapping[str, str]
) -> tuple[str, ...]:
    """Why ``sync TAG`` would refuse to start here, each as "what: how to fix it"
    (empty when it can start). The tag itself was resolved by the caller."""
    config = fork.config
    blockers: list[str] = []
    state = load_sync_state(git)
    if state is not None:
        blockers.append(
            f"a sync to {state.tag} is in progress on {state.branch} (stopped at "
            f"{state.stage}): finish it with 'forktool sync --continue' or drop it with "
            "'forktool sync --abort'"
        )
    name = default_branch(tag)
    if git.branch_commit(name) is not None and _already_synced(config, git, name, tag) is None:
        blockers.append(
            f"branch '{name}' already exists and is not a finished sync to {tag}: "
            f"delete it ({command_line('git', 'branch', '-D', name)})"
        )
    checks: list[Callable[[], object]] = [
        lambda: commit_identity(git, env),
        lambda: _refuse_uncommitted(config, git),
        lambda: _refuse_undeclared(config, git),
    ]
    if plan.retired:
        checks.append(lambda: _record_markers(config))
    for check in checks:
        try:
            check()
        except FatalError as exc:
            blockers.append(f"{exc.message}: {exc.hint}" if exc.hint else exc.message)
    return tuple(blockers)


def _record_markers(config: Config) -> None:
    """Retiring writes the record: markers that are there must be sound (a missing
    section is added by the retirement itself)."""
    path = config.record_path
    if not path.is_file():
        return
    text = path.read_text(encoding="utf-8", errors="replace")
    if has_markers(text):
        parse_record(text, config.record)


def _refuse_in_progress(git: Git) -> None:
    existing = load_sync_state(git)
    if existing is not None:
        raise FatalError(
            f"a sync to {existing.tag} is in progress on {existing.branch} (stopped at {existing.stage})",
            "finish it with 'forktool sync --continue' or drop it with 'forktool sync --abort'",
        )


def _refuse_branch(config: Config, git: Git, name: str, tag: str) -> None:
    """The sync's branch must be new, and the fork not pinned to TAG already."""
    if git.branch_commit(name) is not None:
        raise FatalError(
            f"branch '{name}' already exists and is not a finished sync to {tag}",
            f"delete it ({command_line('git', 'branch', '-D', name)}) or pass --branch NAME",
        )
    if config.pin_tag == tag:
        raise FatalError(f"the fork is already pinned to {tag}", "nothing to sync")


def _refuse_undeclared(config: Config, git: Git) -> None:
    """The merge keeps the tag's tree and the fork's declared files (merged layout):
    a file the fork adds that the ledger does not declare (a committed ``debian/``,
    say) would be dropped from the sync branch without a word, so it stops the sync
    before anything starts."""
    if config.layout != "merged":
        return
    from forktool.engine.release.align import align

    added = [c.path for c in align(config, git).changes if c.kind == "added" and not c.declared]
    if added:
        shown = ", ".join(added[:5]) + (f" and {len(added) - 5} more" if len(added) > 5 else "")
        raise FatalError(
            f"{len(added)} file(s) the fork adds are not declared in {config.ledger}: "
            f"{shown}; the merge keeps only the fork's declared files, so the sync would "
            "drop them",
            "declare them ('forktool check --only align' gives the line to add, e.g. "
            "'add debian/** permanent <why>'), commit, then sync again",
        )


def _refuse_uncommitted(config: Config, git: Git) -> None:
    """The sync branch starts from HEAD: uncommitted edits to the fork's files would be
    silently left out of it, so they stop the sync before anything starts."""
    own = [*config.own_paths(), *(config.file(s.file) for s in config.pin_sites)]
    dirty = git.status_entries(own)
    if dirty:
        raise FatalError(
            f"uncommitted changes to the fork's files: {', '.join(dirty[:5])}"
            + (" ..." if len(dirty) > 5 else ""),
            "commit or stash them first: the sync branch starts from HEAD",
        )


def next_tarball(
    config: Config, git: Git, revision: Revision, tarballs: Sequence[Path]
) -> str | None:
    """The tag's release tarball imported (its commit), or None without tarballs; a fork
    that pins a release tarball cannot move to a tag without one (exit 2)."""
    tag = revision.name
    if tarballs:
        return import_tarballs(config, git, tarballs, revision).commit
    if config.pin_import is not None:
        raise FatalError(
            f"the fork pins the release tarball of {config.pin_tag} (pin.import_commit): "
            f"a sync to {tag} needs {tag}'s release tarball",
            f"forktool sync {tag} --tarball FILE... (the orig tarball and any component tarballs)",
        )
    return None


# -- start, continue, abort -------------------------------------------------------------


def start_sync(
    config: Config,
    git: Git,
    tag: str,
    *,
    branch: str | None,
    fetch: bool,
    env: Mapping[str, str],
    progress: Progress | None = None,
    notice: Notice | None = None,
    markdown: ReportWriter | None = None,
    tarballs: Sequence[Path] = (),
) -> SyncReport:
    """Begin a sync of ``tag`` on a new branch and run it as far as it goes; ``markdown``
    renders the report.md written beside report.json when it finishes. ``tarballs``:
    ``tag``'s release tarball (and components), imported first; required when the fork
    pins a release tarball."""
    _refuse_in_progress(git)
    upstream = Upstream.of(config, "--no-fetch", fetch=fetch, notice=notice)
    revision = resolve(git, tag, upstream=upstream, pinning=True)
    tag_commit = revision.commit
    name = branch or default_branch(tag)
    done = _already_synced(config, git, name, tag)
    if done is not None:
        return done
    _refuse_branch(config, git, name, tag)
    identity = commit_identity(git, env)
    _refuse_uncommitted(config, git)
    _refuse_undeclared(config, git)
    tree_commit = next_tarball(config, git, revision, tarballs)
    state = _new_state(config, git, tag, tag_commit, name, tree_commit)
    return _run_or_roll_back(git, state, identity, progress, markdown)


def _new_state(
    config: Config, git: Git, tag: str, tag_commit: str, branch: str, tree_commit: str | None
) -> SyncState:
    """The state of a sync about to begin: at its first stage, from HEAD, in a new
    temporary worktree (not made yet)."""
    start = git.require_commit("HEAD")
    fork_dir = config.root.resolve().relative_to(git.toplevel().resolve()).as_posix()
    worktree = Path(tempfile.gettempdir()) / f"forktool-sync-{secrets.token_hex(6)}" / "wt"
    report = SyncReport(
        tag, tag_commit, config.pin_tag, branch, "retire", merge_tag=config.layout == "merged"
    )
    previous_import = config.pin_import
    if previous_import is None or not git.is_ancestor(previous_import, start):
        previous_import = None  # the branch merged the bare tag: keep merging tags
    return SyncState(
        tag,
        tag_commit,
        branch,
        str(worktree),
        start,
        "retire",
        "" if fork_dir == "." else fork_dir,
        report,
        tree_commit,
        previous_import,
    )


def _run_or_roll_back(
    git: Git,
    state: SyncState,
    identity: CommitIdentity,
    progress: Progress | None,
    markdown: ReportWriter | None,
) -> SyncReport:
    """Run a new sync; if it fails (exit 2) or is interrupted, undo all it made."""
    try:
        # The state is saved before the worktree and the branch exist, so whenever this
        # run is cut short, 'sync --continue' re-creates them and 'sync --abort' removes them.
        save_state(git, state)
        return drive(git, state, identity, progress, markdown=markdown)
    except FatalError as exc:
        # Exit 2 changes nothing: undo what this run made (worktree, branch, state).
        _roll_back(git)
        raise rolled_back(
            exc, "the sync was rolled back: no branch, worktree or state is left"
        ) from exc
    except KeyboardInterrupt:
        # Ctrl-C on a sync that only just began: put everything back as it was.
        _roll_back(git)
        raise Interrupted(
            "interrupted; the sync was rolled back: no branch, worktree or state is left"
        ) from None


def _roll_back(git: Git) -> None:
    with _signals_held():
        if load_sync_state(git) is not None:
            abort_sync(git)


@contextmanager
def _signals_held() -> Iterator[None]:
    """Let a second Ctrl-C not cut the roll-back of the first one short."""
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def continue_sync(
    git: Git,
    *,
    env: Mapping[str, str],
    progress: Progress | None = None,
    markdown: ReportWriter | None = None,
    drop_files: Sequence[str] = (),
) -> SyncReport:
    """Resume a stopped sync; ``drop_files``: the files of the conflicting patch its
    resolution leaves out on purpose (``--drop-file``)."""
    state = load_sync_state(git)
    if state is None:
        raise FatalError("no sync is in progress", "start one with 'forktool sync TAG'")
    require_stage(git, state)
    return drive(
        git,
        state,
        commit_identity(git, env),
        progress,
        resume=True,
        markdown=markdown,
        drop_files=tuple(drop_files),
    )


def abort_sync(git: Git) -> SyncReport:
    """Remove the sync's worktree, branch and state: everything as before the sync."""
    state = load_sync_state(git)
    if state is None:
        raise FatalError("no sync is in progress", "nothing to abort")
    wt = Git(Path(state.worktree))
    fork_root = Path(state.worktree) / state.fork_dir
    if (fork_root / "forktool.yaml").is_file() and load_refresh_state(wt) is not None:
        refresh_abort(load_fork(load_config(fork_root / "forktool.yaml"), strict=False), wt)
    remove_worktrees(git, state)
    if git.branch_commit(state.branch) is not None:
        git.delete_branch(state.branch)
    drop_state(git)
    return replace(
        state.report,
        stage=state.stage,
        message=f"sync to {state.tag} aborted: branch {state.branch} and its worktree removed",
    )


def _already_synced(config: Config, git: Git, branch: str, tag: str) -> SyncReport | None:
    """The report of a finished sync to ``tag`` on ``branch`` (the branch pins it), else None."""
    tip = git.branch_commit(branch)
    if tip is None:
        return None
    rel = config.path.resolve().relative_to(git.toplevel().resolve()).as_posix()
    text = git.blob(tip, rel)
    try:
        pinned = parse_config(text.decode("utf-8"), config.path).pin_tag if text else None
    except (FatalError, UnicodeDecodeError):
        pinned = None
    if pinned != tag:
        return None
    message = f"already synced: {branch} pins {tag}; nothing to do"
    report = _finished_report(report_dir(git, tag, branch) / "report.json")
    if report is not None:
        return replace(report, stage="done", message=message)
    return SyncReport(
        tag,
        resolve(git, tag, upstream=Upstream.of(config)).commit,
        config.pin_tag,
        branch,
        "done",
        message=message,
    )


def _finished_report(path: Path) -> SyncReport | None:
    """A finished sync's report.json read back; None when there is none, or when it
    cannot be read (the branch itself says the sync is done)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return SyncReport.from_json(data) if isinstance(data, dict) else None
    except (OSError, ValueError, KeyError, TypeError):
        return None
