"""``forktool map suggest``: the upstream references patch headers already carry.

Each patch's header is read by :func:`forktool.model.upstream_refs.read_refs` (DEP-3,
Yocto, openSUSE, Linux stable/Android, git's cherry-picked line, forktool's
trailers), and the commit a ``From <sha>`` first line names when it is upstream's
(on its branch or in a release tag, with the patch's subject). Commit ids are looked up
in the repository in one ``cat-file`` call: a full id is kept as written when it is a
commit or not here yet (``present`` says which), an abbreviation only when it names
exactly one commit here; a tree, blob or tag object is no commit. A patch with any name
dropped maps to ``pending``, never to the commits that remain: nothing is guessed.
``--write`` fills the map entries that are missing, ``none`` or
``pending`` and never replaces commits someone wrote.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from forktool.engine.patches.map_edit import MapChange, apply_map_changes, entry_value
from forktool.engine.upstream.resolve import branch_ref
from forktool.fork import Fork, Patch
from forktool.git import Git
from forktool.model.upstream_map import MapEntry
from forktool.model.upstream_refs import RefKind, UpstreamRef, read_refs

Action = Literal["write", "unchanged", "kept"]


@dataclass(frozen=True)
class Suggestion:
    patch: str
    kind: RefKind
    commits: tuple[str, ...]  # full 40-hex ids
    pr: str | None
    source: str  # the header line it came from
    present: bool  # every commit exists in this repository
    unresolved: tuple[str, ...]  # abbreviations that name no single commit here (dropped)
    current: str | None  # the map's entry now (after the patch name), None: no line
    entry: str  # the entry --write would write
    action: Action  # what --write does with it

    def to_json(self) -> dict[str, object]:
        return {
            "patch": self.patch,
            "commits": list(self.commits),
            "pr": self.pr,
            "source": self.source,
            "present": self.present,
            "kind": self.kind,
            "unresolved": list(self.unresolved),
            "current": self.current,
            "entry": self.entry,
            "action": self.action,
        }


@dataclass(frozen=True)
class SuggestResult:
    suggestions: tuple[Suggestion, ...]
    written: tuple[MapChange, ...]
    write: bool
    map_file: str

    def to_json(self) -> dict[str, object]:
        return {
            "suggestions": [s.to_json() for s in self.suggestions],
            "write": self.write,
            "written": [c.to_json() for c in self.written],
            "map": self.map_file,
        }


def patch_refs(patches: Sequence[Patch]) -> dict[str, UpstreamRef]:
    """What each patch's header says about upstream (patches that say nothing left out)."""
    found = {}
    for patch in patches:
        header = patch.parsed.header
        ref = read_refs(header.lines, header.subject)
        if ref is not None:
            found[patch.name] = ref
    return found


@dataclass(frozen=True)
class UpstreamLine:
    """Where upstream's history is, to judge a ``From <sha>`` line: its development
    branch (a ref, None when not here) and its release tags (a glob)."""

    branch: str | None
    release_tags: str


def from_line_refs(
    git: Git, patches: Sequence[Patch], upstream: UpstreamLine
) -> dict[str, UpstreamRef]:
    """The ``From <sha>`` lines (git format-patch's) that name upstream commits: each
    commit is here, on upstream's branch or in a release tag, with its mail's subject.
    A file of several mails names the commit of every mail, or nothing: its first
    commit alone would retire the patch at a release that lacks the others. Never a
    commit only on another branch (a PR's) or one not here."""
    each = {p.name: found for p in patches if (found := _mail_commits(p))}
    wanted = list(dict.fromkeys(sha for found in each.values() for sha, _ in found))
    names = git.resolve_names(wanted)
    here = [sha for sha in wanted if (names.get(sha) or ("", ""))[1] == "commit"]
    messages = git.commit_messages(here)
    named = {
        name: tuple(sha for sha, _ in found)
        for name, found in each.items()
        if all(sha in messages and _same_subject(messages[sha], said) for sha, said in found)
    }
    upstreams = _upstream_commits(git, {sha for shas in named.values() for sha in shas}, upstream)
    refs = {}
    for patch in patches:
        shas = named.get(patch.name)
        if shas is not None and upstreams.issuperset(shas):
            source = patch.parsed.header.lines[0].rstrip("\r")
            if len(shas) > 1:
                source += f" (and the From lines of {len(shas) - 1} more mails)"
            refs[patch.name] = UpstreamRef("commits", shas, None, source)
    return refs


def _mail_commits(patch: Patch) -> list[tuple[str, str]]:
    """(commit, subject) of each mail of the patch file; [] when one names no commit
    (an all-zero id) or has no subject: then no From line is taken."""
    header = patch.parsed.header
    if not header.from_sha:
        return []
    found = patch.mails()
    if not found or any(sha == "0" * 40 or not subject for sha, subject in found):
        return []
    return [(sha, subject or "") for sha, subject in found]


def _upstream_commits(git: Git, commits: set[str], upstream: UpstreamLine) -> set[str]:
    """Those of ``commits`` on upstream's branch or in a release tag, in bulk: one
    ancestry check against the branch, then one look at the tags for the rest."""
    if not commits:
        return set()
    found = git.ancestors(commits, upstream.branch) if upstream.branch is not None else set()
    rest = commits - found
    if rest:
        found |= git.in_any(rest, git.tag_commits(upstream.release_tags).values())
    return found


def _same_subject(message: str, subject: str) -> bool:
    first = " ".join(message.strip().split("\n", 1)[0].split())
    return first == " ".join(subject.split())


def resolve_refs(
    git: Git, refs: dict[str, UpstreamRef]
) -> dict[str, tuple[UpstreamRef, bool, tuple[str, ...]]]:
    """Each ref with its commits as full ids, whether all are here, and what was dropped.

    One ``cat-file --batch-check`` for every name of every patch (and one more for the
    annotated tags among them, each taken for the commit it points to).
    """
    names = git.resolve_names(c for ref in refs.values() for c in ref.commits)
    # An annotated tag's own id (what `git rev-parse v1.2` prints) stands for its commit.
    tags = [name for name, hit in names.items() if hit is not None and hit[1] == "tag"]
    peeled = git.resolve_names(f"{name}^{{commit}}" for name in tags) if tags else {}
    for name in tags:
        if (commit := peeled.get(f"{name}^{{commit}}")) is not None:
            names[name] = commit
    resolved = {}
    for patch, ref in refs.items():
        commits: list[str] = []
        dropped: list[str] = []
        present = True
        for name in ref.commits:
            hit = names.get(name)
            if hit is not None and hit[1] == "commit":
                commits.append(hit[0])
            elif hit is None and len(name) == 40:
                commits.append(name)  # written in full: kept, even when not fetched yet
                present = False
            else:  # an abbreviation naming no single commit, or a tree, blob or tag object
                dropped.append(name)
        unique = tuple(dict.fromkeys(commits))
        if ref.commits and (dropped or not unique):
            # A name that is no commit here: the change is upstream, its ids not all known.
            # Mapping the rest alone would weaken the retirement condition (every mapped
            # commit in the tag), so nothing is mapped.
            ref = replace(ref, kind="pending", commits=())
        else:
            ref = replace(ref, commits=unique)
        resolved[patch] = (ref, present and bool(unique), tuple(dropped))
    return resolved


def _note(ref: UpstreamRef, current: MapEntry | None) -> str:
    """The note to write: the map's own note kept, the header's PR put first when the
    note does not start with a URL already (so it stays the patch's PR)."""
    if current is None or not current.note:
        return ref.pr or ""
    if current.pr or not ref.pr:
        return current.note
    return f"{ref.pr} {current.note}"


def _decide(ref: UpstreamRef, current: MapEntry | None) -> tuple[Action, str]:
    """What --write does with ``ref`` given the map's entry now, and the entry ``ref`` implies."""
    first = ",".join(ref.commits) if ref.commits else ref.kind
    wanted = f"{first} {_note(ref, current)}".strip()
    if current is None:
        return "write", wanted
    if current.kind == "commits":
        same = set(current.commits) == set(ref.commits)
        return ("unchanged" if same else "kept"), wanted  # never replace commits someone wrote
    if ref.kind == "commits" or (ref.kind == "pending" and current.kind == "none"):
        return "write", wanted
    if ref.kind == "pending" and current.kind == "pending" and not current.pr and ref.pr:
        return "write", wanted
    return ("unchanged" if ref.kind == current.kind else "kept"), wanted


def build_suggestions(
    git: Git,
    patches: Sequence[Patch],
    current_of: Callable[[str], MapEntry | None],
    upstream: UpstreamLine | None = None,
) -> tuple[tuple[Suggestion, ...], list[MapEntry]]:
    """A suggestion per patch whose header says something, and the map entries to write.

    With ``upstream``, a patch whose header names no upstream commit otherwise, or only
    commits that are not in this repository (a stable repository's pick of a main-line
    commit it does not hold), is offered the commit its ``From <sha>`` line names, when
    that is upstream's (:func:`from_line_refs`).
    """
    refs = patch_refs(patches)
    for patch in patches:  # a statement in the first of several mails is that mail's only
        ref = refs.get(patch.name)
        mail = patch.parsed.header.style == "mbox"
        if ref is not None and ref.commits and mail and len(patch.mails()) > 1:
            del refs[patch.name]
    resolved = resolve_refs(git, refs)
    if upstream is not None:
        silent = [
            p
            for p in patches
            if p.name not in refs or not refs[p.name].commits or not resolved[p.name][1]
        ]
        found = from_line_refs(git, silent, upstream)
        refs.update(found)
        resolved.update(resolve_refs(git, found))
    suggestions: list[Suggestion] = []
    entries: list[MapEntry] = []
    for patch in patches:
        if patch.name not in resolved:
            continue
        ref, present, dropped = resolved[patch.name]
        current = current_of(patch.name)
        action, entry = _decide(ref, current)
        suggestions.append(
            Suggestion(
                patch.name,
                ref.kind,
                ref.commits,
                ref.pr,
                ref.source,
                present,
                dropped,
                entry_value(current) if current is not None else None,
                entry,
                action,
            )
        )
        if action == "write":
            note = entry.partition(" ")[2]
            kind: RefKind = "commits" if ref.commits else ref.kind
            entries.append(MapEntry(patch.name, ref.commits, note, 0, kind))
    return tuple(suggestions), entries


def suggest(fork: Fork, git: Git, *, write: bool = False) -> SuggestResult:
    """Suggestions for every patch of the series; with ``write``, fill the map (all or nothing)."""
    config = fork.config
    branch = branch_ref(config)
    upstream = UpstreamLine(branch if git.find_commit(branch) else None, config.release_tags)
    suggestions, entries = build_suggestions(git, fork.patches, fork.upstream_map.get, upstream)
    written = apply_map_changes(fork.config, entries) if write and entries else ()
    return SuggestResult(suggestions, written, write, fork.config.upstream_map)
