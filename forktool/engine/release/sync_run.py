"""A sync run in its worktree: the stages (retire, refresh, bump, merge, check) one after
the other, each recorded in the sync state as it ends, so a run stopped for a human
or cut short goes on from the last recorded stage."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from forktool.config import Config, load_config
from forktool.engine.patches.refresh import refresh_onto
from forktool.engine.patches.refresh_resolution import refresh_continue
from forktool.engine.patches.refresh_result import RefreshEntry, RefreshResult
from forktool.engine.patches.refresh_state import load_state as load_refresh_state
from forktool.engine.release.check import run_checks, select_checks
from forktool.engine.release.pin_bump import plan_bump
from forktool.engine.release.pin_state import require_tree
from forktool.engine.release.sync_merge import merged_tree
from forktool.engine.release.sync_plan import (
    already_carried,
    already_on,
    decision_command,
    human_notes,
    kept_verdicts,
    retired_entry,
)
from forktool.engine.release.sync_report import PinChange, Stage, SyncReport
from forktool.engine.release.sync_state import SyncState, drop_state, report_dir, save_state
from forktool.engine.retirement.absorbed import absorbed
from forktool.engine.retirement.retire import record_date, retire
from forktool.errors import FatalError
from forktool.escape import json_safe
from forktool.faults import faultpoint
from forktool.fork import Fork, load_fork
from forktool.fsutil import write_files
from forktool.git import Git
from forktool.model.revision import tarball_tree

Progress = Callable[[str], None]  # told the name of each stage as it starts


ReportWriter = Callable[[SyncReport], str]


@dataclass(frozen=True)
class CommitIdentity:
    """Who the sync's commits are by (author and committer alike), and when if fixed."""

    name: str
    email: str
    author_date: str | None = None
    committer_date: str | None = None

    def env(self) -> dict[str, str]:
        """The identity as git reads it from the environment."""
        found = {
            "GIT_AUTHOR_NAME": self.name,
            "GIT_AUTHOR_EMAIL": self.email,
            "GIT_COMMITTER_NAME": self.name,
            "GIT_COMMITTER_EMAIL": self.email,
        }
        if self.author_date:
            found["GIT_AUTHOR_DATE"] = self.author_date
        if self.committer_date:
            found["GIT_COMMITTER_DATE"] = self.committer_date
        return found


def commit_identity(git: Git, env: Mapping[str, str]) -> CommitIdentity:
    """Author and committer for the sync's commits, as git would take them: the
    environment first, then the repository's user.*, then the user's own git config."""
    name = (
        env.get("GIT_AUTHOR_NAME")
        or env.get("GIT_COMMITTER_NAME")
        or git.identity_config("user.name")
    )
    email = (
        env.get("GIT_AUTHOR_EMAIL")
        or env.get("GIT_COMMITTER_EMAIL")
        or git.identity_config("user.email")
    )
    if not name or not email:
        raise FatalError(
            "sync commits on a new branch and needs an identity",
            "set user.name and user.email in this repository (git config user.name ...) or "
            "in your own git config (git config --global ...), or GIT_AUTHOR_NAME and "
            "GIT_AUTHOR_EMAIL",
        )
    return CommitIdentity(
        name, email, env.get("GIT_AUTHOR_DATE") or None, env.get("GIT_COMMITTER_DATE") or None
    )


@dataclass
class _Run:
    """One sync in its worktree: where things are and how to commit there."""

    main: Git
    wt: Git
    fork_root: Path
    identity: CommitIdentity
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
        commit = self.wt.commit_all(message, self.identity.env())
        if commit is not None:
            self.commits.append(commit)

    def advance(self, stage: Stage, **changes: object) -> None:
        report = replace(self.state.report, stage=stage, commits=tuple(self.commits), **changes)  # type: ignore[arg-type]
        self.state = replace(self.state, stage=stage, report=report)
        save_state(self.main, self.state)


# -- the sync's worktrees ----------------------------------------------------------------


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


def remove_worktrees(git: Git, state: SyncState) -> None:
    """The sync's worktree and a hand-resolution worktree beside it, even half-made."""
    directory = Path(state.worktree).parent
    for worktree in (Path(state.worktree), directory / "resolve"):
        if worktree.exists():
            git.remove_worktree(worktree, check=False)
    shutil.rmtree(directory, ignore_errors=True)
    git.worktree_prune()  # also whatever was registered but never made, or deleted


# -- the run: its stages, one after the other ---------------------------------------------


def drive(
    main: Git,
    state: SyncState,
    identity: CommitIdentity,
    progress: Progress | None,
    *,
    resume: bool = False,
    markdown: ReportWriter | None = None,
    drop_files: tuple[str, ...] = (),
) -> SyncReport:
    """Run the sync's stages from the one its state names, as far as they go: to the
    end (the report written), or to a stop for a human (the report says why)."""
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
    retired = tuple(retired_entry(report, name) for name in retiring)
    if retiring:
        # The bump stage pins TAG next: the pin may lack the fixes until then.
        retire(fork, run.wt, report, retiring, today=record_date(), pin_follows=True)
        run.commit(
            f"sync {run.state.tag}: retire {len(retiring)} patch(es) absorbed upstream\n\n"
            + "".join(f"- {r.patch}: {r.witnesses}\n" for r in retired)
        )
    notes = human_notes(report.patches)
    run.advance("refresh", retired=retired, kept=kept_verdicts(report, retiring), notes=notes)
    return True


def _stage_refresh(run: _Run, resume: bool) -> bool:
    fork = run.fork()
    pin_commit = require_tree(fork.config, run.wt)[1]
    if resume and load_refresh_state(run.wt) is not None:
        result = refresh_continue(
            fork, run.wt, pin_commit=pin_commit, command="sync", drop_files=run.drop_files
        )
    elif not fork.patches:
        run.advance("bump", refreshed=(), conflicts=())
        return True
    else:
        result = _refresh_onto_tag(run, fork, pin_commit)
    if not result.ok and not result.in_progress:  # no hand resolution can help
        raise _refresh_refused(run, result)
    if not result.ok or result.in_progress:
        return _conflict_stop(run, result)
    run.commit(f"sync {run.state.tag}: refresh the series onto {run.state.tag}\n")
    run.advance(
        "bump", refreshed=result.entries, range_diff=result.range_diff, conflicts=(), message=""
    )
    return True


def _refresh_onto_tag(run: _Run, fork: Fork, pin_commit: str) -> RefreshResult:
    """The series refreshed onto TAG (or its tarball import); a conflict is left to
    resolve in the hand-resolution worktree beside the sync's."""
    tree = run.state.tree_commit
    onto = tarball_tree(run.state.tag) if tree else run.state.tag
    resolve_dir = Path(run.state.worktree).parent / "resolve"
    if resolve_dir.exists():  # left by a run cut short before it recorded a stop
        run.main.remove_worktree(resolve_dir, check=False)
        shutil.rmtree(resolve_dir, ignore_errors=True)
    return refresh_onto(
        fork,
        run.wt,
        onto,
        pin_commit=pin_commit,
        worktree=resolve_dir,
        onto_commit=tree or run.state.tag_commit,
    )


def _refresh_refused(run: _Run, result: RefreshResult) -> FatalError:
    """Why the sync cannot go on when no hand resolution can help: the patches the tag
    already carries (every one, so one round decides them all), or the refresh's word."""
    tag = run.state.tag
    failed = [e.patch for e in result.entries if e.status == "conflict" and already_on(e)]
    every = already_carried(run.state.report.kept, failed) if failed else ()
    if every:
        return FatalError(
            f"{len(every)} patch(es) already on {tag}: {', '.join(every)}",
            f"record every decision at once: {decision_command(every, tag)}; commit, "
            f"and run 'forktool sync {tag}' again",
        )
    return FatalError(
        result.message,
        f"retire or drop it on your branch, commit, and run 'forktool sync {tag}' again",
    )


def _conflict_stop(run: _Run, result: RefreshResult) -> bool:
    """Stop for a human: the conflicts to resolve, where, and what to run after each."""
    where = f" in {result.worktree}" if result.worktree else ""
    names = [e.patch for e in result.entries if e.status == "conflict"]
    what = (
        f"{len(names)} patches conflict on {run.state.tag} ({', '.join(names)}): resolve "
        f"them one after the other{where}, running 'forktool sync --continue' after each"
        if len(names) > 1
        else f"a patch conflicts on {run.state.tag}: resolve it{where}, then run "
        "'forktool sync --continue'"
    )
    entries: tuple[RefreshEntry, ...] = result.entries
    conflicts = tuple(f"{e.patch}: {e.message}" for e in entries if e.status == "conflict")
    message = f"{what} (or 'forktool sync --abort')"
    run.advance("refresh", refreshed=entries, conflicts=conflicts, message=message)
    return False


def _stage_bump(run: _Run, resume: bool) -> bool:
    del resume
    result = plan_bump(
        run.config(), run.wt, run.state.revision, dry_run=False, tree=run.state.tree_commit
    )
    run.commit(f"sync {run.state.tag}: pin {run.state.tag} at every pin site\n")
    pins = tuple(PinChange(e.file, e.line, e.old, e.new) for e in result.edits)
    run.advance("merge", pins=pins)
    return True


def _stage_merge(run: _Run, resume: bool) -> bool:
    del resume
    if run.config().layout != "merged":
        run.advance("check", message="")
        return True
    merged = merged_tree(run.fork(), run.wt, run.state)
    if merged.tree is None:
        run.advance(
            "merge",
            conflicts=merged.conflicts,
            message="the merge of the tag conflicts with the fork's own files: "
            "fix the ledger or the files on the sync branch, then 'forktool sync --continue'",
        )
        return False
    what = f"{run.state.tag}'s release tarball" if run.state.previous_import else run.state.tag
    message = f"Merge upstream release {what} into the fork\n\nforktool sync: the tree is {what} plus the fork's own files.\n"
    commit = run.wt.commit_tree(
        merged.tree,
        ["HEAD", run.state.merge_commit],
        message.encode(),
        purpose=f"merge {run.state.tag}",
        env=run.identity.env(),
    )
    faultpoint("sync.merge")
    run.wt.reset_hard(commit, purpose="move the sync branch to the merge")
    run.commits.append(commit)
    run.advance("check", notes=run.state.report.notes + merged.notes, conflicts=(), message="")
    return True


def _stage_check(run: _Run, resume: bool) -> bool:
    del resume
    gate = run_checks(run.config(), run.wt, select_checks((), ()))
    run.advance("done", check=gate, check_ok=gate.ok)
    return True


def _finish(run: _Run) -> SyncReport:
    report = replace(run.state.report, stage="done", worktree=None, commits=tuple(run.commits))
    out = report_dir(run.main, run.state.tag, run.state.branch)
    files = {
        out / "report.json": (json.dumps(json_safe(report.to_json()), indent=2) + "\n").encode()
    }
    if run.markdown is not None:
        files[out / "report.md"] = run.markdown(report).encode()
    write_files(files)
    remove_worktrees(run.main, run.state)
    drop_state(run.main)
    verdict = "check passed" if report.check_ok else "check FAILED: see the report"
    return replace(
        report,
        message=f"synced to {report.tag} on branch {report.branch} ({verdict}); "
        f"report: {out / ('report.md' if run.markdown else 'report.json')}",
    )
