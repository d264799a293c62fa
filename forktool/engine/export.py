"""Commits <-> patch files: ``export --from REV`` and ``import --branch NAME``.

``export`` turns the commits between the pin and REV into ``patches/``, ``series`` and
``upstream.map``, in canonical form (so the same commits, or a rebase that keeps
their content, give the same bytes), after checking them against the history
contract. ``import`` builds the reverse: a branch of one commit per patch on the
pin, made in a temporary index with ``commit-tree`` and ``update-ref``, never
touching the checkout. Import then export is byte-identical for a canonical series.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from forktool.config import Config
from forktool.engine.canonical import (
    Chain,
    build_chain,
    chain_bytes,
    format_range,
    loose_patch,
    range_diff,
)
from forktool.engine.history import check_history
from forktool.errors import FatalError
from forktool.faults import faultpoint
from forktool.fork import NOTES_DIR, Fork, Patch, load_fork, patch_files_on_disk
from forktool.fsutil import write_files
from forktool.git import Git, TempIndex
from forktool.model.patchfile import UPSTREAM_PR, parse_patch
from forktool.model.series import format_lines, parse_series
from forktool.model.text import decode_lines
from forktool.model.upstream_map import MapEntry

MAP_HEADER = "# <patch-file> <upstream commit(s)> [url or note]"
ZERO = "0" * 40


@dataclass(frozen=True)
class ExportedPatch:
    patch: str
    commit: str  # the source commit on REV
    upstream_commits: tuple[str, ...]  # () for 'none'
    status: str  # added, changed, unchanged

    def to_json(self) -> dict[str, object]:
        return {
            "patch": self.patch,
            "commit": self.commit,
            "upstream_commits": list(self.upstream_commits),
            "fork_only": not self.upstream_commits,
            "status": self.status,
        }


@dataclass(frozen=True)
class ExportResult:
    rev: str
    rev_commit: str
    base: str
    base_commit: str
    patches: tuple[ExportedPatch, ...]
    removed: tuple[str, ...]  # stale patch files deleted
    written: tuple[str, ...]  # every file changed, relative to the fork root
    orphaned_notes: tuple[str, ...]  # notes whose patch is gone (kept, reported)
    range_diff: str
    message: str = ""

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "rev": self.rev,
            "rev_commit": self.rev_commit,
            "base": self.base,
            "base_commit": self.base_commit,
            "ok": True,
            "patches": [p.to_json() for p in self.patches],
            "removed": list(self.removed),
            "written": list(self.written),
            "orphaned_notes": list(self.orphaned_notes),
            "range_diff": self.range_diff,
        }
        if self.message:
            data["message"] = self.message
        return data


def _leading_comments(path: Path) -> list[str]:
    """The comment and blank lines a file starts with (kept when it is rewritten)."""
    if not path.is_file():
        return []
    lines = decode_lines(path.read_bytes(), path.name).lines
    kept = []
    for line in lines:
        if line.strip() and not line.lstrip().startswith("#"):
            break
        kept.append(line)
    return kept


def _old_patches(config: Config) -> tuple[Patch, ...]:
    if not config.series_path.is_file() or not config.map_path.is_file():
        return ()
    return load_fork(config, strict=False).patches


def _as_patches(directory: Path, files: list[tuple[str, bytes]]) -> list[Patch]:
    patches = []
    for name, data in files:
        path = directory / name
        path.write_bytes(data)
        patches.append(loose_patch(name, path, data))
    return patches


def _review(index: TempIndex, old: Chain, new: Chain) -> tuple[str, str]:
    """The range-diff of the old series against the new, or why there is none."""
    if not old.links:
        return "", "there was no earlier series to compare with"
    if not old.complete:
        failed = old.failed
        assert failed is not None
        return "", f"the earlier series does not apply on the pin ({failed.patch.name})"
    return range_diff(index, (old.base, old.tip), (new.base, new.tip)), ""


def _require_commits(git: Git, commits: set[str]) -> None:
    types = git.object_types(commits)
    missing = sorted(c for c, t in types.items() if t != "commit")
    if missing:
        raise FatalError(
            f"Upstream-Merge names {missing[0]}, which is not a commit in this repository",
            "fetch upstream (git fetch <upstream-remote> --tags) or fix the trailer",
        )


def export_series(config: Config, git: Git, rev: str) -> ExportResult:
    """Write the commits of ``pin..rev`` as the fork's patches, series and map."""
    history = check_history(config, git, rev)
    if history.message:
        raise FatalError(history.message, "export needs at least one commit on top of the pin")
    if history.violations:
        first = history.violations[0]
        more = f" (and {len(history.violations) - 1} more)" if len(history.violations) > 1 else ""
        raise FatalError(
            f"{first.commit[:12]} {first.subject}: {first.message}{more}",
            f"run 'forktool check-history {rev}' for every violation; nothing was written",
        )
    base, tip = history.base_commit, history.rev_commit
    work = Path(tempfile.mkdtemp(prefix="forktool-export-"))
    try:
        with git.temp_index() as index:
            sources = _as_patches(work, format_range(index, base, tip))
            chain = build_chain(index, base, sources, base_name=config.pin_tag, allow_offset=False)
            if not chain.complete or len(chain.links) != len(history.commits):
                raise FatalError(f"the commits of {rev} could not be replayed on the pin")
            generated = chain_bytes(index, chain)
            old = build_chain(index, base, _old_patches(config), base_name=config.pin_tag)
            review, note = _review(index, old, chain)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    names = [patch.name for patch in sources]
    commits = [c.commit for c in history.commits]
    return _write_export(
        config, git, rev, history.base, base, tip, names, commits, generated, review, note
    )


def _write_export(
    config: Config,
    git: Git,
    rev: str,
    base_name: str,
    base: str,
    tip: str,
    names: list[str],
    commits: list[str],
    generated: list[bytes],
    review: str,
    note: str,
) -> ExportResult:
    changes: dict[Path, bytes | None] = {}
    exported: list[ExportedPatch] = []
    map_lines = _leading_comments(config.map_path) or [MAP_HEADER]
    upstream: set[str] = set()
    for name, commit, data in zip(names, commits, generated, strict=True):
        parsed = parse_patch(data)
        declared = parsed.upstream_merge()
        if declared is None:
            raise FatalError(f"{commit[:12]}: the exported patch has no readable Upstream-Merge")
        upstream.update(declared)
        pr = parsed.header.trailer(UPSTREAM_PR)
        map_lines.append(MapEntry(name, declared, pr.value if pr else "", 0).render())
        path = config.patches_dir / name
        status = (
            "added"
            if not path.is_file()
            else "unchanged"
            if path.read_bytes() == data
            else "changed"
        )
        exported.append(ExportedPatch(name, commit, declared, status))
        if status != "unchanged":
            changes[path] = data
    _require_commits(git, upstream)
    removed = [n for n in patch_files_on_disk(config.patches_dir) if n not in names]
    for name in removed:
        changes[config.patches_dir / name] = None
    series = format_lines(_leading_comments(config.series_path) + names)
    parse_series(series)  # names format-patch chose are always valid series entries
    for path, data in ((config.series_path, series), (config.map_path, format_lines(map_lines))):
        if not path.is_file() or path.read_bytes() != data:
            changes[path] = data
    if changes:
        write_files(changes)
    stems = {Path(n).stem for n in names}
    notes_dir = config.patches_dir / NOTES_DIR
    orphaned = (
        sorted(config.rel(p) for p in notes_dir.glob("*.md") if p.is_file() and p.stem not in stems)
        if notes_dir.is_dir()
        else []
    )
    return ExportResult(
        rev,
        tip,
        base_name,
        base,
        tuple(exported),
        tuple(f"{config.patches}/{n}" for n in removed),
        tuple(sorted(config.rel(p) for p in changes)),
        tuple(orphaned),
        review,
        note,
    )


# -- import ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ImportResult:
    branch: str
    base: str
    base_commit: str
    tip: str
    replaced: str | None  # the branch's earlier tip under --force
    commits: tuple[tuple[str, str], ...]  # (patch, commit)

    def to_json(self) -> dict[str, object]:
        return {
            "branch": self.branch,
            "base": self.base,
            "base_commit": self.base_commit,
            "tip": self.tip,
            "replaced": self.replaced,
            "commits": [{"patch": p, "commit": c} for p, c in self.commits],
        }


def _checked_out(git: Git, ref: str) -> bool:
    listing = git.out(["worktree", "list", "--porcelain"], purpose="list worktrees")
    return any(line == f"branch {ref}" for line in listing.splitlines())


def import_series(
    fork: Fork, git: Git, branch: str, *, base_commit: str, force: bool = False
) -> ImportResult:
    """A branch ``branch``: the pin plus one commit per patch, in series order."""
    if not fork.patches:
        raise FatalError(
            f"{fork.config.series} lists no patches: there is nothing to import",
            "add patches to the series first",
        )
    valid = git.run(
        ["check-ref-format", "--branch", branch], purpose="check the branch name", check=False
    )
    if not valid.ok or branch.startswith("-"):
        raise FatalError(f"'{branch}' is not a valid branch name")
    ref = f"refs/heads/{branch}"
    existing = git.try_resolve(ref)
    if existing is not None and not force:
        raise FatalError(
            f"branch '{branch}' already exists (at {existing[:12]})",
            "pick another name, or pass --force to replace it",
        )
    if existing is not None and _checked_out(git, ref):
        raise FatalError(
            f"branch '{branch}' is checked out; import never moves a checked-out branch",
            "check out another branch first, or import under another name",
        )
    tag = fork.config.pin_tag
    with git.temp_index(keep_objects=True) as index:
        chain = build_chain(index, base_commit, fork.patches, base_name=tag, allow_offset=False)
        failed = chain.failed
        if failed is not None:
            raise FatalError(
                f"{failed.patch.rel}: {failed.verdict.message}",
                "import needs every patch to apply exactly on the pin: run 'forktool verify' "
                "and 'forktool fmt'",
            )
        faultpoint("import.update_ref")
        git.run(
            ["update-ref", "-m", "forktool import", ref, chain.tip, existing or ZERO],
            purpose=f"create branch {branch}",
        )
    commits = tuple((link.patch.name, link.commit or "") for link in chain.links)
    return ImportResult(branch, tag, base_commit, chain.tip, existing, commits)
