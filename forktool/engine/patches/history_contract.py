"""The history contract for forks that keep their patches as commits on a branch.

The commits between the pin and REV must be exportable, one patch each, without
losing anything: no merges, no empty commits, the required trailers present and
well-formed (``Upstream-Merge`` is 40-hex commits or ``none``), every path inside
the configured prefixes and none of the fork's own files, and, when the image
applies patches with GNU patch, no renames, mode changes, symlinks, submodules or
binaries. Every violation is listed, not just the first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from forktool.config import Config
from forktool.engine.release.pin_state import require_tree
from forktool.errors import FatalError
from forktool.git import Git
from forktool.model.patchfile import TRAILER_KEYS, UPSTREAM_MERGE, parse_upstream_merge
from forktool.model.revision import Revision

SYMLINK = "120000"
GITLINK = "160000"
NO_MODE = "000000"


@dataclass(frozen=True)
class Violation:
    commit: str
    subject: str
    check: str  # merge, empty, trailer, prefix, fork-file, gnu-patch
    message: str

    def to_json(self) -> dict[str, object]:
        return {
            "commit": self.commit,
            "subject": self.subject,
            "check": self.check,
            "message": self.message,
        }


@dataclass(frozen=True)
class HistoryCommit:
    commit: str
    subject: str
    parents: tuple[str, ...]
    trailers: tuple[tuple[str, str], ...]

    def values(self, key: str) -> list[str]:
        return [v for k, v in self.trailers if k.lower() == key.lower()]


@dataclass(frozen=True)
class HistoryResult:
    rev: str
    rev_commit: str
    base: str
    base_commit: str
    commits: tuple[HistoryCommit, ...]
    violations: tuple[Violation, ...]
    message: str = ""

    @property
    def ok(self) -> bool:
        return bool(self.commits) and not self.violations

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "rev": self.rev,
            "rev_commit": self.rev_commit,
            "base": self.base,
            "base_commit": self.base_commit,
            "ok": self.ok,
            "commits": [{"commit": c.commit, "subject": c.subject} for c in self.commits],
            "violations": [v.to_json() for v in self.violations],
        }
        if self.message:
            data["message"] = self.message
        return data


@dataclass(frozen=True)
class Change:
    old_mode: str
    new_mode: str
    status: str  # A, D, M, T, R<score>, C<score>
    paths: tuple[str, ...]


def commits_between(git: Git, base: str, rev: str, rev_commit: str) -> list[HistoryCommit]:
    """The commits of ``base..rev_commit``, oldest first, with subject and trailers."""
    if not git.is_ancestor(base, rev_commit):
        raise FatalError(
            f"{rev} does not contain the pinned commit {base[:12]}",
            "the patch branch must start at the pin: rebase it onto the pinned tag",
        )
    listing = git.commits_with_parents(base, rev_commit)
    parents = {line[0]: tuple(line[1:]) for line in listing}
    if not listing:
        return []
    return [
        HistoryCommit(commit, subject, parents[commit], tuple(trailers))
        for commit, subject, trailers in git.subjects_and_trailers([line[0] for line in listing])
    ]


def _changes(git: Git, parent: str, commit: str) -> list[Change]:
    return [Change(*change) for change in git.raw_changes(parent, commit)]


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + "/")


def fork_files(config: Config, git: Git) -> tuple[str, ...]:
    """The fork's own files and directories, relative to the repository's top."""
    top = git.toplevel().resolve()
    found = []
    for item in config.own_paths():
        try:
            found.append(Path(item).resolve().relative_to(top).as_posix())
        except ValueError:
            continue
    return tuple(found)


def _trailer_violations(commit: HistoryCommit, required: Sequence[str]) -> list[str]:
    problems = []
    for key in required:
        values = commit.values(key)
        if not values:
            problems.append(f"no {key}: trailer")
        elif len(values) > 1:
            problems.append(f"{len(values)} {key}: trailers (one is allowed)")
    for key in dict.fromkeys([*required, *TRAILER_KEYS]):
        for value in commit.values(key):
            if not value:
                problems.append(f"empty {key}: trailer")
            elif key == UPSTREAM_MERGE and parse_upstream_merge(value) is None:
                problems.append(f"{UPSTREAM_MERGE} must be 40-hex commits or 'none', not '{value}'")
    return problems


def _change_violations(
    change: Change, prefixes: Sequence[str], own: Sequence[str], gnu_patch: bool
) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    for path in change.paths:
        if prefixes and not any(_under(path, p) for p in prefixes):
            problems.append(("prefix", f"{path} is outside {', '.join(prefixes)}"))
        owned = next((o for o in own if _under(path, o)), None)
        if owned is not None:
            problems.append(("fork-file", f"{path} is one of the fork's own files ({owned})"))
    if not gnu_patch:
        return problems
    shown = " -> ".join(change.paths)
    if change.status[:1] in ("R", "C"):
        kind = "rename" if change.status[:1] == "R" else "copy"
        problems.append(("gnu-patch", f"{shown} is a {kind}, which GNU patch cannot apply"))
    modes = {change.old_mode, change.new_mode}
    if SYMLINK in modes:
        problems.append(("gnu-patch", f"{shown} is a symlink, which GNU patch cannot apply"))
    if GITLINK in modes:
        problems.append(("gnu-patch", f"{shown} is a submodule, which GNU patch cannot apply"))
    if NO_MODE not in modes and change.old_mode != change.new_mode:
        problems.append(
            (
                "gnu-patch",
                f"{shown} changes mode {change.old_mode} -> {change.new_mode}, "
                "which GNU patch cannot apply",
            )
        )
    return problems


def check_history(
    config: Config,
    git: Git,
    revision: Revision,
    *,
    prefixes: Sequence[str] | None = None,
    gnu_patch: bool | None = None,
) -> HistoryResult:
    """Check every commit of ``pin..revision`` against the history contract (the pin's
    tree: the imported release tarball of a tarball-import pin)."""
    name, base = require_tree(config, git)
    rev, rev_commit = revision.name, revision.commit
    settings = config.history
    wanted_prefixes = tuple(settings.prefixes if prefixes is None else prefixes)
    strict_patch = settings.gnu_patch if gnu_patch is None else gnu_patch
    own = fork_files(config, git)
    commits = commits_between(git, base, rev, rev_commit)
    violations: list[Violation] = []
    for commit in commits:
        found: list[tuple[str, str]] = []
        if len(commit.parents) > 1:
            found.append(("merge", "a merge commit: the branch must be one commit per patch"))
        else:
            changes = _changes(git, commit.parents[0], commit.commit)
            if not changes:
                found.append(("empty", "an empty commit: it would export as no patch at all"))
            for change in changes:
                found += _change_violations(change, wanted_prefixes, own, strict_patch)
            if strict_patch:
                found += [
                    ("gnu-patch", f"{path} is a binary file, which GNU patch cannot apply")
                    for path in git.binary_paths(commit.parents[0], commit.commit)
                ]
        found += [("trailer", p) for p in _trailer_violations(commit, settings.required_trailers)]
        violations += [Violation(commit.commit, commit.subject, k, m) for k, m in found]
    message = "" if commits else f"there are no commits between the pin and {rev}"
    return HistoryResult(
        rev,
        rev_commit,
        name,
        base,
        tuple(commits),
        tuple(violations),
        message,
    )
