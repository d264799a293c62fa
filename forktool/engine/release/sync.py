"""sync"""

from __future__ import annotations

import json
import secrets
import shlex
import shutil
import signal
import tempfile
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from forktool.config import Config, load_config, parse_config
from forktool.engine.patches.refresh import (
    RefreshEntry,
    Series,
    plan_refresh,
    refresh_abort,
    refresh_continue,
    refresh_onto,
)
from forktool.engine.patches.refresh import (
    load_state as load_refresh_state,
)
from forktool.engine.release.check import (
    NO_PR_HINT,
    GateResult,
    no_pr_line,
    run_checks,
    select_checks,
)
from forktool.engine.release.pin_bump import plan_bump
from forktool.engine.release.pin_state import require_tree
from forktool.engine.release.sync_state import (
    PinChange,
    Retired,
    Stage,
    SyncReport,
    SyncState,
    _drop_state,
    _report_from_json,
    _save_state,
    load_sync_state,
    report_dir,
)
from forktool.engine.release.tarball import carried_files, import_tarballs
from forktool.engine.retirement.absorbed import AbsorbedResult, absorbed
from forktool.engine.retirement.retire import record_date, retire, witnesses
from forktool.engine.revisions import Upstream, resolve
from forktool.errors import FatalError, Interrupted, command_line, rolled_back
from forktool.faults import faultpoint
from forktool.fork import Fork, load_fork
from forktool.fsutil import write_files
from forktool.git import Git
from forktool.model.ledger import Ledger
from forktool.model.record import has_markers, parse_record
from forktool.model.revision import Revision

Progress = Callable[[str], None]  # told the name of each stage as it starts


ReportWriter = Callable[["SyncReport"], str]


Notice = Callable[[str], None]


# Verdicts a human decides on at each new release: the witnesses disagree (revisit), or
# the patch waits for an upstream change that this release may carry (pending).
HUMAN_VERDICTS = ("revisit", "pending")


def default_branch(tag: str) -> str:
    return f"forktool/sync-{tag}"


def _already_on(entry: RefreshEntry) -> bool:
    return entry.message.startswith("already applied")


def _retired_entry(report: AbsorbedResult, name: str) -> Retired:
    """The report's line for a retired patch: the same witnesses the record gets."""
    verdict = report.patch(name)
    return Retired(
        name, verdict.upstream_commits, verdict.first_release, witnesses(verdict, report.tag, None)
    )


def _kept(report: AbsorbedResult, names: set[str]) -> tuple[dict[str, object], ...]:
    return tuple(p.to_json() for p in report.patches if p.patch not in names)


def plan_sync(fork: Fork, git: Git, revision: Revision, tree: str | None = None) -> SyncReport:
    """What ``sync TAG`` would do: retire, refresh, bump. Nothing is written. ``tree``:
    TAG's release tarball import, the tree the refresh is planned on (a tarball-import
    pin without one is planned on the tag, with a note saying so)."""
    tag, tag_commit = revision.name, revision.commit
    report = absorbed(fork, git, revision)
    retiring = {p.patch for p in report.retirable()}
    kept = [p for p in fork.patches if p.name not in retiring]
    onto = (f"{tag}+tarball", tree) if tree else (tag, tag_commit)
    carried = carried_files(fork.config, git, tag_commit) if tree is None else ()
    series = Series.of(fork, fork.config.pin_commit, kept)
    refreshed = (
        tuple(plan_refresh(git, onto[0], series, onto_commit=onto[1], carried=carried))
        if kept
        else ()
    )
    bump = plan_bump(fork.config, git, revision, dry_run=True, tree=tree)
    present = {e.patch for e in refreshed if e.status == "conflict" and _already_on(e)}
    conflicts = tuple(
        f"{e.patch}: {e.message}"
        for e in refreshed
        if e.status == "conflict" and e.patch not in present
    )
    decisions = already_carried(_kept(report, retiring), present)
    notes = human_notes(_kept(report, retiring))
    if decisions:
        notes += (decision_note(decisions, tag),)
    if fork.config.pin_import is not None and tree is None:
        notes += (
            f"the fork pins a release tarball: the refresh was planned on the tag {tag} "
            "with the files the pinned tarball adds to its tag; sync with '--tarball "
            f"FILE...' ({tag}'s release tarball)",
        )
    return SyncReport(
        tag=tag,
        tag_commit=tag_commit,
        previous_tag=fork.config.pin_tag,
        branch=None,
        stage="retire",
        retired=tuple(_retired_entry(report, name) for name in sorted(retiring)),
        kept=_kept(report, retiring),
        refreshed=refreshed,
        pins=tuple(PinChange(e.file, e.line, e.old, e.new) for e in bump.edits),
        conflicts=conflicts,
        notes=notes,
        dry_run=True,
        message="DRY RUN: nothing was written",
        merge_tag=fork.config.layout == "merged",
        decisions=decisions,
        decide=decision_command(decisions, tag) if decisions else "",
    )


def human_notes(kept: tuple[dict[str, object], ...]) -> tuple[str, ...]:
    """A note per patch a human decides on (``revisit``; ``pending`` with its PR), and one
    note for every pending patch with no PR named (a distribution's own patches, often:
    one line however many, not one on every sync for each)."""
    notes = []
    silent = []
    for entry in kept:
        if entry.get("verdict") not in HUMAN_VERDICTS:
            continue
        if entry.get("verdict") == "pending" and not entry.get("upstream_pr"):
            silent.append(str(entry.get("patch")))
            continue
        notes.append(f"{entry.get('patch')}: {entry.get('verdict')}: {entry.get('reason', '')}")
    if silent:
        notes.append(f"{no_pr_line(silent)}: waiting for an upstream change ({NO_PR_HINT})")
    return tuple(notes)


def already_carried(
    kept: tuple[dict[str, object], ...],
    present: Collection[str] = (),
) -> tuple[str, ...]:
    """The kept patches whose change the tag already carries (they reverse-apply exactly
    there, ancestry did not retire them), in series order: ``present`` (refresh found
    them) and every other the absorbed evidence shows, so one round decides them all."""
    found = []
    for entry in kept:
        evidence = entry.get("evidence")
        shown = isinstance(evidence, list) and any(
            isinstance(e, dict) and e.get("kind") == "content-present" for e in evidence
        )
        if shown or entry.get("patch") in present:
            found.append(str(entry.get("patch")))
    return tuple(found)


def decision_command(names: tuple[str, ...], tag: str) -> str:
    """The one command that records every decision: retire them together, with a reason."""
    quoted = " ".join(shlex.quote(name) for name in names)
    return f"forktool retire {quoted} --tag {shlex.quote(tag)} --force --reason '...'"


def decision_note(names: tuple[str, ...], tag: str) -> str:
    return (
        f"{len(names)} patch(es) already on {tag} (each reverse-applies exactly there, but no "
        f"mapped commit proves it): {', '.join(names)}; record every decision at once, before "
        f"the sync: {decision_command(names, tag)} (or map their upstream commits: forktool "
        "upstream resolve --write, forktool map suggest --write)"
    )


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


@dataclass
class _Run:
    """One sync in its worktree: where things are and how to commit there."""

    main: Git
    wt: Git
    fork_root: Path
    identity: dict[str, str]
    state: SyncState
    progress: Progress | None = None
    commits: list[str] = field(default_factory=list)
    markdown: ReportWriter | None = None  # writes report.md (a renderer, passed in)
    drop_files: tuple[str, ...] = ()  # sync --continue --drop-file: confirmed dropped files

    def config(self) -> Config:
        return load_config(self.fork_root / "forktool.yaml")

    def fork(self) -> Fork:
        return load_fork(self.config(), strict=True)

    def commit(self, message: str) -> None:
        commit = self.wt.commit_all(message, self.identity)
        if commit is not None:
            self.commits.append(commit)

    def advance(self, stage: Stage, **changes: object) -> None:
        report = replace(self.state.report, stage=stage, commits=tuple(self.commits), **changes)  # type: ignore[arg-type]
        self.state = replace(self.state, stage=stage, report=report)
        _save_state(self.main, self.state)


def commit_identity(git: Git, env: Mapping[str, str]) -> dict[str, str]:
    """Author and committer for the sync's commits: env first, then the repo's user.*."""
    name = (
        env.get("GIT_AUTHOR_NAME") or env.get("GIT_COMMITTER_NAME") or git.local_config("user.name")
    )
    email = (
        env.get("GIT_AUTHOR_EMAIL")
        or env.get("GIT_COMMITTER_EMAIL")
        or git.local_config("user.email")
    )
    if not name or not email:
        raise FatalError(
            "sync commits on a new branch and needs an identity",
            "set user.name and user.email in this repository (git config user.name ...), "
            "or GIT_AUTHOR_NAME and GIT_AUTHOR_EMAIL",
        )
    identity = {
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_COMMITTER_NAME": name,
        "GIT_COMMITTER_EMAIL": email,
    }
    for key in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):
        if env.get(key):
            identity[key] = env[key]
    return identity


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
    existing = load_sync_state(git)
    if existing is not None:
        raise FatalError(
            f"a sync to {existing.tag} is in progress on {existing.branch} (stopped at {existing.stage})",
            "finish it with 'forktool sync --continue' or drop it with 'forktool sync --abort'",
        )
    upstream = Upstream.of(config, "--no-fetch", fetch=fetch, notice=notice)
    revision = resolve(git, tag, upstream=upstream, pinning=True)
    tag_commit = revision.commit
    name = branch or default_branch(tag)
    done = _already_synced(config, git, name, tag)
    if done is not None:
        return done
    if git.branch_commit(name) is not None:
        raise FatalError(
            f"branch '{name}' already exists and is not a finished sync to {tag}",
            f"delete it ({command_line('git', 'branch', '-D', name)}) or pass --branch NAME",
        )
    if config.pin_tag == tag:
        raise FatalError(f"the fork is already pinned to {tag}", "nothing to sync")
    identity = commit_identity(git, env)
    _refuse_uncommitted(config, git)
    tree_commit = next_tarball(config, git, revision, tarballs)
    start = git.require_commit("HEAD")
    toplevel = git.toplevel()
    fork_dir = config.root.resolve().relative_to(toplevel.resolve()).as_posix()
    fork_dir = "" if fork_dir == "." else fork_dir
    # The state is saved before the worktree and the branch exist, so whenever this run
    # is cut short, 'sync --continue' re-creates them and 'sync --abort' removes them.
    worktree = Path(tempfile.gettempdir()) / f"forktool-sync-{secrets.token_hex(6)}" / "wt"
    report = SyncReport(
        tag, tag_commit, config.pin_tag, name, "retire", merge_tag=config.layout == "merged"
    )
    previous_import = config.pin_import
    if previous_import is None or not git.is_ancestor(previous_import, start):
        previous_import = None  # the branch merged the bare tag: keep merging tags
    state = SyncState(
        tag,
        tag_commit,
        name,
        str(worktree),
        start,
        "retire",
        fork_dir,
        report,
        tree_commit,
        previous_import,
    )
    try:
        _save_state(git, state)
        return _drive(git, state, identity, progress, markdown=markdown)
    except FatalError as exc:
        # Exit 2 changes nothing: undo what this run made (worktree, branch, state).
        with _signals_held():
            if load_sync_state(git) is not None:
                abort_sync(git)
        raise rolled_back(
            exc, "the sync was rolled back: no branch, worktree or state is left"
        ) from exc
    except KeyboardInterrupt:
        # Ctrl-C on a sync that only just began: put everything back as it was.
        with _signals_held():
            if load_sync_state(git) is not None:
                abort_sync(git)
        raise Interrupted(
            "interrupted; the sync was rolled back: no branch, worktree or state is left"
        ) from None


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
    return _drive(
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
    _remove_worktrees(git, state)
    if git.branch_commit(state.branch) is not None:
        git.delete_branch(state.branch)
    _drop_state(git)
    return replace(
        state.report,
        stage=state.stage,
        message=f"sync to {state.tag} aborted: branch {state.branch} and its worktree removed",
    )


def _already_synced(config: Config, git: Git, branch: str, tag: str) -> SyncReport | None:
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
    report_file = report_dir(git, tag, branch) / "report.json"
    if report_file.is_file():
        report = _report_from_json(json.loads(report_file.read_text(encoding="utf-8")))
        return replace(
            report, stage="done", message=f"already synced: {branch} pins {tag}; nothing to do"
        )
    return SyncReport(
        tag,
        resolve(git, tag, upstream=Upstream.of(config)).commit,
        config.pin_tag,
        branch,
        "done",
        message=f"already synced: {branch} pins {tag}; nothing to do",
    )


def _remove_worktrees(git: Git, state: SyncState) -> None:
    """The sync's worktree and a hand-resolution worktree beside it, even half-made."""
    directory = Path(state.worktree).parent
    for worktree in (Path(state.worktree), directory / "resolve"):
        if worktree.exists():
            git.remove_worktree(worktree, check=False)
    shutil.rmtree(directory, ignore_errors=True)
    git.worktree_prune()  # also whatever was registered but never made, or deleted


@contextmanager
def _signals_held() -> Iterator[None]:
    """Let a second Ctrl-C not cut the roll-back of the first one short."""
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def _tip(state: SyncState) -> str:
    """The sync branch's last commit that the state recorded."""
    return state.report.commits[-1] if state.report.commits else state.start


def _ensure_worktree(main: Git, state: SyncState, *, resume: bool) -> None:
    """Make the sync's worktree what the state says, whatever a cut-short run left.

    A run killed before the worktree or the branch existed, or a worktree whose
    directory was deleted (a cleaned /tmp), is re-created from the branch. On a
    resume that is not after a stop for a human (no conflict recorded), work of a
    stage the killed run did not record is dropped: the stage runs again.
    """
    worktree = Path(state.worktree)
    if not (worktree / ".git").exists():
        shutil.rmtree(worktree, ignore_errors=True)
        main.worktree_prune()
        worktree.parent.mkdir(parents=True, exist_ok=True)
        if main.branch_commit(state.branch) is None:
            main.worktree_add(worktree, state.branch, state.start)
        else:
            main.worktree_checkout(worktree, state.branch)
    if resume and not state.report.conflicts:
        wt = Git(worktree)
        faultpoint("sync.worktree_reset")
        wt.reset_hard(_tip(state), purpose="return to the recorded stage")
        wt.clean(purpose="drop the cut-short stage's files")


def _drive(
    main: Git,
    state: SyncState,
    identity: dict[str, str],
    progress: Progress | None,
    *,
    resume: bool = False,
    markdown: ReportWriter | None = None,
    drop_files: tuple[str, ...] = (),
) -> SyncReport:
    worktree = Path(state.worktree)
    _ensure_worktree(main, state, resume=resume)
    run = _Run(
        main,
        Git(worktree),
        worktree / state.fork_dir,
        identity,
        state,
        progress,
        list(state.report.commits),
        markdown,
        drop_files,
    )
    steps: dict[Stage, Callable[[_Run, bool], bool]] = {
        "retire": _stage_retire,
        "refresh": _stage_refresh,
        "bump": _stage_bump,
        "merge": _stage_merge,
        "check": _stage_check,
    }
    while run.state.stage != "done":
        stage = run.state.stage
        if progress:
            progress(_stage_title(stage, state.tag))
        if not steps[stage](run, resume):
            return replace(run.state.report, worktree=str(worktree))
        resume = False
    return _finish(run)


def _stage_title(stage: Stage, tag: str) -> str:
    return {
        "retire": f"retire what {tag} absorbed",
        "refresh": f"refresh the patches onto {tag}",
        "bump": f"bump the pins to {tag}",
        "merge": f"merge {tag}",
        "check": "check the result",
        "done": "done",
    }[stage]


def _stage_retire(run: _Run, resume: bool) -> bool:
    del resume
    fork = run.fork()
    report = absorbed(fork, run.wt, run.state.revision)
    retiring = sorted(p.patch for p in report.retirable())
    retired = tuple(_retired_entry(report, name) for name in retiring)
    if retiring:
        # The bump stage pins TAG next: the pin may lack the fixes until then.
        retire(fork, run.wt, report, retiring, today=record_date(), pin_follows=True)
        run.commit(
            f"sync {run.state.tag}: retire {len(retiring)} patch(es) absorbed upstream\n\n"
            + "".join(f"- {r.patch}: {r.witnesses}\n" for r in retired)
        )
    notes = human_notes(tuple(p.to_json() for p in report.patches))
    run.advance("refresh", retired=retired, kept=_kept(report, set(retiring)), notes=notes)
    return True


def _conflict_stop(run: _Run, entries: tuple[RefreshEntry, ...], message: str) -> bool:
    conflicts = tuple(f"{e.patch}: {e.message}" for e in entries if e.status == "conflict")
    run.advance("refresh", refreshed=entries, conflicts=conflicts, message=message)
    return False


def _stage_refresh(run: _Run, resume: bool) -> bool:
    fork = run.fork()
    pin_commit = require_tree(fork.config, run.wt)[1]
    tree = run.state.tree_commit
    onto = f"{run.state.tag}+tarball" if tree else run.state.tag
    if resume and load_refresh_state(run.wt) is not None:
        result = refresh_continue(
            fork, run.wt, pin_commit=pin_commit, command="sync", drop_files=run.drop_files
        )
    elif not fork.patches:
        run.advance("bump", refreshed=(), conflicts=())
        return True
    else:
        resolve_dir = Path(run.state.worktree).parent / "resolve"
        if resolve_dir.exists():  # left by a run cut short before it recorded a stop
            run.main.remove_worktree(resolve_dir, check=False)
            shutil.rmtree(resolve_dir, ignore_errors=True)
        result = refresh_onto(
            fork,
            run.wt,
            onto,
            pin_commit=pin_commit,
            worktree=resolve_dir,
            onto_commit=tree or run.state.tag_commit,
        )
    if not result.ok and not result.in_progress:  # no hand resolution can help
        tag = run.state.tag
        failed = [e.patch for e in result.entries if e.status == "conflict" and _already_on(e)]
        every = already_carried(run.state.report.kept, failed) if failed else ()
        if every:  # one decision round: every patch the tag carries, not the first alone
            raise FatalError(
                f"{len(every)} patch(es) already on {tag}: {', '.join(every)}",
                f"record every decision at once: {decision_command(every, tag)}; commit, "
                f"and run 'forktool sync {tag}' again",
            )
        raise FatalError(
            result.message,
            f"retire or drop it on your branch, commit, and run 'forktool sync {tag}' again",
        )
    if not result.ok or result.in_progress:
        where = f" in {result.worktree}" if result.worktree else ""
        names = [e.patch for e in result.entries if e.status == "conflict"]
        what = (
            f"{len(names)} patches conflict on {run.state.tag} ({', '.join(names)}): resolve "
            f"them one after the other{where}, running 'forktool sync --continue' after each"
            if len(names) > 1
            else f"a patch conflicts on {run.state.tag}: resolve it{where}, then run "
            "'forktool sync --continue'"
        )
        message = f"{what} (or 'forktool sync --abort')"
        return _conflict_stop(run, result.entries, message)
    run.commit(f"sync {run.state.tag}: refresh the series onto {run.state.tag}\n")
    run.advance(
        "bump", refreshed=result.entries, range_diff=result.range_diff, conflicts=(), message=""
    )
    return True


def _stage_bump(run: _Run, resume: bool) -> bool:
    del resume
    result = plan_bump(
        run.config(), run.wt, run.state.revision, dry_run=False, tree=run.state.tree_commit
    )
    run.commit(f"sync {run.state.tag}: pin {run.state.tag} at every pin site\n")
    pins = tuple(PinChange(e.file, e.line, e.old, e.new) for e in result.edits)
    run.advance("merge", pins=pins)
    return True


def _fork_paths(
    ledger: Ledger, entries: list[tuple[str, str, str]], config: Config | None = None
) -> dict[str, tuple[str, str]]:
    """The fork's own paths: declared ``add`` in the ledger, or its bookkeeping files."""
    return {
        path: (mode, oid)
        for mode, oid, path in entries
        if ledger.declaring("add", path) or (config is not None and config.owns(path))
    }


def merged_tree(run: _Run) -> tuple[str | None, list[str], list[str]]:
    """(tree, conflicts, notes) of TAG (or TAG's tarball import, on a branch that merged
    the pinned one) plus the fork's own files minus declared deletions."""
    fork = run.fork()
    ledger = fork.ledger
    prefix = f"{run.state.fork_dir}/" if run.state.fork_dir else ""
    head_files = run.wt.ls_tree("HEAD")
    merging = run.state.merge_commit
    tag_files = {path: (mode, oid) for mode, oid, path in run.wt.ls_tree(merging)}
    ours = {
        path: meta
        for path, meta in _fork_paths(
            ledger,
            [(m, o, p[len(prefix) :]) for m, o, p in head_files if p.startswith(prefix)],
            fork.config,
        ).items()
    }
    conflicts = [
        f"{prefix}{path}: upstream {run.state.tag} ships this path too, but the fork owns it "
        "(ledger 'add'); move the fork's file or drop it from the ledger"
        for path, meta in ours.items()
        if f"{prefix}{path}" in tag_files and tag_files[f"{prefix}{path}"] != meta
    ]
    if conflicts:
        return None, conflicts, []
    notes = []
    head_paths = {p for _, _, p in head_files}
    with run.wt.temp_index(merging, keep_objects=True) as index:
        for path, (mode, oid) in ours.items():
            index.add_entry(mode, oid, f"{prefix}{path}")
        for path in tag_files:
            rel = path[len(prefix) :] if path.startswith(prefix) else None
            if rel is not None and ledger.declaring("del", rel):
                index.remove_entry(path)
                if path not in head_paths:
                    continue
                notes.append(
                    f"{path}: the fork deletes it (ledger 'del'); {run.state.tag} still ships it"
                )
        previous = run.state.previous_import or run.wt.find_tag_commit(
            run.state.report.previous_tag
        )
        pinned = {p: (m, o) for m, o, p in run.wt.ls_tree(previous)} if previous else {}
        edited = [
            p
            for m, o, p in head_files
            if p in pinned
            and (m, o) != pinned[p]
            and not (p.startswith(prefix) and ledger.declaring("add", p[len(prefix) :]))
        ]
        notes += [
            f"{p}: was edited in place on the fork; the merge takes {run.state.tag}'s version"
            for p in edited
        ]
        return index.write_tree(), [], notes


def _stage_merge(run: _Run, resume: bool) -> bool:
    del resume
    if run.config().layout != "merged":
        run.advance("check", message="")
        return True
    tree, conflicts, notes = merged_tree(run)
    if tree is None:
        run.advance(
            "merge",
            conflicts=tuple(conflicts),
            message="the merge of the tag conflicts with the fork's own files: "
            "fix the ledger or the files on the sync branch, then 'forktool sync --continue'",
        )
        return False
    what = f"{run.state.tag}'s release tarball" if run.state.previous_import else run.state.tag
    message = f"Merge upstream release {what} into the fork\n\nforktool sync: the tree is {what} plus the fork's own files.\n"
    commit = run.wt.commit_tree(
        tree,
        ["HEAD", run.state.merge_commit],
        message.encode(),
        purpose=f"merge {run.state.tag}",
        env=run.identity,
    )
    faultpoint("sync.merge")
    run.wt.reset_hard(commit, purpose="move the sync branch to the merge")
    run.commits.append(commit)
    run.advance("check", notes=run.state.report.notes + tuple(notes), conflicts=(), message="")
    return True


def _stage_check(run: _Run, resume: bool) -> bool:
    del resume
    gate: GateResult = run_checks(run.config(), run.wt, select_checks((), ()))
    run.advance("done", check=gate.to_json(), check_ok=gate.ok)
    return True


def _finish(run: _Run) -> SyncReport:
    report = replace(run.state.report, stage="done", worktree=None, commits=tuple(run.commits))
    out = report_dir(run.main, run.state.tag, run.state.branch)
    files = {out / "report.json": (json.dumps(report.to_json(), indent=2) + "\n").encode()}
    if run.markdown is not None:
        files[out / "report.md"] = run.markdown(report).encode()
    write_files(files)
    _remove_worktrees(run.main, run.state)
    _drop_state(run.main)
    verdict = "check passed" if report.check_ok else "check FAILED: see the report"
    return replace(
        report,
        message=f"synced to {report.tag} on branch {report.branch} ({verdict}); "
        f"report: {out / ('report.md' if run.markdown else 'report.json')}",
    )


def pending_patches(report: SyncReport) -> list[tuple[str, str | None]]:
    """The kept patches mapped ``pending``, with their PR: (patch, PR or None)."""
    found = []
    for entry in report.kept:
        if entry.get("verdict") == "pending":
            pr = entry.get("upstream_pr")
            found.append((str(entry.get("patch")), pr if isinstance(pr, str) else None))
    return found
