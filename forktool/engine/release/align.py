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
- A tarball-import pin (``pin.import_commit``): what the release tarball adds to, changes
  in or lacks from the tag is its own category (``tarball``); a path where HEAD differs
  from the tag exactly as the tarball does (a fork branch that merged the import) is
  declared by the import, not undeclared divergence.

Ledger entries that match nothing are warnings ("prune it"); an entry
``until:<40-hex commit>`` whose commit is an ancestor of the pinned tag can be
retired, the same rule as patches. How far HEAD is behind the newest upstream
release is information only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from forktool.config import Config
from forktool.engine.patches.history_contract import fork_files
from forktool.engine.release.pin_state import require_pin, require_tree
from forktool.engine.retirement.releases import fork_releases
from forktool.errors import FatalError, Finding, InputError, command_line
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
    tarball: bool = False  # HEAD has it as the imported release tarball does

    @property
    def declared(self) -> bool:
        return self.entry is not None or self.own or self.tarball

    @property
    def failing(self) -> bool:
        return not self.declared or (self.kind in _ALWAYS_FINDING and not self.tarball)

    def to_json(self) -> dict[str, object]:
        return {
            "path": self.path,
            "kind": self.kind,
            "declared": self.declared,
            "ledger_line": self.entry.line if self.entry else None,
            "own": self.own,
            "tarball": self.tarball,
        }


@dataclass(frozen=True)
class TarballDelta:
    """What the imported release tarball adds to, changes in and lacks from the tag."""

    commit: str
    added: tuple[str, ...]
    modified: tuple[str, ...]  # also type changes
    deleted: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "commit": self.commit,
            "added": list(self.added),
            "modified": list(self.modified),
            "deleted": list(self.deleted),
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
    tarball: TarballDelta | None = None  # only for a tarball-import pin

    @property
    def ok(self) -> bool:
        return not any(f.severity == "error" for f in self.findings)

    def of_kind(self, kind: str) -> list[PathChange]:
        return [c for c in self.changes if c.kind == kind]

    @property
    def undeclared(self) -> list[str]:
        """Every path that keeps the fork from being aligned, sorted."""
        bad = {c.path for c in self.changes if c.failing}
        bad |= {r.path for r in self.resurrected}
        return sorted(bad)

    def summary(self) -> dict[str, dict[str, int]]:
        kinds = ("tracked",) if self.layout == "overlay" else KINDS[:4]
        out = {}
        for kind in kinds:
            changes = self.of_kind(kind)
            failing = [c for c in changes if c.failing]
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
            "tarball": self.tarball.to_json() if self.tarball else None,
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
                f"fetch upstream ({command_line('git', 'fetch', config.upstream_remote, '--tags')})"
                ", or fix the commit id",
            )
    missing = git.not_ancestors([e.until_commit for e in pending if e.until_commit], tag_commit)
    return [e for e in pending if e.until_commit not in missing]


def _newest(config: Config, git: Git, tag_commit: str, head: str) -> NewestRelease | None:
    releases = fork_releases(git, config)
    if not releases:
        return None
    tag, commit = releases[-1].name, releases[-1].commit
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
    covering = _covering_globs(changes)
    for change in changes:
        finding = _change_finding(ledger, tag, change)
        glob = covering.get(change.path)
        if finding is not None and glob is not None:
            count = sum(g == glob for g in covering.values())
            finding = finding._replace(
                hint=f"declare all {count} in one line: add {glob} permanent <why> (or this "
                f"path alone: add {change.path} permanent <why>), or remove them",
            )
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
                f"delete it again: {command_line('git', 'rm', '--', item.path)}",
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


def _covering_globs(changes: Sequence[PathChange]) -> dict[str, str]:
    """``dir/**`` for each undeclared addition in a top directory that only adds files, two
    or more of them undeclared (a committed ``debian/``, say): one ledger line declares
    them all."""
    by_top: dict[str, list[PathChange]] = {}
    for change in changes:
        if "/" in change.path:
            by_top.setdefault(change.path.split("/", 1)[0], []).append(change)
    covering = {}
    for top, group in by_top.items():
        undeclared = [c for c in group if not c.declared]
        if len(undeclared) > 1 and all(c.kind in ("added", "tracked") for c in group):
            covering.update({c.path: f"{top}/**" for c in undeclared})
    return covering


def _change_finding(ledger: str, tag: str, change: PathChange) -> Finding | None:
    if change.tarball:
        return None
    if change.kind == "modified":
        return Finding(
            "error",
            f"modifies an upstream file of {tag} in place; changes to upstream files belong "
            "in patches",
            change.path,
            None,
            "move the change into a patch and restore the file: "
            + command_line("git", "checkout", tag, "--", change.path),
        )
    if change.kind == "type-changed":
        return Finding(
            "error",
            f"changes the type of an upstream file of {tag} (file, symlink or submodule)",
            change.path,
            None,
            f"restore it: {command_line('git', 'checkout', tag, '--', change.path)}",
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


def tarball_delta(git: Git, tag_commit: str, imported: str) -> TarballDelta:
    """The imported tarball's tree against the tag's."""
    kinds: dict[str, list[str]] = {"A": [], "M": [], "D": []}
    for status, path in git.diff_name_status(tag_commit, imported):
        kinds["M" if status not in kinds else status].append(path)
    return TarballDelta(imported, tuple(kinds["A"]), tuple(kinds["M"]), tuple(kinds["D"]))


def _from_tarball(
    git: Git, changes: list[PathChange], delta: TarballDelta, head: str
) -> list[PathChange]:
    """``changes`` with those HEAD made exactly as the tarball does marked ``tarball``."""
    delta_paths = {*delta.added, *delta.modified, *delta.deleted}
    candidates = [c for c in changes if c.path in delta_paths and c.kind != "tracked"]
    if not candidates:
        return changes
    differs = {path for _, path in git.diff_name_status(delta.commit, head)}
    same = {c.path for c in candidates if c.path not in differs}
    return [replace(c, tarball=True) if c.path in same else c for c in changes]


def _measure(
    config: Config, git: Git, ledger: Ledger, tag_commit: str, head: str
) -> tuple[list[PathChange], list[Resurrected], list[LedgerEntry], list[Finding]]:
    """HEAD's changes, resurrected deletions, stale entries, and the findings about them."""
    changes = _classify(git, config, ledger, tag_commit, head)
    if config.pin_import is not None:
        changes = _from_tarball(
            git, changes, tarball_delta(git, tag_commit, config.pin_import), head
        )
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
    delta = None
    if config.pin_import is not None:
        require_tree(config, git)
        delta = tarball_delta(git, tag_commit, config.pin_import)
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
        tarball=delta,
    )
