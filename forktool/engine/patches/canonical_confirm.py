"""A fast way to confirm that a series is already canonical, in a handful of git processes.

The canonical form (:mod:`forktool.engine.patches.canonical`) is defined by a chain of one
commit per patch on the pin, made with ``git apply --cached``, ``write-tree`` and
``commit-tree``: three processes a patch, most of ``check``'s and ``fmt --check``'s
time on a long series. A patch file in canonical form already names, on its
``index <old>..<new> <mode>`` lines, every blob its commit holds. So:

1. apply the series in as few ``git apply --cached`` calls as possible (one per run
   of patches that touch disjoint files: git keeps only a file's final state when
   one call applies two patches to it), which writes every post-image blob into a
   private object directory;
2. build the whole chain with ONE ``git fast-import`` (each commit: the blobs the
   patch names, its author, date and message) in a throwaway git directory;
3. ONE ``git format-patch`` of the chain, in canonical form.

Nothing here is trusted: when the bytes format-patch writes equal every patch file,
each patch is exactly the diff between two consecutive trees of the chain, so
applying it to the first gives the second, and the chain is the one the definition
builds: the series is canonical. Anything else (a byte that differs, a patch
without full blob ids, a blob git did not write, an unusual header) returns None
and the caller falls back to the definition itself, which also says *what* differs.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Sequence
from email.utils import mktime_tz, parsedate_tz
from pathlib import Path

from forktool.engine.apply.precheck import precheck
from forktool.engine.patches.canonical import FORMAT_PATCH_ARGS, with_source_header
from forktool.engine.patches.commit_meta import PLACEHOLDER_DATE, CommitMeta, commit_meta
from forktool.errors import FatalError
from forktool.fork import Patch
from forktool.git import Git, TempIndex
from forktool.model.patchfile import ENCODING, ERRORS, FileDiff

_INDEX_LINE = re.compile(r"^index ([0-9a-f]{40})\.\.([0-9a-f]{40})(?: ([0-7]{6}))?$")
_NULL = "0" * 40
_UNSAFE_PATH = re.compile(r'[\x00-\x1f"\\]')
_UNSAFE_IDENT = re.compile(r"[<>\x00-\x1f]")


def _raw_date(meta: CommitMeta) -> str | None:
    """``<epoch> <+hhmm>`` for fast-import, None when the date is not plain RFC 2822."""
    if meta.date == PLACEHOLDER_DATE:
        return "0 +0000"
    parsed = parsedate_tz(meta.date)
    if parsed is None or parsed[9] is None:
        return None
    offset = parsed[9]
    sign = "-" if offset < 0 else "+"
    hours, minutes = divmod(abs(offset) // 60, 60)
    return f"{mktime_tz(parsed)} {sign}{hours:02d}{minutes:02d}"


def _file_changes(diff: FileDiff) -> list[str] | None:
    """fast-import ``M``/``D`` lines for one file of a patch, None if it cannot say."""
    index = next((m for line in diff.header_lines if (m := _INDEX_LINE.match(line))), None)
    if index is None or diff.is_rename or diff.is_copy:
        return None
    paths = [p for p in (diff.old_path, diff.new_path) if p is not None]
    if not paths or any(_UNSAFE_PATH.search(p) or p.startswith(" ") for p in paths):
        return None
    if diff.is_deleted:
        return None if diff.old_path is None else [f"D {diff.old_path}"]
    new_blob, mode = index.group(2), diff.new_mode or index.group(3)
    if diff.new_path is None or new_blob == _NULL or mode is None:
        return None
    return [f"M {mode} {new_blob} {diff.new_path}"]


def _commit(mark: int, patch: Patch, parent: str | None) -> bytes | None:
    meta = commit_meta(patch)
    if isinstance(meta, str) or _UNSAFE_IDENT.search(meta.name + meta.email):
        return None
    when = _raw_date(meta)
    changes: list[str] = []
    for diff in patch.parsed.files:
        lines = _file_changes(diff)
        if lines is None:
            return None
        changes += lines
    if when is None or not changes:
        return None
    who = f"{meta.name} <{meta.email}> {when}"
    message = meta.message.encode(ENCODING, ERRORS)
    head = f"commit refs/heads/chain\nmark :{mark}\nauthor {who}\ncommitter {who}\n"
    out = head.encode(ENCODING, ERRORS) + b"data %d\n" % len(message) + message + b"\n"
    if parent is not None:
        out += f"from {parent}\n".encode()
    out += "".join(line + "\n" for line in changes).encode(ENCODING, ERRORS)
    return out + b"\n"


def _layers(patches: Sequence[Patch]) -> list[list[Patch]]:
    """Runs of consecutive patches that touch disjoint files, in series order."""
    layers: list[list[Patch]] = []
    touched: set[str] = set()
    for patch in patches:
        paths = {p for d in patch.parsed.files for p in (d.old_path, d.new_path) if p}
        if not layers or paths & touched:
            layers.append([])
            touched = set()
        layers[-1].append(patch)
        touched |= paths
    return layers


def _write_blobs(index: TempIndex, patches: Sequence[Patch]) -> bool:
    """Apply the series on the index, writing every post-image blob; False on failure."""
    for layer in _layers(patches):
        args = ["apply", "--cached", "--whitespace=nowarn", "-p1", *(str(p.path) for p in layer)]
        if not index.run(args, purpose="apply the series", check=False).ok:
            return False
    return True


def regenerate_if_canonical(
    git: Git, base_commit: str, patches: Sequence[Patch]
) -> list[bytes] | None:
    """Every patch's canonical bytes when the series is canonical on ``base_commit``
    (each equals its file), None when that is not shown this way (fall back)."""
    if not patches or any(p.entry.strip != 1 or precheck(p, "git") for p in patches):
        return None
    stream = bytearray()
    for mark, patch in enumerate(patches, start=1):
        commit = _commit(mark, patch, base_commit if mark == 1 else None)
        if commit is None:
            return None
        stream += commit
    stream += b"done\n"
    with git.temp_index(f"{base_commit}^{{tree}}") as index:
        if not _write_blobs(index, patches):
            return None
        return _import_and_format(index, base_commit, bytes(stream), patches)


def _import_and_format(
    index: TempIndex, base_commit: str, stream: bytes, patches: Sequence[Patch]
) -> list[bytes] | None:
    # A throwaway git directory: fast-import must write a ref, and the fork's refs
    # stay untouched. Objects go to the temporary index's private object directory.
    scratch = Path(tempfile.mkdtemp(prefix="forktool-chain-"))
    try:
        git_dir = scratch / "chain.git"
        for sub in ("objects", "refs/heads", "refs/tags"):
            (git_dir / sub).mkdir(parents=True)
        (git_dir / "HEAD").write_text("ref: refs/heads/chain\n")
        if not index.fast_import(stream, git_dir).ok:
            return None
        out_dir = scratch / "out"
        formatted = index.format_patches(
            FORMAT_PATCH_ARGS[1:],
            out_dir,
            f"{base_commit}..chain",
            env={"GIT_DIR": str(git_dir)},
            check=False,
        )
        if not formatted.ok:
            return None
        written = [Path(line) for line in formatted.out.splitlines() if line]
        if len(written) != len(patches):
            return None
        try:
            generated = [
                with_source_header(patch.parsed, path.read_bytes())
                for patch, path in zip(patches, written, strict=True)
            ]
        except FatalError:
            return None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if any(data != patch.data for data, patch in zip(generated, patches, strict=True)):
        return None
    return generated
