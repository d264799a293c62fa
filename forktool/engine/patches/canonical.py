"""The canonical form of a patch file: the one definition fmt, export, import and refresh share.

A canonical patch is what ``git format-patch`` writes with :data:`FORMAT_PATCH_ARGS` for
a commit made on the pinned tree, whose author, author date and message are the
patch's own. Regenerating one therefore needs no worktree:

1. read the base tree into a temporary index (a private object directory, so nothing
   persists in the repository unless the caller keeps the objects);
2. per patch, in series order: ``git apply --cached`` it, ``git write-tree``, and
   ``git commit-tree`` with the metadata parsed from its header (committer = author,
   so the commit ids are reproducible);
3. ``git format-patch`` the range.

A plain-diff patch (``#`` header lines, no mail header) keeps its header verbatim; only
its diff part is regenerated. Every option that the user's or the repository's git
config could change is pinned, on the command line here and by the config overrides
every git run gets (:mod:`forktool.git`), and ``--no-signature`` drops the git
version, so the bytes depend on the patch and the tree alone.
"""

from __future__ import annotations

import difflib
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from forktool.config import ApplyRule, PatchForm
from forktool.engine.apply.anchors import short_of_its_end
from forktool.engine.apply.attempt import classify, placed_without_anchors, reverse_state, try_patch
from forktool.engine.apply.precheck import precheck
from forktool.engine.apply.verdict import PatchVerdict, acceptable, allows_offset
from forktool.engine.patches.commit_meta import CommitMeta, commit_meta
from forktool.errors import FatalError
from forktool.fork import Patch
from forktool.git import Git, TempIndex
from forktool.git.objects import Objects
from forktool.model.patch_parser import parse_patch
from forktool.model.patchfile import ENCODING, ERRORS, PatchFile
from forktool.model.series import SeriesEntry

# format-patch options that make a patch file canonical. The first line is the
# definition; the rest pin down what repository-local config could otherwise change.
FORMAT_PATCH_ARGS = (
    "format-patch",
    "-k",
    "--full-index",
    "--no-renames",
    "--zero-commit",
    "--no-signature",
    "--no-stat",
    "--no-numbered",
    "--encoding=UTF-8",
    "-U3",
    "--inter-hunk-context=0",
    "--diff-algorithm=myers",
    "--indent-heuristic",
    "--src-prefix=a/",
    "--dst-prefix=b/",
    "--no-relative",
    "--binary",
    "--submodule=short",
    "-O/dev/null",
    "--no-to",
    "--no-cc",
    "--no-add-header",
    "--no-from",
    "--no-thread",
    "--no-cover-letter",
    "--no-signoff",
    "--no-attach",
    "--no-notes",
    "--no-base",
    "--encode-email-headers",
    "--suffix=.patch",
    "--filename-max-length=64",
)


# A plain-diff patch has no author or date; its commit gets these (they never reach its file).
def loose_patch(name: str, path: Path, data: bytes | None = None) -> Patch:
    """A patch read from ``path`` that is not (yet) part of the fork's series."""
    raw = path.read_bytes() if data is None else data
    return Patch(SeriesEntry(name, 0), path, raw, parse_patch(raw), None, name)


# -- the chain: one commit per patch on a base, in a temporary index -------------------


@dataclass(frozen=True)
class Link:
    patch: Patch
    verdict: PatchVerdict  # how it applied: exact, offset, or why not
    commit: str | None  # None when it did not apply
    merged: bool = False  # moved by a 3-way merge (refresh), not by an apply


@dataclass(frozen=True)
class Chain:
    base: str
    links: tuple[Link, ...]

    @property
    def complete(self) -> bool:
        return all(link.commit is not None for link in self.links)

    @property
    def tip(self) -> str:
        commits = [link.commit for link in self.links if link.commit is not None]
        return commits[-1] if commits else self.base

    @property
    def failed(self) -> Link | None:
        return next((link for link in self.links if link.commit is None), None)


def commit_tree(
    git: Objects, tree: str, parent: str, meta: CommitMeta, env: dict[str, str] | None = None
) -> str:
    """A commit of ``tree`` on ``parent`` carrying ``meta`` (``env``: e.g. a temporary index's)."""
    return git.commit_tree(
        tree,
        [parent],
        meta.message.encode(ENCODING, ERRORS),
        purpose="record a patch as a commit",
        env={**(env or {}), **meta.env()},
    )


MetaFn = Callable[[Patch], CommitMeta | str]


def apply_and_commit(
    index: TempIndex,
    parent: str,
    patch: Patch,
    *,
    base_name: str,
    allow_offset: bool,
    meta_for: MetaFn = commit_meta,
    rule: ApplyRule = "exact",
) -> Link:
    """Apply one patch on ``index`` (which holds ``parent``'s tree) and commit it.

    ``meta_for`` gives the commit's author, date and message (default: the patch's own).
    """
    meta = meta_for(patch)
    if isinstance(meta, str):
        return Link(patch, PatchVerdict(patch.name, "malformed", meta), None)
    early = precheck(patch, "git", rule=rule)
    if early is not None:
        return Link(patch, early, None)
    attempt = try_patch(index, patch)
    placed = None
    if not attempt.ok:
        reverse_ok, _ = reverse_state(index, patch)
        placed = None if reverse_ok else placed_without_anchors(index, patch)
        if placed is None:
            return Link(patch, classify(patch, attempt, None, reverse_ok, base_name, rule), None)
        attempt = placed  # where GNU patch places it, git's anchors aside: applied there
    verdict = classify(patch, attempt, None, False, base_name, rule)
    if verdict.status != "exact" and not allow_offset:
        return Link(patch, verdict, None)
    if rule == "dpkg" and attempt is not placed:
        # git placed it at its own lines, where GNU patch may hold a hunk to its file's
        # end: then its change is committed as git made it, to be regenerated (refresh,
        # fmt), and its verdict says dpkg-source refuses it (import refuses it too).
        counts = partial(index.line_counts, parent)
        verdict = short_of_its_end(patch, attempt, counts) or verdict
    commit = commit_tree(index.git, index.write_tree(), parent, meta, index.env)
    return Link(patch, verdict, commit)


def build_chain(
    index: TempIndex,
    base_commit: str,
    patches: Sequence[Patch],
    *,
    base_name: str,
    allow_offset: bool = True,
    meta_for: MetaFn = commit_meta,
    rule: ApplyRule = "exact",
) -> Chain:
    """Commit ``patches`` one by one on ``base_commit``; stops at the first that fails."""
    index.read_tree(base_commit, cache=True)
    links: list[Link] = []
    parent = base_commit
    for patch in patches:
        link = apply_and_commit(
            index,
            parent,
            patch,
            base_name=base_name,
            allow_offset=allow_offset,
            meta_for=meta_for,
            rule=rule,
        )
        links.append(link)
        if link.commit is None:
            break
        parent = link.commit
    return Chain(base_commit, tuple(links))


def format_range(index: TempIndex, base: str, tip: str) -> list[tuple[str, bytes]]:
    """``git format-patch`` of ``base..tip`` in canonical form: (file name, bytes) per commit.

    The names are format-patch's own (``0001-subject.patch``).
    """
    if base == tip:
        return []
    out_dir = Path(tempfile.mkdtemp(prefix="forktool-format-"))
    try:
        res = index.format_patches(FORMAT_PATCH_ARGS[1:], out_dir, f"{base}..{tip}")
        written = [Path(line) for line in res.out.splitlines() if line]
        return [(path.name, path.read_bytes()) for path in written]
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


_ZERO_FROM = b"From " + b"0" * 40 + b" "


def with_from_sha(sha: str | None, generated: bytes) -> bytes:
    """``generated`` (format-patch's ``From 000...`` line) naming the commit ``sha``
    instead, when ``sha`` is one: an upstream commit id a patch carries is kept."""
    if sha and sha.strip("0") and generated.startswith(_ZERO_FROM):
        return b"From " + sha.encode() + generated[len(_ZERO_FROM) - 1 :]
    return generated


def with_source_header(source: PatchFile, generated: bytes) -> bytes:
    """A plain-diff patch keeps its own header lines; only the diff part is generated.

    A mail header keeps the upstream commit id its ``From <sha>`` line carries (format-patch
    writes zeros there: the fork's commit id means nothing, upstream's is a fact). An
    empty patch (0 bytes: a no-op for quilt and dpkg-source) stays empty."""
    if source.empty:
        return b""
    if source.header.style != "plain":
        return with_from_sha(source.header.from_sha, generated)
    at = generated.find(b"\ndiff --git ")
    if at == -1:
        raise FatalError("git format-patch wrote a patch without a diff")
    header = "".join(line + "\n" for line in source.header.lines)
    return header.encode(ENCODING, ERRORS) + generated[at + 1 :]


def in_maintainers_form(patch: Patch, generated: bytes) -> bytes:
    """``patch`` with its diff part replaced by the one in ``generated``: every byte before
    its first file diff (the header, a diffstat) and after its last hunk (a signature)
    kept as written."""
    parsed = patch.parsed
    if parsed.empty or not parsed.files:
        return patch.data
    at = generated.find(b"\ndiff --git ")
    if at == -1:
        raise FatalError("git format-patch wrote a patch without a diff")
    lines = patch.data.split(b"\n")
    head = b"".join(line + b"\n" for line in lines[: parsed.files[0].line - 1])
    tail_count = len(parsed.trailer_lines)
    tail = b"\n".join(lines[len(lines) - tail_count - (1 if parsed.newline_at_eof else 0) :])
    return head + generated[at + 1 :] + (tail if tail_count else b"")


def chain_bytes(
    index: TempIndex,
    chain: Chain,
    form: PatchForm = "canonical",
    rule: ApplyRule = "exact",
) -> list[bytes]:
    """The bytes of every patch of a complete chain, in order, in the fork's ``form``:
    canonical, or the maintainers' own (a patch that applies under ``rule`` is kept
    byte for byte; another, or one a merge moved, keeps its header and gets its diff
    regenerated)."""
    generated = format_range(index, chain.base, chain.tip)
    if len(generated) != len(chain.links):
        raise FatalError(
            f"git format-patch wrote {len(generated)} patches for {len(chain.links)} commits",
            "a patch that changes nothing cannot be exported; remove it from the series",
        )
    if form == "maintainers":
        written = [
            link.patch.data
            if acceptable(link.verdict.status, allows_offset(rule)) and not link.merged
            else in_maintainers_form(link.patch, data)
            for link, (_name, data) in zip(chain.links, generated, strict=True)
        ]
        prove_replay(index, chain, written)
        return written
    written = [
        with_source_header(link.patch.parsed, data)
        for link, (_name, data) in zip(chain.links, generated, strict=True)
    ]
    prove_replay(index, chain, written)
    return written


def prove_replay(index: TempIndex, chain: Chain, generated: Sequence[bytes]) -> None:
    """The files about to be written, applied in order on the chain's base, must give
    exactly the chain's trees: a file that carries more than its commit (a diff in the
    commit message or in a kept header is applied as part of the patch) or less is
    refused, exit 2, naming the patch, before anything is written. One ``git apply``
    of the whole series when it holds (the usual case); patch by patch to name the
    first that does not. Without git's anchors (a kept patch may be one GNU patch
    places where git alone would not, forktool.engine.apply.anchors): the trees are
    compared whole, so no anchor is needed to trust the answer."""
    commits = [link.commit for link in chain.links if link.commit is not None]
    if not commits:
        return
    wanted = index.tree_ids(commits)
    work = Path(tempfile.mkdtemp(prefix="forktool-replay-"))
    try:
        paths: list[str] = []
        for number, data in enumerate(generated):
            file = work / f"{number:04d}.patch"
            file.write_bytes(data)
            paths.append(str(file))
        index.read_tree(chain.base, cache=True)
        whole = index.apply_cached(
            paths, purpose="replay the patches about to be written", unanchored=True
        )
        if whole.ok and index.write_tree() == wanted[-1]:
            return
        index.read_tree(chain.base, cache=True)
        for link, one, tree in zip(chain.links, paths, wanted, strict=False):
            res = index.apply_cached([one], purpose=f"replay {link.patch.name}", unanchored=True)
            if not res.ok or index.write_tree() != tree:
                raise FatalError(
                    f"{link.patch.name}: its canonical form, replayed, does not reproduce "
                    "its change (a diff in a commit message or patch header is applied as "
                    "part of the patch)",
                    "move the diff out of the message (indent it, or drop it); nothing was written",
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)


# -- comparing a file with its canonical form -------------------------------------------


def structure(parsed: PatchFile) -> tuple[object, ...]:
    """What a patch does, apart from cosmetics: files, mode changes and every hunk's
    range. A mode that does not change is not part of it (a plain diff states none;
    a new file without one is created 100644, as git apply does)."""
    return tuple(
        (
            diff.old_path,
            diff.new_path,
            _mode_change(diff.old_mode, diff.new_mode, diff.is_new, diff.is_deleted),
            diff.is_new,
            diff.is_deleted,
            tuple((h.old_start, h.old_count, h.new_start, h.new_count) for h in diff.hunks),
        )
        for diff in parsed.files
    )


def _mode_change(
    old: str | None, new: str | None, is_new: bool, is_deleted: bool
) -> tuple[str | None, str | None]:
    if is_new:
        return (None, new or "100644")
    if is_deleted:
        return (old or "100644", None)
    return (old, new) if old is not None and new is not None and old != new else (None, None)


def cosmetic_only(git: Git, old: bytes, new: bytes) -> bool:
    """True when ``old`` and ``new`` differ only in lines that change nothing applied:
    the same files (after ``-p1``), modes and hunk ranges, and the same changes (the same
    ``git patch-id --stable``, or, where patch-id reads the path prefixes too, e.g. a
    plain diff's ``pkg.orig/`` against ``a/``, the same hunk lines)."""
    old_parsed, new_parsed = parse_patch(old), parse_patch(new)
    if structure(old_parsed) != structure(new_parsed):
        return False
    if _hunk_lines(old_parsed) == _hunk_lines(new_parsed) and not any(
        diff.is_binary for diff in (*old_parsed.files, *new_parsed.files)
    ):
        return True
    old_id = git.patch_id(old)
    return old_id is not None and old_id == git.patch_id(new)


def _hunk_lines(parsed: PatchFile) -> tuple[tuple[str, ...], ...]:
    return tuple(hunk.lines for diff in parsed.files for hunk in diff.hunks)


def rewrite_diff(old: bytes, new: bytes, path: str) -> str:
    """A unified diff from a patch file's current bytes to its canonical rewrite."""
    before = old.decode(ENCODING, ERRORS).splitlines(keepends=True)
    after = new.decode(ENCODING, ERRORS).splitlines(keepends=True)
    lines = difflib.unified_diff(before, after, f"a/{path}", f"b/{path}")
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline\n" for line in lines)


def range_diff(index: TempIndex, old: tuple[str, str], new: tuple[str, str]) -> str:
    """``git range-diff`` of two commit ranges (base, tip), for a reviewer."""
    if old[0] == old[1] and new[0] == new[1]:
        return ""
    return index.range_diff(old, new)
