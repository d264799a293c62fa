"""Was a mapped commit reverted before the tag? Every witness a real project leaves.

Ancestry says a fix is in a release when its commit is an ancestor of the tag; a
later revert takes it out again, and ancestry cannot see that. This module finds,
in bulk, the commits between the pin and the tag that revert a mapped commit:

* **revert line**: git's ``This reverts commit <sha>.`` (full, or abbreviated to 7+
  hex digits) in the message;
* **revert words**: other projects' ``Revert commit <sha> (...)`` (CMake), ``reverts
  <sha>``, ``Reverted commit <sha>``: a revert verb, then the commit;
* **title**: ``Revert "<original subject>"`` anywhere in the subject, so prefixes
  such as ``[BugFix] Revert "..."`` count, and a GitHub ``(#123)`` suffix on either
  title is ignored (a squash-merged revert carries the title and no sha);
* **label**: a project that names each commit by a numbered label before its subject's
  colon (vim's ``patch 9.2.0590: ...``) reverts by that label: a message that mentions
  a revert and names the label (``patch 9.2.0667: patch 9.2.0590 was wrong`` /
  ``Solution: Revert it``);
* **inverse patch-id**: a commit whose change is the exact inverse of the mapped
  commit's (``git patch-id --stable`` of ``git log -p -R`` of the mapped commit).

A revert of a revert (a re-land) cancels it, by the same witnesses: a commit that
reverts R, or, by content, re-applies the mapped change after R, makes R no longer
count. Every claimed revert must descend from what it reverts.

Cost: one ``git log`` of the messages (no diffs) between the pin and the tag,
filtered by git to those mentioning "revert"; the content witness reads diffs only
for the commits the caller names (patches whose change the tag does not visibly
carry), limited to the directories they touch.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from forktool.git import Git
from forktool.model.patch_text import diff_git_lines, split_git_names
from forktool.model.paths import strip_components

REVERT_GREP = "revert"
MAX_PATHSPECS = 64
_REVERT_LINE = re.compile(r"This reverts commit ([0-9a-f]{7,40})")
# Other projects' words for it: CMake's "Revert commit 872daff159 (subject, date)",
# "reverts abc1234", "Reverted commit ...": a revert verb, then the commit (a sha that
# names one commit the search knows, as for the line).
# A revert verb, then the commit: "Revert commit <sha>" (CMake), "reverts <sha>", and a
# partial one, "Revert part of <sha>" (less), "reverts parts of commit <sha>", or a few
# words of one sentence before "commit <sha>": CMake's "Revert implementation changes
# merged by commit <sha>".
_REVERT_WORDS = re.compile(
    r"\b[Rr]evert(?:s|ed|ing)?\s+(?:(?:parts?\s+of\s+)?(?:commit\s+)?"
    r"|(?:[^\s.;:!?]+\s+){1,6}?commit\s+)([0-9a-f]{7,40})\b"
)
_REVERT_TITLE = re.compile(r'Revert "(.*)"')
_PR_SUFFIX = re.compile(r"\s*\(#[0-9]+\)\s*$")

# Names of the witnesses, as they appear in the evidence's detail.
BY_LINE = "'This reverts commit' line"
BY_WORDS = "'Revert commit <sha>' words"
BY_TITLE = "'Revert \"...\"' title"
BY_CONTENT = "inverse patch-id"
BY_LABEL = "names its label and a revert"
# A label: what a subject says before its first colon, when it is short and holds a
# number of four digits or more, as vim's "patch 9.2.0590", "CVE-2023-1234" or "Bug
# 12345" ("http2", "x86" or "docs" name a topic many commits share, not one commit).
_LABEL = re.compile(r"([^:\n]{0,40}?[0-9]{4}[^:\n]{0,40}):\s")


@dataclass(frozen=True)
class Revert:
    """A commit in the tag that reverts a mapped commit, and nothing re-landed it."""

    commit: str
    subject: str
    target: str
    witnesses: tuple[str, ...]


def pathspec_dirs(paths: Iterable[str]) -> list[str] | None:
    """The directories holding ``paths`` (a top-level file stands for itself), or None
    (no limit) when there are too many: git matches every pathspec against every
    changed entry, so hundreds of pathspecs cost more than reading the whole range."""
    dirs = sorted({str(PurePosixPath(p).parent) if "/" in p else p for p in paths})
    return dirs if len(dirs) <= MAX_PATHSPECS else None


@dataclass(frozen=True)
class Need:
    """What a commit's diff must name to share a change's stable patch-id: every file
    of ``files`` (those the change has hunks in), and nothing outside ``within`` (every
    file the change's diff names; None: not known, no bound), both within ``dirs``,
    the change's own directories, to which a commit's diff is limited before it is
    compared (None: the whole diff)."""

    files: frozenset[str]
    within: frozenset[str] | None
    dirs: tuple[str, ...] | None = None


def range_patch_ids(
    git: Git, tip: str, exclude: Sequence[str], needs: Iterable[Need]
) -> dict[Need, list[tuple[str, str]]]:
    """Each need -> (stable patch-id, commit) for the non-merge commits of ``tip`` and
    not in ``exclude`` that could share a patch-id with the change it describes, each
    commit's diff limited to that need's own ``dirs`` (as :meth:`Git.log_patches`
    reads it). A change's answer never depends on the others asked with it.

    A stable patch-id hashes every file a diff names (its hunks, a mode change, even
    an added empty file): two diffs share one only if they name the same files. One
    ``--name-only`` pass over the range (tree comparisons, no file read) gives each
    commit's files; only the diffs of commits whose files (within a need's ``dirs``)
    hold every file the need has hunks in, and nothing outside what it names, are read,
    in one ``git log -p`` and one ``git patch-id``, however many needs there are. The
    matches are exactly those a diff of the whole range, limited to each need's
    directories, gives.
    """
    found: dict[Need, list[tuple[str, str]]] = {}
    by_file: dict[str, list[Need]] = {}
    for need in dict.fromkeys(needs):
        if not need.files:  # nothing to require: any commit may match
            dirs = list(need.dirs) if need.dirs is not None else None
            found[need] = git.patch_ids(git.log_patches(tip, exclude, dirs))
        else:
            by_file.setdefault(min(need.files), []).append(need)
    fits = _candidates(git, tip, exclude, by_file) if by_file else {}
    return {**found, **_view_ids(git, fits)} if fits else found


def _candidates(
    git: Git, tip: str, exclude: Sequence[str], by_file: Mapping[str, list[Need]]
) -> dict[Need, dict[str, None]]:
    """Each need -> the range's commits whose files, within the need's directories, are
    all it has hunks in (which lie there) and nothing it does not name. Set arithmetic
    first: a release's commits name dozens of files."""
    fits: dict[Need, dict[str, None]] = {}
    for commit, files in git.log_changes(tip, exclude):
        for need in (n for name in files for n in by_file.get(name, ())):
            if need.files <= files and (
                need.within is None or not any(_inside(f, need.dirs) for f in files - need.within)
            ):
                fits.setdefault(need, {})[commit] = None
    return fits


def _view_ids(
    git: Git, fits: Mapping[Need, Mapping[str, None]]
) -> dict[Need, list[tuple[str, str]]]:
    """(stable patch-id, commit) of each need's candidates, each diff within the need's
    directories. Every candidate's diff is read once, within all the needs'
    directories; each view of it keeps the file diffs within one need's (what a
    ``git log -p`` limited to them shows), shared by needs of the same directories;
    one patch-id run hashes every view."""
    wide = (
        None
        if any(n.dirs is None for n in fits)
        else pathspec_dirs(d for n in fits for d in n.dirs or ())
    )
    scope = wide or []
    git.commit_patches(list(dict.fromkeys(c for cs in fits.values() for c in cs)), paths=scope)
    views: dict[tuple[tuple[str, ...] | None, str], int] = {}  # (dirs, commit) -> its view
    stream: list[bytes] = []
    for need, commits in fits.items():
        for commit in commits:
            if (need.dirs, commit) in views:
                continue
            text = git.commit_patches([commit], paths=scope)  # read above: no git call
            kept = b"".join(
                chunk
                for path, chunk in _file_diffs(text)
                if path is None or _inside(path, need.dirs)
            )
            views[(need.dirs, commit)] = len(stream)
            stream.append(f"commit {len(stream):040x}\n".encode() + kept if kept else b"")
    ids = {int(placeholder, 16): pid for pid, placeholder in git.patch_ids(b"".join(stream))}
    found: dict[Need, list[tuple[str, str]]] = {}
    for need, commits in fits.items():
        hits = [(ids[at], c) for c in commits if (at := views[(need.dirs, c)]) in ids]
        if hits:
            found[need] = hits
    return found


def _file_diffs(text: bytes) -> list[tuple[str | None, bytes]]:
    """Each file diff of one commit's diff: (its path, or None when the ``diff --git``
    line does not read, and its bytes)."""
    starts = [at for _, at in diff_git_lines(text)]
    pieces = []
    for begin, end in zip(starts, [*starts[1:], len(text)], strict=True):
        chunk = text[begin:end]
        header = chunk.split(b"\n", 1)[0].decode("utf-8", "surrogateescape")
        names = split_git_names(header[len("diff --git ") :], 1)
        pieces.append((strip_components(names[1], 1) if names else None, chunk))
    return pieces


def _inside(path: str, dirs: tuple[str, ...] | None) -> bool:
    """``path`` is one of the literal pathspecs ``dirs`` or under one (all for None)."""
    return dirs is None or any(path == d or path.startswith(f"{d}/") for d in dirs)


def title_key(title: str) -> str:
    """A subject as a revert's title quotes it: without a ``(#123)`` PR suffix."""
    return _PR_SUFFIX.sub("", title.strip()).strip()


def reverted_title(subject: str) -> str | None:
    """The title ``subject`` says it reverts (``... Revert "<title>" ...``), or None."""
    match = _REVERT_TITLE.search(subject)
    return title_key(match.group(1)) if match else None


def _subjects(git: Git, commits: Iterable[str]) -> dict[str, str]:
    items = list(dict.fromkeys(commits))
    return {e.commit: e.subject for e in git.log_entries(items)} if items else {}


def revert_messages(git: Git, tip: str, since: str) -> list[tuple[str, str]]:
    """(commit, message) of every commit in ``tip`` since ``since`` that mentions a
    revert (one ``git log``, filtered by git)."""
    return git.log_messages(tip, [since], grep=REVERT_GREP, ignore_case=True)


class _Edges:
    """Who claims to revert whom, and by which witnesses."""

    def __init__(self) -> None:
        self.by_target: dict[str, dict[str, list[str]]] = {}

    def add(self, reverter: str, target: str, witness: str) -> None:
        if reverter == target:
            return
        found = self.by_target.setdefault(target, {}).setdefault(reverter, [])
        if witness not in found:
            found.append(witness)

    def relevant(self, roots: Iterable[str]) -> dict[str, dict[str, list[str]]]:
        """The claims about ``roots``, their reverters, their reverters' reverters..."""
        seen = set(roots)
        todo = list(seen)
        kept: dict[str, dict[str, list[str]]] = {}
        while todo:
            target = todo.pop()
            for reverter, witnesses in self.by_target.get(target, {}).items():
                kept.setdefault(target, {})[reverter] = witnesses
                if reverter not in seen:
                    seen.add(reverter)
                    todo.append(reverter)
        return kept


def _message_claims(
    edges: _Edges, messages: Sequence[tuple[str, str]], subjects: Mapping[str, str]
) -> None:
    known = [*subjects, *(c for c, _ in messages)]
    by_title: dict[str, list[str]] = {}
    for commit, subject in subjects.items():
        by_title.setdefault(title_key(subject), []).append(commit)
    for commit, message in messages:
        by_title.setdefault(title_key(message.split("\n", 1)[0]), []).append(commit)
    for commit, message in messages:
        lines = _REVERT_LINE.findall(message)
        words = [n for n in _REVERT_WORDS.findall(message) if n not in lines]
        for named, witness in [*((n, BY_LINE) for n in lines), *((n, BY_WORDS) for n in words)]:
            targets = [k for k in known if k.startswith(named)]
            if len(named) == 40 or len(set(targets)) == 1:
                edges.add(commit, named if len(named) == 40 else targets[0], witness)
        title = reverted_title(message.split("\n", 1)[0])
        for target in by_title.get(title, []) if title else []:
            edges.add(commit, target, BY_TITLE)
    _label_claims(edges, messages, subjects)


def subject_label(subject: str) -> str | None:
    """The numbered label a subject starts with (``patch 9.2.0590`` of ``patch
    9.2.0590: fix ...``), or None."""
    found = _LABEL.match(subject)
    if found is None:
        return None
    label = found.group(1).strip()
    return label if any(ch.isalpha() for ch in label) else None


def _label_claims(
    edges: _Edges, messages: Sequence[tuple[str, str]], subjects: Mapping[str, str]
) -> None:
    """A message that mentions a revert (all of ``messages`` do) and names a mapped
    commit's label, not as a longer number (``9.2.05901``, ``9.2.0590.1``)."""
    by_label: dict[str, list[str]] = {}
    for commit, subject in subjects.items():
        if (label := subject_label(subject)) is not None:
            by_label.setdefault(label, []).append(commit)
    for label, targets in by_label.items():
        named = re.compile(r"(?<![0-9A-Za-z_.])" + re.escape(label) + r"(?![0-9A-Za-z_]|\.[0-9])")
        for commit, message in messages:
            if named.search(message):
                for target in targets:
                    edges.add(commit, target, BY_LABEL)


def _content_claims(edges: _Edges, git: Git, tip: str, since: str, commits: Sequence[str]) -> None:
    """Inverse patch-ids, each mapped commit's within its own directories. A stable
    patch-id hashes every file a diff names, so a revert (or a re-land) of C names,
    there, exactly the files C names: the range's file names (``--name-only``, no file
    read) pick the candidates (:func:`range_patch_ids`), and only the mapped commits
    that some candidate fits have their diffs read, forward and inverted. Whether C's
    change was reverted never depends on which other commits are mapped."""
    needs = {
        commit: _commit_need(files) for commit, files in git.commit_names(commits).items() if files
    }
    candidates = range_patch_ids(git, tip, [since], needs.values())
    fitted = [commit for commit, need in needs.items() if candidates.get(need)]
    if not fitted:
        return
    inverse = _id_of(git, git.commit_patches(fitted, reverse=True))
    redo = _id_of(git, git.commit_patches(fitted))
    relanded: dict[str, list[str]] = {}
    for target in fitted:
        for patch_id, commit in candidates[needs[target]]:
            if patch_id == inverse.get(target):
                edges.add(commit, target, BY_CONTENT)
            if patch_id == redo.get(target) and commit != target:
                relanded.setdefault(target, []).append(commit)
    # Re-applying the mapped change after a content revert reverts that revert.
    for original, copies in relanded.items():
        for reverter, witnesses in list(edges.by_target.get(original, {}).items()):
            if BY_CONTENT in witnesses:
                for copy in copies:
                    edges.add(copy, reverter, BY_CONTENT)


def _commit_need(files: frozenset[str]) -> Need:
    """What a revert or a re-land of a commit naming ``files`` names within their
    directories: those files, no more and no fewer."""
    dirs = pathspec_dirs(files)
    return Need(files, files, tuple(dirs) if dirs is not None else None)


def _id_of(git: Git, patches: bytes) -> dict[str, str]:
    """Commit -> its stable patch-id."""
    return {commit: patch_id for patch_id, commit in git.patch_ids(patches)}


def _descending(git: Git, claims: Mapping[str, Mapping[str, list[str]]]) -> set[tuple[str, str]]:
    """(reverter, target) claims where the reverter descends from the target (one
    ``rev-list`` per reverter; claims are rare)."""
    targets_of: dict[str, list[str]] = {}
    for target, reverters in claims.items():
        for reverter in reverters:
            targets_of.setdefault(reverter, []).append(target)
    valid = set()
    for reverter, targets in targets_of.items():
        outside = git.not_ancestors(targets, reverter)
        valid |= {(reverter, t) for t in targets if t not in outside}
    return valid


def find_reverts(
    git: Git,
    tip: str,
    since: str,
    commits: Sequence[str],
    *,
    content: Sequence[str] = (),
    messages: Sequence[tuple[str, str]] | None = None,
) -> dict[str, list[Revert]]:
    """Mapped commit -> the standing reverts of it in ``tip`` (none: not in the dict).

    ``commits``: the mapped commits ``tip`` contains; ``content``: those of them
    whose change must also be sought by its inverse diff; ``messages``:
    :func:`revert_messages`, if already read.
    """
    if not commits:
        return {}
    if messages is None:
        messages = revert_messages(git, tip, since)
    edges = _Edges()
    subjects = _subjects(git, commits) if messages else {}
    _message_claims(edges, messages, subjects)
    if content:
        _content_claims(edges, git, tip, since, content)
    claims = edges.relevant(commits)
    if not claims:
        return {}
    valid = _descending(git, claims)
    memo: dict[str, bool] = {}

    def reverted(commit: str) -> bool:
        # Valid claims point from descendants to ancestors: no cycles.
        if commit not in memo:
            memo[commit] = any(
                (reverter, commit) in valid and not reverted(reverter)
                for reverter in claims.get(commit, {})
            )
        return memo[commit]

    standing: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
    for commit in dict.fromkeys(commits):
        for reverter, witnesses in claims.get(commit, {}).items():
            if (reverter, commit) in valid and not reverted(reverter):
                standing.setdefault(commit, []).append((reverter, tuple(witnesses)))
    if not standing:
        return {}
    subject_of = {c: m.split("\n", 1)[0] for c, m in messages}
    unnamed = [r for found in standing.values() for r, _ in found if r not in subject_of]
    subject_of.update(_subjects(git, unnamed))
    return {
        commit: [Revert(r, subject_of.get(r, ""), commit, w) for r, w in found]
        for commit, found in standing.items()
    }
