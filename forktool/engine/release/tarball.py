"""The tarball-import pin: upstream's release tarball as a commit on the release tag.

A distribution patches the release tarball, not the tag: the tarball carries files git
never had (``configure``, ``ltmain.sh``, generated docs) and a patch may touch them.
git-buildpackage's answer (``upstream-vcs-tag``) is an import commit: the tarball's tree
as a commit whose parent is the tag. :func:`import_tarballs` makes that commit
reproducibly (same tarballs and tag -> same commit id): fixed identity, the tag
commit's date as the date, the tarballs' names and sha256 in the message, modes
normalised to 100644/100755/120000, the single top-level directory stripped. Debian's
component tarballs (``pkg_1.2.orig-COMP.tar.xz``) go into the subdirectory ``COMP``
(replacing whatever the main tarball has there, as dpkg-source does).

The import commit is recorded as ``pin.import_commit``; ancestry and retirement stay on
the tag (``pin.commit``), while apply, verify and the round trip run on the tarball's
tree (:func:`forktool.engine.release.pin_state.require_tree`).
"""

from __future__ import annotations

import hashlib
import lzma
import re
import tarfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from forktool.config import Config, parse_config
from forktool.errors import FatalError
from forktool.fsutil import write_files
from forktool.git import Git
from forktool.model.paths import check_relative_path
from forktool.model.revision import Revision

IMPORT_REF_PREFIX = "refs/forktool/imports/"
IDENTITY = "forktool import-tarball <import-tarball@forktool.invalid>"
_COMPONENT = re.compile(r"\.orig-(?P<component>[A-Za-z0-9][A-Za-z0-9-]*)\.tar(?:\.[A-Za-z0-9]+)?$")
MAX_TARBALL_BYTES = 4 << 30  # uncompressed; a bigger "tarball" is not a source release


@dataclass(frozen=True)
class Entry:
    path: str
    mode: str  # 100644, 100755 or 120000
    data: bytes


@dataclass(frozen=True)
class TarballImport:
    tag: str
    tag_commit: str
    commit: str  # the import commit (parent: tag_commit)
    ref: str
    tarballs: tuple[str, ...]  # file names, main first
    files: int
    recorded: bool  # pin.import_commit written to forktool.yaml
    previous: str | None  # the import commit recorded before, if any
    skipped: tuple[str, ...] = ()  # members that are not files (devices, fifos)

    def to_json(self) -> dict[str, object]:
        return {
            "tag": self.tag,
            "tag_commit": self.tag_commit,
            "commit": self.commit,
            "ref": self.ref,
            "tarballs": list(self.tarballs),
            "files": self.files,
            "recorded": self.recorded,
            "previous": self.previous,
            "skipped": list(self.skipped),
        }


def component_of(name: str) -> str | None:
    """The component a Debian orig tarball name carries (``orig-docs`` -> ``docs``)."""
    match = _COMPONENT.search(name)
    return match["component"] if match else None


def read_tarball(path: Path) -> tuple[list[Entry], list[str]]:
    """The files of one tarball (single top-level directory stripped), and the members
    skipped because they are neither files nor symlinks."""
    try:
        return _read_tarball(path)
    except (OSError, EOFError, tarfile.TarError, lzma.LZMAError, zlib.error) as exc:
        raise FatalError(
            f"{path}: not a tarball forktool can read ({exc})",
            "give the release tarball (.tar, .tar.gz, .tar.xz, .tar.bz2)",
        ) from exc


def _read_tarball(path: Path) -> tuple[list[Entry], list[str]]:
    archive = tarfile.open(path, "r:*")
    members: list[tuple[list[str], tarfile.TarInfo]] = []
    skipped: list[str] = []
    total = 0
    with archive:
        for member in archive.getmembers():
            problem = check_relative_path(member.name.rstrip("/") or ".")
            if problem is not None:  # before stripping: '../x' must not pass as 'x'
                raise FatalError(
                    f"{path}: {problem}", "forktool imports only paths inside the tree"
                )
            parts = [p for p in member.name.split("/") if p not in ("", ".")]
            if not parts:
                continue
            members.append((parts, member))
        tops = {parts[0] for parts, _ in members}
        strip = len(tops) == 1 and any(len(parts) > 1 or m.isdir() for parts, m in members)
        entries: dict[str, Entry] = {}
        for parts, member in members:
            rel_parts = parts[1:] if strip else parts
            if not rel_parts or member.isdir():
                continue
            rel = "/".join(rel_parts)
            problem = check_relative_path(rel)
            if problem is not None:
                raise FatalError(
                    f"{path}: {problem}", "forktool imports only paths inside the tree"
                )
            if member.issym():
                entries[rel] = Entry(
                    rel, "120000", member.linkname.encode("utf-8", "surrogateescape")
                )
                continue
            if not (member.isfile() or member.islnk()):
                skipped.append(rel)
                continue
            handle = archive.extractfile(member)
            if handle is None:
                skipped.append(rel)
                continue
            data = handle.read()
            total += len(data)
            if total > MAX_TARBALL_BYTES:
                raise FatalError(f"{path}: more than {MAX_TARBALL_BYTES >> 30} GiB of files")
            mode = "100755" if member.mode & 0o111 else "100644"
            entries[rel] = Entry(rel, mode, data)
    return list(entries.values()), skipped


def tarball_tree(paths: Sequence[Path]) -> tuple[list[Entry], list[str], tuple[Path, ...]]:
    """Every file of the main tarball and its components (each under its component
    directory), sorted by path; the skipped members; the tarballs, main first."""
    mains = [p for p in paths if component_of(p.name) is None]
    if len(mains) != 1:
        named = ", ".join(p.name for p in mains) or "none"
        raise FatalError(
            f"give exactly one main tarball and any component tarballs (main: {named})",
            "component tarballs are named like pkg_1.2.orig-COMPONENT.tar.xz",
        )
    components = sorted((p for p in paths if p not in mains), key=lambda p: p.name)
    seen = [component_of(p.name) for p in components]
    if len(set(seen)) != len(seen):
        raise FatalError("two component tarballs name the same component")
    tree, skipped = read_tarball(mains[0])
    for path in components:
        component = component_of(path.name)
        assert component is not None
        tree = [e for e in tree if not (e.path == component or e.path.startswith(component + "/"))]
        files, missed = read_tarball(path)
        tree += [Entry(f"{component}/{e.path}", e.mode, e.data) for e in files]
        skipped += [f"{component}/{name}" for name in missed]
    _refuse_file_directory_clash(tree)
    return sorted(tree, key=lambda e: e.path), skipped, (mains[0], *components)


def _refuse_file_directory_clash(tree: Sequence[Entry]) -> None:
    files = {e.path for e in tree}
    for entry in tree:
        parts = entry.path.split("/")
        for depth in range(1, len(parts)):
            if "/".join(parts[:depth]) in files:
                raise FatalError(
                    f"the tarballs have both a file '{'/'.join(parts[:depth])}' and "
                    f"'{entry.path}' below it",
                    "a tree cannot hold both; check the tarballs",
                )


def import_message(tag: str, tarballs: Sequence[Path]) -> bytes:
    lines = [f"Import the release tarball of {tag}", ""]
    lines.append("The upstream tarball's tree on the tag it was made from")
    lines.append("(forktool pin import-tarball).")
    lines.append("")
    for path in tarballs:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        lines.append(f"Tarball: {path.name} sha256:{digest}")
    return ("\n".join(lines) + "\n").encode("utf-8")


def _quote(path: str) -> bytes:
    """A path as git fast-import reads it quoted (C-style)."""
    out = bytearray(b'"')
    for byte in path.encode("utf-8", "surrogateescape"):
        if byte in (0x22, 0x5C):
            out += b"\\" + bytes([byte])
        elif byte < 0x20 or byte == 0x7F:
            out += f"\\{byte:03o}".encode()
        else:
            out.append(byte)
    return bytes(out + b'"')


def fast_import_stream(
    ref: str, parent: str, date: str, message: bytes, tree: Sequence[Entry]
) -> bytes:
    """One commit of exactly ``tree`` on ``parent`` for ``git fast-import``."""
    head = [
        f"commit {ref}".encode(),
        f"author {IDENTITY} {date}".encode(),
        f"committer {IDENTITY} {date}".encode(),
        f"data {len(message)}".encode(),
    ]
    chunks = [b"\n".join(head) + b"\n", message, f"from {parent}\ndeleteall\n".encode()]
    for entry in tree:
        chunks.append(b"M " + entry.mode.encode() + b" inline " + _quote(entry.path) + b"\n")
        chunks.append(f"data {len(entry.data)}\n".encode() + entry.data + b"\n")
    chunks.append(b"done\n")
    return b"".join(chunks)


def import_tarballs(
    config: Config, git: Git, paths: Sequence[Path], revision: Revision, *, record: bool = True
) -> TarballImport:
    """Import ``paths`` on the tag ``revision`` as one commit, and (with ``record``)
    record it as ``pin.import_commit`` when it is the pinned tag."""
    tag, tag_commit = revision.name, revision.commit
    if tag == config.pin_tag and tag_commit != config.pin_commit:
        raise FatalError(
            f"pinned tag '{tag}' now peels to {tag_commit}, not the recorded {config.pin_commit}",
            "a moved or re-created upstream tag is a supply-chain risk: find out why first",
        )
    for path in paths:
        if not path.is_file():
            raise FatalError(f"{path}: no such file", "give the release tarball's path")
    tree, skipped, ordered = tarball_tree(paths)
    if not tree:
        raise FatalError(f"{ordered[0]}: the tarball holds no files")
    ref = IMPORT_REF_PREFIX + tag
    stream = fast_import_stream(
        ref, tag_commit, git.commit_date_raw(tag_commit), import_message(tag, ordered), tree
    )
    commit = git.import_commit(stream, ref)
    recorded = False
    previous = config.pin_import
    if record and tag == config.pin_tag and previous != commit:
        record_import(config, commit)
        recorded = True
    return TarballImport(
        tag,
        tag_commit,
        commit,
        ref,
        tuple(p.name for p in ordered),
        len(tree),
        recorded,
        previous,
        tuple(skipped),
    )


def record_import(config: Config, commit: str) -> None:
    """Write ``pin.import_commit: COMMIT`` into forktool.yaml, every other byte kept."""
    text = config.path.read_text(encoding="utf-8")
    new = with_import_commit(text, commit)
    if parse_config(new, config.path).pin_import != commit:
        raise FatalError(
            f"{config.rel(config.path)}: could not write pin.import_commit in place",
            "add 'import_commit: <commit>' under pin: by hand",
        )
    write_files({config.path: new.encode("utf-8")})


def with_import_commit(text: str, commit: str | None) -> str:
    """``text`` with the pin mapping's ``import_commit`` set to ``commit`` (or removed
    when None); only that line changes."""
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    assert isinstance(root, yaml.MappingNode)
    pin = next(v for k, v in root.value if k.value == "pin")
    assert isinstance(pin, yaml.MappingNode)
    keys = {k.value: (k, v) for k, v in pin.value}
    lines = text.splitlines(keepends=True)
    if "import_commit" in keys:
        key, value = keys["import_commit"]
        line = key.start_mark.line
        if commit is None:
            del lines[line]
            return "".join(lines)
        start, end = value.start_mark.index, value.end_mark.index
        return text[:start] + commit + text[end:]
    if commit is None:
        return text
    key, value = keys["commit"]
    indent = " " * key.start_mark.column
    line = value.end_mark.line
    if value.end_mark.column == 0:  # a block scalar ends at the next line's start
        line -= 1
    newline = "\n" if lines[line].endswith("\n") else ""
    if not newline:
        lines[line] += "\n"
    lines.insert(line + 1, f"{indent}import_commit: {commit}\n")
    return "".join(lines)


def carried_files(config: Config, git: Git, target_commit: str) -> tuple[tuple[str, str, str], ...]:
    """``(mode, blob, path)`` of every file the pinned release tarball adds to the pinned
    tag that ``target_commit`` lacks (none without a tarball-import pin): what a newer
    tag's tarball will add too, so a patch to ``ltmain.sh`` can be judged on a tag."""
    if config.pin_import is None:
        return ()
    from forktool.engine.release.pin_state import require_tree

    imported = require_tree(config, git)[1]
    tagged = {path for _, _, path in git.ls_tree(config.pin_commit)}
    present = {path for _, _, path in git.ls_tree(target_commit)}
    return tuple(e for e in git.ls_tree(imported) if e[2] not in tagged and e[2] not in present)
