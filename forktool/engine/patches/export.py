"""Commits -> patch files: ``export --from REV``.

The commits between the pin and REV become ``patches/``, ``series`` and
``upstream.map``, in canonical form (so the same commits, or a rebase that keeps
their content, give the same bytes), after checking them against the history
contract. The reverse, ``import``, is :mod:`forktool.engine.patches.import_`; import then
export is byte-identical for a canonical series.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from forktool.config import Config
from forktool.engine.patches.canonical import (
    Chain,
    build_chain,
    chain_bytes,
    format_range,
    loose_patch,
    range_diff,
    with_from_sha,
)
from forktool.engine.patches.commit_meta import meta_for_form
from forktool.engine.patches.history_contract import HistoryResult, check_history
from forktool.engine.patches.map_suggest import resolve_refs
from forktool.errors import FatalError, command_line
from forktool.fork import NOTES_DIR, NOTES_README, Patch, load_fork, patch_files_on_disk
from forktool.fsutil import write_files
from forktool.git import Git, TempIndex
from forktool.model.carrier import (
    MAP_KEY,
    PATCH_KEY,
    Carrier,
    plain_header,
    split_carrier,
    strip_from_mail,
)
from forktool.model.patchfile import ENCODING, ERRORS
from forktool.model.revision import Revision
from forktool.model.series import format_lines, parse_series
from forktool.model.text import decode_lines
from forktool.model.upstream_map import MapEntry, MapKind, parse_map
from forktool.model.upstream_refs import UpstreamRef, read_refs

MAP_HEADER = "# <patch-file> <upstream commit(s)> [url or note]"


@dataclass(frozen=True)
class ExportedPatch:
    patch: str
    commit: str  # the source commit on REV
    upstream_commits: tuple[str, ...]  # () for 'none' and 'pending'
    status: str  # added, changed, unchanged
    kind: MapKind = "commits"  # what the map line says: commits, none or pending
    upstream_pr: str | None = None
    source: str | None = None  # the commit message line the map entry comes from

    def to_json(self) -> dict[str, object]:
        return {
            "patch": self.patch,
            "commit": self.commit,
            "upstream_commits": list(self.upstream_commits),
            "fork_only": self.kind == "none",
            "pending": self.kind == "pending",
            "upstream_pr": self.upstream_pr,
            "source": self.source,
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


def _switched_off(config: Config, names: list[str]) -> tuple[list[str], list[str], list[str]]:
    """What the series switches off (``#name`` lines naming a patch file that is there,
    and not exported again): those lines past the leading comments, their map lines,
    and the file names. Export keeps all three: the patch is off, not gone (the import
    branch cannot carry it, as quilt and dpkg-source never apply it)."""
    if not config.series_path.is_file():
        return [], [], []
    old = parse_series(config.series_path.read_bytes(), config.series_path.name)
    lead = len(_leading_comments(config.series_path))
    off = [
        e for e in old.disabled if e.name not in names and (config.patches_dir / e.name).is_file()
    ]
    umap = parse_map(config.map_path.read_bytes()) if config.map_path.is_file() else None
    map_lines = [
        umap.lines[m.line - 1]
        for e in off
        if umap is not None and (m := umap.get(e.name)) is not None
    ]
    lines = [old.lines[e.line - 1] for e in off if e.line > lead]
    return lines, map_lines, [e.name for e in off]


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


def _review(index: TempIndex, old: Chain, new: Chain) -> tuple[str, str]:
    """The range-diff of the old series against the new, or why there is none."""
    if not old.links:
        return "", "there was no earlier series to compare with"
    if not old.complete:
        failed = old.failed
        assert failed is not None
        return "", f"the earlier series does not apply on the pin ({failed.patch.name})"
    return range_diff(index, (old.base, old.tip), (new.base, new.tip)), ""


def _require_commits(git: Git, derived: list[Derived]) -> None:
    wanted = {c for d in derived for c in d.entry.commits}
    types = git.object_types(wanted)
    for item in derived:
        missing = [c for c in item.entry.commits if types.get(c) != "commit"]
        if missing:
            raise FatalError(
                f"{item.commit[:12]}: '{item.source}' names {missing[0]}, which is not a commit "
                "in this repository",
                "fetch upstream (git fetch <upstream-remote>) or fix the commit message; "
                "nothing was written",
            )


@dataclass(frozen=True)
class Derived:
    """One exported commit: its file name, series line and map entry, and where from."""

    commit: str
    name: str
    series_line: str
    entry: MapEntry
    source: str | None  # the message line the entry comes from; None: nothing said
    carried_map_line: str | None = None  # the map line import carried, verbatim

    @property
    def map_line(self) -> str:
        return self.carried_map_line or self.entry.render()


@dataclass(frozen=True)
class _Read:
    commit: str
    name: str
    source_bytes: bytes  # the patch to replay
    carrier: Carrier | None
    ref: UpstreamRef | None


_NUMBERED = re.compile(r"([0-9]{4,})-")


def _number_new_commits(read: list[_Read]) -> list[_Read]:
    """Names for the commits ``import`` did not make. format-patch numbers every commit
    by its place; next to the kept names of imported ones that repeats a number the
    series already uses (0005, 0006, 0007, then a new 0004). A new commit takes the next
    number above the highest kept one instead; with no numbered kept name, format-patch's
    name stands."""
    kept = [int(m.group(1)) for r in read if r.carrier and (m := _NUMBERED.match(r.name))]
    if not kept:
        return read
    number = max(kept) + 1
    named: list[_Read] = []
    for item in read:
        found = _NUMBERED.match(item.name) if item.carrier is None else None
        if found:
            item = replace(item, name=f"{number:04d}-{item.name[found.end() :]}")
            number += 1
        named.append(item)
    return named


def _read_commit(commit: str, name: str, data: bytes, message: str) -> _Read:
    """One formatted commit, with what import carried (if anything) taken off again."""
    body, carrier = split_carrier(message)
    if carrier is None:
        subject, _, rest = message.partition("\n")
        return _Read(commit, name, data, None, read_refs(rest.split("\n"), subject))
    source = with_from_sha(carrier.from_sha, strip_from_mail(data))
    if carrier.plain:
        at = source.find(b"\ndiff --git ")
        source = plain_header(body).encode(ENCODING, ERRORS) + source[at + 1 :]
    return _Read(commit, carrier.name, source, carrier, None)


def _derive(item: _Read, resolved: dict[str, tuple[UpstreamRef, bool, tuple[str, ...]]]) -> Derived:
    if item.carrier is not None:
        series = parse_series((item.carrier.series_line + "\n").encode(), PATCH_KEY)
        if series.findings or len(series.entries) != 1:
            problem = series.findings[0].message if series.findings else "no patch name"
            raise FatalError(
                f"{item.commit[:12]}: its '{PATCH_KEY}: {item.carrier.series_line}' line is not "
                f"a series line: {problem}",
                f"fix or remove the {PATCH_KEY} line (import writes it); nothing was written",
            )
        umap = parse_map((item.carrier.map_line + "\n").encode(), MAP_KEY)
        if umap.findings or not umap.entries or umap.entries[0].patch != item.name:
            raise FatalError(
                f"{item.commit[:12]}: its '{MAP_KEY}: {item.carrier.map_line}' line is not an "
                f"upstream.map line for {item.name}",
                f"fix or remove the {MAP_KEY} line (import writes it); nothing was written",
            )
        entry = umap.entries[0]
        return Derived(
            item.commit,
            item.name,
            item.carrier.series_line,
            entry,
            f"{MAP_KEY}: {item.carrier.map_line[len(item.name) :].strip()}",
            item.carrier.map_line,
        )
    if item.commit not in resolved:
        return Derived(
            item.commit, item.name, item.name, MapEntry(item.name, (), "", 0, "none"), None
        )
    ref = resolved[item.commit][0]
    entry = MapEntry(item.name, ref.commits, ref.pr or "", 0, ref.kind)
    return Derived(item.commit, item.name, item.name, entry, ref.source)


# The violations that make a commit impossible to export as one patch, policy or not.
STRUCTURAL = ("merge", "empty", "fork-file")
ACCEPTED = (
    "each commit's last paragraph needs 'Upstream-Merge: <40-hex>[,<40-hex>...]' or "
    "'Upstream-Merge: none'"
)


def _refuse(config: Config, rev: str, history: HistoryResult) -> None:
    """Exit 2 on what blocks the export: structure always, the contract when opted into."""
    policy = config.history.configured
    blocking = [v for v in history.violations if policy or v.check in STRUCTURAL]
    if not blocking:
        return
    first = blocking[0]
    more = f" (and {len(blocking) - 1} more)" if len(blocking) > 1 else ""
    hint = (
        f"run '{command_line('forktool', 'check-history', rev)}' for every violation; "
        "nothing was written"
    )
    if first.check == "trailer":
        hint = (
            f"the history: policy in {config.path.name} is on: {ACCEPTED}; remove 'history:' "
            "to derive each map entry from what the commit says; nothing was written"
        )
    raise FatalError(f"{first.commit[:12]} {first.subject}: {first.message}{more}", hint)


def export_series(config: Config, git: Git, revision: Revision) -> ExportResult:
    """Write the commits of ``pin..revision`` as the fork's patches, series and map."""
    rev = revision.name
    history = check_history(config, git, revision)
    if history.message:
        raise FatalError(history.message, "export needs at least one commit on top of the pin")
    _refuse(config, rev, history)
    base, tip = history.base_commit, history.rev_commit
    commits = [c.commit for c in history.commits]
    messages = git.commit_messages(commits)
    work = Path(tempfile.mkdtemp(prefix="forktool-export-"))
    try:
        with git.temp_index() as index:
            formatted = format_range(index, base, tip)
            if len(formatted) != len(commits):
                raise FatalError(
                    f"git format-patch wrote {len(formatted)} patches for {len(commits)} commits"
                )
            read = _number_new_commits(
                [
                    _read_commit(commit, name, data, messages[commit])
                    for (name, data), commit in zip(formatted, commits, strict=True)
                ]
            )
            sources = []
            for number, item in enumerate(read):
                (work / f"{number:04d}").write_bytes(item.source_bytes)
                sources.append(loose_patch(item.name, work / f"{number:04d}", item.source_bytes))
            chain = build_chain(index, base, sources, base_name=config.pin_tag, allow_offset=False)
            if not chain.complete or len(chain.links) != len(commits):
                raise _replay_failure(rev, history, chain)
            _prove_replay(index, chain, history)
            generated = chain_bytes(index, chain)
            old = build_chain(
                index, base, _old_patches(config), base_name=config.pin_tag,
                meta_for=meta_for_form(config.patch_form), rule=config.apply_rule,
            )  # fmt: skip
            if config.patch_form == "maintainers":
                generated = _kept_as_written(index, old, chain, generated)
            review, note = _review(index, old, chain)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    refs = {item.commit: item.ref for item in read if item.ref is not None}
    resolved = resolve_refs(git, refs)
    derived = [_derive(item, resolved) for item in read]
    _require_commits(git, derived)
    return _write_export(config, rev, history.base, base, tip, derived, generated, review, note)


def _kept_as_written(
    index: TempIndex, old: Chain, new: Chain, generated: list[bytes]
) -> list[bytes]:
    """``patch_form: maintainers``: each patch file as it is on disk (quilt's ``Index:``
    lines, timestamps and all) while the series up to it is the same patches giving the
    same trees; from the first that differs on, the generated bytes. So import then
    export gives back a maintainers' series byte for byte, as ``fmt`` leaves it."""
    pairs = [
        (was, now)
        for was, now in zip(old.links, new.links, strict=False)
        if was.commit is not None and now.commit is not None
    ]
    trees = index.tree_ids([c for was, now in pairs for c in (was.commit, now.commit) if c])
    kept = list(generated)
    for at, (was, now) in enumerate(pairs):
        if was.patch.name != now.patch.name or trees[2 * at] != trees[2 * at + 1]:
            break
        kept[at] = was.patch.data
    return kept


def _prove_replay(index: TempIndex, chain: Chain, history: HistoryResult) -> None:
    """Each commit's replayed patch must give exactly the commit's tree (the patch files
    themselves are proven against the replay by ``chain_bytes``): a commit whose message
    carries a diff (git apply takes it as part of the patch) is refused naming it,
    before anything is written."""
    made = index.tree_ids([link.commit for link in chain.links if link.commit is not None])
    wanted = index.tree_ids([c.commit for c in history.commits])
    for commit, got, tree in zip(history.commits, made, wanted, strict=True):
        if got != tree:
            raise FatalError(
                f"{commit.commit[:12]} {commit.subject}: its exported patch, replayed on its "
                "parent, gives another tree than the commit",
                "an exported patch must reproduce its commit exactly (a diff pasted into the "
                "commit message is applied with the patch: indent it or drop it); nothing was "
                "written",
            )


def _replay_failure(rev: str, history: HistoryResult, chain: Chain) -> FatalError:
    """Why a commit could not be replayed on the pin, in the patch's own words."""
    failed = chain.failed
    if failed is None:
        return FatalError(f"the commits of {rev} could not be replayed on the pin")
    commit = history.commits[len(chain.links) - 1]
    return FatalError(
        f"{commit.commit[:12]} {commit.subject}: could not be replayed on the pin: "
        f"{failed.verdict.status}: {failed.verdict.message}",
        "fix the commit (export replays every commit on the pin exactly); nothing was written",
    )


def _status(path: Path, data: bytes) -> str:
    """How export leaves patch file ``path``: added, unchanged or changed."""
    if not path.is_file():
        return "added"
    return "unchanged" if path.read_bytes() == data else "changed"


def _write_export(
    config: Config,
    rev: str,
    base_name: str,
    base: str,
    tip: str,
    derived: list[Derived],
    generated: list[bytes],
    review: str,
    note: str,
) -> ExportResult:
    changes: dict[Path, bytes | None] = {}
    exported: list[ExportedPatch] = []
    map_lines = _leading_comments(config.map_path) or [MAP_HEADER]
    names = [item.name for item in derived]
    if len(set(names)) != len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise FatalError(f"two commits of {rev} export as {twice}", "rename one of them")
    for item, data in zip(derived, generated, strict=True):
        map_lines.append(item.map_line)
        path = config.patches_dir / item.name
        status = _status(path, data)
        entry = item.entry
        exported.append(
            ExportedPatch(
                item.name, item.commit, entry.commits, status, entry.kind, entry.pr, item.source
            )
        )
        if status != "unchanged":
            changes[path] = data
    off_lines, off_map, off = _switched_off(config, names)
    map_lines += off_map
    removed = [n for n in patch_files_on_disk(config.patches_dir) if n not in names + off]
    for name in removed:
        changes[config.patches_dir / name] = None
    lead = _leading_comments(config.series_path)
    series = format_lines(lead + [d.series_line for d in derived] + off_lines)
    parse_series(series)  # names format-patch chose are always valid series entries
    for path, data in ((config.series_path, series), (config.map_path, format_lines(map_lines))):
        if not path.is_file() or path.read_bytes() != data:
            changes[path] = data
    if changes:
        write_files(changes)
    return ExportResult(
        rev,
        tip,
        base_name,
        base,
        tuple(exported),
        tuple(f"{config.patches}/{n}" for n in removed),
        tuple(sorted(config.rel(p) for p in changes)),
        tuple(orphaned_notes(config, names)),
        review,
        note,
    )


def orphaned_notes(config: Config, names: list[str]) -> list[str]:
    """Notes named after no patch of ``names`` (the notes README is nobody's note)."""
    stems = {Path(n).stem for n in names}
    notes_dir = config.patches_dir / NOTES_DIR
    if not notes_dir.is_dir():
        return []
    return sorted(
        config.rel(p)
        for p in notes_dir.glob("*.md")
        if p.is_file() and p.stem not in stems and p.name != NOTES_README
    )
