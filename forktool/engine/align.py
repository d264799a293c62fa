"""``forktool align``: the fork's divergence from the pinned tag, against the ledger.

Divergence is measured from the pinned **tag**, never from a merge-base with
upstream's main branch: release tags are cut on release branches, so main's
merge-base would count upstream's own unreleased work as the fork's.

- ``layout: merged``: ``git diff --no-renames --name-status <tag> HEAD``. An added
  path needs an ``add`` entry, a deleted path a ``del`` entry; a modified or
  type-changed upstream file is always a finding (changes to upstream files are
  carried as patches). A ``del`` entry whose path exists at HEAD again is
  "resurrected" (typically by merging a newer tag).
- ``layout: overlay``: HEAD holds only the fork's files; each needs an ``add`` entry.

Ledger entries that match nothing are warnings ("prune it"); an entry
``until:<40-hex commit>`` whose commit is an ancestor of the pinned tag can be
retired, the same rule as patches. How far HEAD is behind the newest upstream
release is information only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from forktool.config import Config
from forktool.engine.history_contract import fork_files
from forktool.engine.pin_state import require_pin
from forktool.engine.releases import release_tags
from forktool.errors import FatalError, Finding, InputError
from forktool.git import Git
from forktool.inputs import read_input
from forktool.model.ledger import Action, Ledger, LedgerEntry, parse_ledger

KINDS = ("added", "deleted", "modified", "type-changed", "tracked")
_KIND_OF_STATUS = {"A": "added", "D": "deleted", "M": "modified", "T": "type-changed"}
_ACTION_OF_KIND: dict[str, Action] = {"added": "add", "tracked": "add", "deleted": "del"}


@dataclass(frozen=True)
class PathChange:
    """One path where HEAD differs from the tag (or, for overlay, one tracked path)."""

    path: str
    kind: str  # one of KINDS
    entry: LedgerEntry | None  # the ledger entry that declares it
    own: bool = False  # one of the fork's own files: declared by definition

    @property
    def declared(self) -> bool:
        return self.entry is not None or self.own

    def to_json(self) -> dict[str, object]:
        return {
            "path": self.path,
            "kind": self.kind,
            "declared": self.declared,
            "ledger_line": self.entry.line if self.entry else None,
            "own": self.own,
        }


@dataclass(frozen=True)
class Resurrected:
    path: str
    entry: LedgerEntry

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "ledger_line": self.entry.line}


@dataclass(frozen=True)
class NewestRelease:
    tag: str
    commit: str
    behind: int  # commits in the tag that HEAD (overlay: the pinned tag) does not have

    def to_json(self) -> dict[str, object]:
        return {"tag": self.tag, "commit": self.commit, "behind": self.behind}


def _entry_json(entry: LedgerEntry) -> dict[str, object]:
    return {"line": entry.line, "entry": entry.render(), "commit": entry.until_commit}


@dataclass(frozen=True)
class AlignResult:
    tag: str
    tag_commit: str
    head: str | None  # None before the first commit
    layout: str
    ledger: str | None  # the ledger file, None when the fork has none
    changes: tuple[PathChange, ...]
    resurrected: tuple[Resurrected, ...]
    stale: tuple[LedgerEntry, ...]
    retirable: tuple[LedgerEntry, ...]
    newest_release: NewestRelease | None
    findings: tuple[Finding, ...]

    @property
    def ok(self) -> bool:
        return not any(f.severity == "error" for f in self.findings)

    def of_kind(self, kind: str) -> list[PathChange]:
        return [c for c in self.changes if c.kind == kind]

    @property
    def undeclared(self) -> list[str]:
        """Every path that keeps the fork from being aligned, sorted."""
        bad = {c.path for c in self.changes if not c.declared or c.kind in _ALWAYS_FINDING}
        bad |= {r.path for r in self.resurrected}
        return sorted(bad)

    def summary(self) -> dict[str, dict[str, int]]:
        kinds = ("tracked",) if self.layout == "overlay" else KINDS[:4]
        out = {}
        for kind in kinds:
            changes = self.of_kind(kind)
            failing = [c for c in changes if not c.declared or kind in _ALWAYS_FINDING]
            out[kind.replace("-", "_")] = {"total": len(changes), "undeclared": len(failing)}
        return out

    def to_json(self) -> dict[str, object]:
        return {
            "ok": self.ok,
            "tag": self.tag,
            "tag_commit": self.tag_commit,
            "head": self.head,
            "layout": self.layout,
            "ledger": self.ledger,
            "summary": self.summary(),
            "undeclared": self.undeclared,
            "changes": [c.to_json() for c in self.changes],
            "resurrected": [r.to_json() for r in self.resurrected],
            "stale": [_entry_json(e) for e in self.stale],
            "retirable": [_entry_json(e) for e in self.retirable],
            "newest_release": self.newest_release.to_json() if self.newest_release else None,
            "findings": [f.to_json() for f in self.findings],
        }


_ALWAYS_FINDING = ("modified", "type-changed")


def load_ledger(config: Config) -> tuple[Ledger, str | None]:
    """The ledger and its path; an empty ledger when the fork has none. Exit 2 if malformed."""
    path = config.ledger_path
    if not path.exists() and not path.is_symlink():
        return Ledger(()), None
    ledger = parse_ledger(read_input(path, config.ledger, follow=False), config.ledger)
    problems = [f for f in ledger.findings if f.severity == "error"]
    if problems:
        raise InputError(problems)
    return ledger, config.ledger


def _is_own(path: str, own: Sequence[str]) -> bool:
    return any(path == o or path.startswith(o + "/") for o in own)


def _classify(
    git: Git, config: Config, ledger: Ledger, tag_commit: str, head: str
) -> list[PathChange]:
    own = fork_files(config, git)
    if config.layout == "overlay":
        return [
            PathChange(path, "tracked", ledger.declaring("add", path), _is_own(path, own))
            for path in git.tracked_paths(head)
        ]
    changes = []
    for status, path in git.diff_name_status(tag_commit, head):
        kind = _KIND_OF_STATUS.get(status, "modified")
        action = _ACTION_OF_KIND.get(kind)
        entry = ledger.declaring(action, path) if action is not None else None
        changes.append(PathChange(path, kind, entry, action == "add" and _is_own(path, own)))
    return changes


def _resurrected(ledger: Ledger, head_paths: Sequence[str]) -> list[Resurrected]:
    found = []
    for entry in ledger.dels:
        found += [Resurrected(path, entry) for path in head_paths if entry.matches(path)]
    return found


def _stale(
    config: Config,
    git: Git,
    ledger: Ledger,
    changes: Sequence[PathChange],
    resurrected: Sequence[Resurrected],
    tag_commit: str,
) -> list[LedgerEntry]:
    """Entries that declare nothing any more."""
    used = {c.entry for c in changes if c.entry is not None}
    used |= {r.entry for r in resurrected}
    stale = []
    tag_paths: list[str] | None = None
    for entry in ledger.entries:
        if entry in used:
            continue
        if entry.action == "add":
            targets = [c.path for c in changes if _ACTION_OF_KIND.get(c.kind) == "add"]
        elif config.layout == "overlay":
            # An overlay's del entry removes a path from upstream's tree at build time.
            if tag_paths is None:
                tag_paths = git.tracked_paths(tag_commit)
            targets = tag_paths
        else:
            targets = [c.path for c in changes if c.kind == "deleted"]
        if not any(entry.matches(path) for path in targets):
            stale.append(entry)
    return stale


def _retirable(config: Config, git: Git, ledger: Ledger, tag_commit: str) -> list[LedgerEntry]:
    """Entries ``until:<commit>`` whose commit the pinned tag contains. Exit 2 if unknown."""
    pending = [e for e in ledger.entries if e.until_commit is not None]
    if not pending:
        return []
    types = git.object_types(e.until_commit for e in pending if e.until_commit)
    for entry in pending:
        if types.get(entry.until_commit or "") != "commit":
            raise FatalError(
                f"{config.ledger}:{entry.line}: until:{entry.until_commit} is not a commit in "
                "this repository",
                f"fetch upstream (git fetch {config.upstream_remote} --tags), or fix the commit id",
            )
    missing = git.not_ancestors([e.until_commit for e in pending if e.until_commit], tag_commit)
    return [e for e in pending if e.until_commit not in missing]


def _newest(config: Config, git: Git, tag_commit: str, head: str) -> NewestRelease | None:
    releases = release_tags(git, config.release_tags, prereleases=config.prereleases)
    if not releases:
        return None
    tag, commit = releases[-1].tag, releases[-1].commit
    base = tag_commit if config.layout == "overlay" else head
    return NewestRelease(tag, commit, git.count_commits(commit, base))


def _findings(
    config: Config,
    tag: str,
    changes: Sequence[PathChange],
    resurrected: Sequence[Resurrected],
    stale: Sequence[LedgerEntry],
    retirable: Sequence[LedgerEntry],
) -> list[Finding]:
    ledger = config.ledger
    findings = []
    for change in changes:
        finding = _change_finding(ledger, tag, change)
        if finding is not None:
            findings.append(finding)
    for item in resurrected:
        findings.append(
            Finding(
                "error",
                f"declared deleted ({ledger}:{item.entry.line}) but present at HEAD again "
                "(resurrected, e.g. by a merge of upstream)",
                item.path,
                None,
                f"delete it again: git rm {item.path}",
            )
        )
    for entry in stale:
        findings.append(
            Finding(
                "warning",
                f"'{entry.action} {entry.pattern}' matches nothing any more: prune it",
                ledger,
                entry.line,
            )
        )
    for entry in retirable:
        findings.append(
            Finding(
                "warning",
                f"'{entry.action} {entry.pattern}': {tag} contains {entry.until_commit}, "
                "so this divergence can be retired",
                ledger,
                entry.line,
                "restore upstream's version of the path and remove the ledger line",
            )
        )
    return findings


def _change_finding(ledger: str, tag: str, change: PathChange) -> Finding | None:
    if change.kind == "modified":
        return Finding(
            "error",
            f"modifies an upstream file of {tag} in place; changes to upstream files belong "
            "in patches",
            change.path,
            None,
            f"move the change into a patch and restore the file: git checkout {tag} -- "
            f"{change.path}",
        )
    if change.kind == "type-changed":
        return Finding(
            "error",
            f"changes the type of an upstream file of {tag} (file, symlink or submodule)",
            change.path,
            None,
            f"restore it: git checkout {tag} -- {change.path}",
        )
    if change.declared:
        return None
    if change.kind == "deleted":
        return Finding(
            "error",
            f"deleted from {tag}, but no 'del' entry in {ledger} declares it",
            change.path,
            None,
            f"declare it: del {change.path} permanent <why>, or restore it",
        )
    where = f"not in {tag}" if change.kind == "added" else "tracked"
    return Finding(
        "error",
        f"added ({where}), but no 'add' entry in {ledger} declares it",
        change.path,
        None,
        f"declare it: add {change.path} permanent <why>, or remove it",
    )


def _waiting_for_commit(git: Git, stale: Sequence[LedgerEntry]) -> list[LedgerEntry]:
    """Add entries that match nothing committed but an uncommitted file: not stale yet."""
    pending = git.uncommitted_anywhere()
    return [e for e in stale if e.action == "add" and any(e.matches(p) for p in pending)]


def _uncommitted_finding(config: Config, entry: LedgerEntry) -> Finding:
    return Finding(
        "info",
        f"'{entry.action} {entry.pattern}' matches only files not committed yet",
        config.ledger,
        entry.line,
        "commit them; alignment measures committed files",
    )


NO_COMMIT = Finding(
    "info",
    "HEAD has no commit yet: alignment is measured once the fork's files are committed",
    None,
    None,
    "commit the fork's files",
)


def _measure(
    config: Config, git: Git, ledger: Ledger, tag_commit: str, head: str
) -> tuple[list[PathChange], list[Resurrected], list[LedgerEntry], list[Finding]]:
    """HEAD's changes, resurrected deletions, stale entries, and the findings about them."""
    changes = _classify(git, config, ledger, tag_commit, head)
    head_paths = (
        [c.path for c in changes] if config.layout == "overlay" else git.tracked_paths(head)
    )
    resurrected = _resurrected(ledger, head_paths)
    stale = _stale(config, git, ledger, changes, resurrected, tag_commit)
    waiting = _waiting_for_commit(git, stale) if stale else []
    stale = [e for e in stale if e not in waiting]
    findings = [_uncommitted_finding(config, entry) for entry in waiting]
    return changes, resurrected, stale, findings


def align(config: Config, git: Git) -> AlignResult:
    """Measure HEAD's divergence from the pinned tag against the ledger.

    Before the first commit nothing is measured: every entry waits for it.
    """
    ledger, ledger_file = load_ledger(config)
    tag_commit = require_pin(config, git)
    head = git.head()
    changes: list[PathChange] = []
    resurrected: list[Resurrected] = []
    stale: list[LedgerEntry] = []
    notes = [NO_COMMIT]
    if head is not None:
        changes, resurrected, stale, notes = _measure(config, git, ledger, tag_commit, head)
    retirable = _retirable(config, git, ledger, tag_commit)
    findings = _findings(config, config.pin_tag, changes, resurrected, stale, retirable) + notes
    return AlignResult(
        tag=config.pin_tag,
        tag_commit=tag_commit,
        head=head,
        layout=config.layout,
        ledger=ledger_file,
        changes=tuple(changes),
        resurrected=tuple(resurrected),
        stale=tuple(stale),
        retirable=tuple(retirable),
        newest_release=_newest(config, git, tag_commit, head or tag_commit),
        findings=tuple(findings),
    )
