"""The fork as data: config plus every file it names, parsed and cross-checked.

Pure file reading, no git. Each check appears once, here: series vs the files on
disk (missing, unlisted), series vs ``upstream.map`` (every patch mapped once),
map vs patch trailers (they must agree). Commands that need a sound fork call
:func:`load_fork` (strict, exit 2 on any problem); ``check`` and ``verify`` load
leniently and report what they find.
"""

from __future__ import annotations

import re
from functools import cached_property
from pathlib import Path
from typing import Final, NamedTuple

from forktool.config import Config
from forktool.errors import FatalError, Finding, require_no_errors
from forktool.inputs import UnreadableInput, Ways, read_input
from forktool.model.ledger import Ledger, parse_ledger
from forktool.model.patch_header import mail_count, mails_in
from forktool.model.patch_parser import parse_header, parse_patch
from forktool.model.patchfile import PatchFile, PatchHeader, parse_upstream_merge
from forktool.model.series import Series, SeriesEntry, parse_series
from forktool.model.upstream_map import MapEntry, UpstreamMap, parse_map

PATCH_SUFFIXES = (".patch", ".diff")
NOTES_DIR = "notes"
NOTES_README = "README.md"  # what init writes into notes/: the directory's guide, nobody's note
MAX_PATCH_BYTES = 64 << 20


class Patch:
    """One series entry with its file, its map entry, and its parse.

    The file's bytes and its parse are made when first asked for and then kept;
    ``parse()`` and ``header`` give them without keeping anything, so a pass over a
    long series (``verify``) holds one patch at a time. The fork checks at load
    time that every file is readable. Read-only once made.
    """

    def __init__(
        self,
        entry: SeriesEntry,
        path: Path,
        raw: bytes | None,  # the file's bytes, when the caller has them; None: read when asked
        preparsed: PatchFile | None,  # None: parsed when first asked for
        mapping: MapEntry | None,
        rel: str,  # path as shown to the user, relative to the fork root
        ways: Ways | None = None,  # the fork load's checked folders (its later reads too)
    ) -> None:
        self.entry: Final[SeriesEntry] = entry
        self.path: Final[Path] = path
        self.raw: Final[bytes | None] = raw
        self.preparsed: Final[PatchFile | None] = preparsed
        self.mapping: Final[MapEntry | None] = mapping
        self.rel: Final[str] = rel
        self.ways: Final[Ways | None] = ways

    def _key(self) -> tuple[object, ...]:
        return (self.entry, self.path, self.raw, self.preparsed, self.mapping, self.rel)

    def __eq__(self, other: object) -> bool:
        """The same entry, file, map entry and given bytes or parse (what is read
        later is not compared)."""
        return isinstance(other, Patch) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Patch({self.rel!r})"

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def strip(self) -> int:
        """The ``-p`` level the series gives the patch."""
        return self.entry.strip

    @cached_property
    def data(self) -> bytes:
        return self.read()

    def read(self) -> bytes:
        """The file's bytes, without keeping them when they were not read yet."""
        if self.raw is not None:
            return self.raw
        if "data" in self.__dict__:
            return self.data
        return read_input(self.path, self.rel, follow=False, limit=MAX_PATCH_BYTES, ways=self.ways)

    def mails(self) -> list[tuple[str, str | None]]:
        """(commit, subject) of each git format-patch mail in the file (several for a fix
        made of several upstream commits); read each time, never kept."""
        return mails_in(self.read())

    @cached_property
    def size(self) -> int:
        return len(self.raw) if self.raw is not None else self.path.stat().st_size

    @cached_property
    def parsed(self) -> PatchFile:
        return self.parse()

    def parse(self) -> PatchFile:
        """The parse, without keeping it (or the bytes) when it was not made yet."""
        if self.preparsed is not None:
            return self.preparsed
        if "parsed" in self.__dict__:
            return self.parsed
        return parse_patch(self.read(), strip=self.entry.strip)

    @cached_property
    def header(self) -> PatchHeader:
        """``parsed.header``, read without parsing the diffs."""
        if self.preparsed is not None or "parsed" in self.__dict__:
            return self.parsed.header
        return parse_header(self.read(), strip=self.entry.strip)

    @property
    def upstream_pr(self) -> str | None:
        """The one rule for a patch's PR: the Upstream-PR trailer, else the map note's URL."""
        trailer = self.header.trailer("Upstream-PR")
        if trailer:
            return trailer.value
        return self.mapping.pr if self.mapping else None

    @property
    def pending(self) -> bool:
        """Mapped ``pending``: waiting for upstream, never retired."""
        return self.mapping is not None and self.mapping.pending

    @property
    def commits(self) -> tuple[str, ...]:
        return self.mapping.commits if self.mapping else ()

    def findings(self) -> list[Finding]:
        return [Finding("error", p.message, self.rel, p.line) for p in self.parsed.problems]


class Fork(NamedTuple):
    config: Config
    series: Series
    upstream_map: UpstreamMap
    ledger: Ledger
    patches: tuple[Patch, ...]
    findings: tuple[Finding, ...]  # problems with the files themselves, not with patch contents

    @property
    def root(self) -> Path:
        return self.config.root

    def patch(self, name: str) -> Patch:
        for patch in self.patches:
            if patch.name == name:
                return patch
        known = ", ".join(p.name for p in self.patches) or "(the series is empty)"
        raise FatalError(f"'{name}' is not in the series", f"series patches: {known}")

    def note_path(self, name: str) -> Path:
        return self.config.patches_dir / NOTES_DIR / (Path(name).stem + ".md")

    def all_findings(self) -> list[Finding]:
        found = list(self.findings)
        for patch in self.patches:
            found += patch.findings()
        return found

    def require_sound(self) -> Fork:
        """Raise (exit 2) on the first problem with the fork's files or patches."""
        require_no_errors(self.all_findings())
        return self


def _read_required(config: Config, relative: str, what: str) -> bytes:
    path = config.file(relative)
    if not path.exists() and not path.is_symlink():
        raise FatalError(
            f"{relative}: no such file ({what})",
            "run 'forktool init' to scaffold the fork's files, or fix the path in forktool.yaml",
        )
    return read_input(path, relative, follow=False)


def patch_files_on_disk(patches_dir: Path, *, by_content: bool = False) -> list[str]:
    """Every patch file under ``patches/`` (notes excluded), relative, sorted: each
    ``.patch`` and ``.diff`` file, and with ``by_content`` each other regular file
    whose start holds a diff (Debian names many patches without a suffix:
    ``CVE-2023-1234``, ``fix-ftbfs``)."""
    if not patches_dir.is_dir():
        return []
    found = []
    for path in patches_dir.rglob("*"):
        rel = path.relative_to(patches_dir)
        if rel.parts[0] == NOTES_DIR or not path.is_file():
            continue
        if path.name.endswith(PATCH_SUFFIXES) or (by_content and _holds_a_diff(path)):
            found.append(rel.as_posix())
    return sorted(found)


_DIFF_START = re.compile(
    rb"^(?:diff --git [^\n]*\n|--- [^\n]*\n\+\+\+ [^\n]*\n@@ |Index: [^\n]*\n={20,}\r?\n)", re.M
)
SNIFF_BYTES = 64 << 10


def _holds_a_diff(path: Path) -> bool:
    """Whether a regular file (never a link) starts with a diff within SNIFF_BYTES."""
    if path.is_symlink():
        return False
    try:
        with path.open("rb") as handle:
            return _DIFF_START.search(handle.read(SNIFF_BYTES)) is not None
    except OSError:
        return False


def _load_patch(
    config: Config, entry: SeriesEntry, mapping: MapEntry | None, ways: Ways
) -> Patch | Finding:
    path = config.patches_dir / entry.name
    rel = f"{config.patches}/{entry.name}"
    try:
        data = read_input(path, rel, follow=False, limit=MAX_PATCH_BYTES, ways=ways)
    except UnreadableInput:
        return _unreadable(config, path, rel, entry)
    patch = Patch(entry, path, None, None, mapping, rel, ways)
    # Its header now, from the bytes just read (the map check needs every trailer);
    # the bytes themselves are read again when needed, so a long series is not held.
    patch.__dict__["header"] = parse_header(data, strip=entry.strip)
    patch.__dict__["size"] = len(data)
    return patch


def _unreadable(config: Config, path: Path, rel: str, entry: SeriesEntry) -> Finding:
    """Why a series entry's file could not be read, checked in the order a user fixes
    it (read first: the common case, a readable file, costs one open)."""
    if not path.exists() and not path.is_symlink():
        return Finding(
            "error",
            f"names '{entry.name}' but {rel} does not exist",
            config.series,
            entry.line,
            "restore the file, or remove the line from the series",
        )
    if path.is_file() and path.stat().st_size > MAX_PATCH_BYTES:
        return Finding(
            "error", f"{rel} is larger than {MAX_PATCH_BYTES >> 20} MiB", config.series, entry.line
        )
    try:
        read_input(path, rel, follow=False, limit=MAX_PATCH_BYTES)
    except UnreadableInput as exc:
        return Finding(
            "error", f"names '{entry.name}' but {exc.message}", config.series, entry.line, exc.hint
        )
    # It became readable meanwhile (something is writing the fork): read it next run.
    return Finding(
        "error",
        f"names '{entry.name}' but {rel} changed while it was read",
        config.series,
        entry.line,
    )


def _cross_check(
    config: Config, series: Series, umap: UpstreamMap, patches: list[Patch]
) -> list[Finding]:
    findings: list[Finding] = []
    listed = set(series.names)
    refused = {e.name for e in series.refused}  # the series' own finding says why
    elsewhere = _other_series(config)
    # Files of any name that a "#name" line or another series names are patches too
    # (shadow's #900_testsuite_groupmems): the suffixes only find the unnamed ones.
    named = {e.name for e in series.disabled} | set(elsewhere)
    on_disk = set(patch_files_on_disk(config.patches_dir, by_content=True))
    on_disk |= {n for n in named if (config.patches_dir / n).is_file()}
    for name in sorted(on_disk):
        if name not in listed and name not in refused:
            findings.append(_unlisted(config, series, name, elsewhere.get(name)))
    for entry in series.entries:  # a refused map line has its own finding
        if umap.get(entry.name) is None and entry.name not in umap.refused:
            findings.append(
                Finding(
                    "error",
                    f"'{entry.name}' has no line in {config.upstream_map}",
                    config.series,
                    entry.line,
                    f"add '{entry.name} <40-hex commit>' (or 'pending [PR-url]', or 'none' "
                    f"for a fork-only patch) to {config.upstream_map}; 'forktool map suggest "
                    "--write' fills what the patch headers say",
                )
            )
    for map_entry in umap.entries:  # a disabled patch, or another series', may have a line
        known = (
            series.disabled_entry(map_entry.patch) is not None
            or map_entry.patch in elsewhere
            or map_entry.patch in refused
        )
        if map_entry.patch not in listed and not known:
            findings.append(
                Finding(
                    "error",
                    f"maps '{map_entry.patch}', which the series does not list",
                    config.upstream_map,
                    map_entry.line,
                    "remove the line if the patch was retired",
                )
            )
    for patch in patches:
        findings += _trailer_vs_map(patch) + _mails_vs_map(config, patch)
    return findings


def _unlisted(
    config: Config, series: Series, name: str, elsewhere: tuple[str, int] | None
) -> Finding:
    """What a patch file the series does not list is: disabled by a ``#name`` line,
    listed by another series beside it (one per architecture or vendor, as glibc's
    ``series.hurd-i386`` or dpkg-source's ``ubuntu.series``), or forgotten: an error,
    or a warning in a quilt directory kept as its maintainers keep it (dpkg-source
    applies only what the series lists, and its rules may apply a file by hand)."""
    rel = f"{config.patches}/{name}"
    if (off := series.disabled_entry(name)) is not None:
        message = (
            f"{rel} is disabled (commented out in the series): it is neither applied nor checked"
        )
        return Finding("info", message, config.series, off.line)
    if elsewhere is not None:
        other, line = elsewhere
        message = (
            f"{rel} is listed by {other}, another series, not by {config.series}: not applied here"
        )
        return Finding("info", message, other, line)
    hint = f"add it to {config.series}, or delete it if it was retired"
    if not name.endswith(PATCH_SUFFIXES):  # named as no patch: maybe kept for reference
        message = (
            f"{rel} holds a diff but is not listed in the series: it is neither applied nor checked"
        )
        return Finding("warning", message, rel, None, hint)
    if config.patch_form == "maintainers":
        message = f"{rel} is not listed in the series: it is neither applied nor checked"
        return Finding("warning", message, rel, None, hint)
    return Finding("error", f"{rel} is not listed in the series", rel, None, hint)


def _other_series(config: Config) -> dict[str, tuple[str, int]]:
    """Each patch another series file beside the fork's lists (``series.*``,
    ``*.series``): where it first does (the file, as the user sees it, and the line)."""
    folder = config.series_path.parent
    found: dict[str, tuple[str, int]] = {}
    if not folder.is_dir():
        return found
    for path in sorted(folder.iterdir()):
        name = path.name
        if path == config.series_path or not (
            name.startswith("series.") or name.endswith(".series")
        ):
            continue
        shown = config.rel(path)
        try:
            data = read_input(path, shown, follow=False)
        except UnreadableInput:
            continue
        for entry in parse_series(data, shown).entries:
            found.setdefault(entry.name, (shown, entry.line))
    return found


def _trailer_vs_map(patch: Patch) -> list[Finding]:
    trailer = patch.header.trailer("Upstream-Merge")
    declared = None if trailer is None else parse_upstream_merge(trailer.value)
    if trailer is None or declared is None or patch.mapping is None:
        return []
    if set(declared) == set(patch.mapping.commits):
        return []
    shown_map = ",".join(patch.mapping.commits) or "none"
    shown_trailer = ",".join(declared) or "none"
    return [
        Finding(
            "error",
            f"Upstream-Merge trailer says {shown_trailer} but upstream.map line "
            f"{patch.mapping.line} says {shown_map}",
            patch.rel,
            trailer.line,
            "make the trailer and the map name the same upstream commit(s)",
        )
    ]


def _mails_vs_map(config: Config, patch: Patch) -> list[Finding]:
    """A file of several format-patch mails whose map line names some of their commits
    but not all (what forktool's own suggestion made of such a file before it mapped
    every mail): a release holding only those would retire the patch without the
    others' fixes. A map naming none of them (upstream's ids for a packaging branch's
    mails) is not judged."""
    mapping = patch.mapping
    if mapping is None or not mapping.commits or patch.header.style != "mbox":
        return []  # a file of mails starts with one: others are not read again
    if mail_count(patch.read()) < 2:
        return []
    shas = [sha for sha, _ in patch.mails()]
    mapped = set(mapping.commits)
    missing = [sha for sha in dict.fromkeys(shas) if sha not in mapped]
    if len(shas) < 2 or not missing or not mapped.intersection(shas):
        return []
    named = ", ".join(sha[:12] for sha in missing)
    return [
        Finding(
            "warning",
            f"'{patch.name}' holds {len(shas)} format-patch mails, but its map line names "
            f"only some of their commits (not {named}): a release holding those alone would "
            "retire it without the others' fixes",
            config.upstream_map,
            mapping.line,
            f"map every mail's commit: '{patch.name} {','.join(dict.fromkeys(shas))}' "
            "('forktool map suggest' offers it)",
        )
    ]


def load_fork(config: Config, *, strict: bool = True) -> Fork:
    """Read and cross-check the fork. ``strict`` raises on any problem (exit 2)."""
    series = parse_series(_read_required(config, config.series, "the patch series"), config.series)
    umap = parse_map(
        _read_required(config, config.upstream_map, "patch -> upstream commit map"),
        config.upstream_map,
    )
    ledger_path = config.ledger_path
    ledger = (
        parse_ledger(read_input(ledger_path, config.ledger, follow=False), config.ledger)
        if ledger_path.exists() or ledger_path.is_symlink()
        else Ledger(())
    )
    findings = [*series.findings, *umap.findings, *ledger.findings]
    patches: list[Patch] = []
    ways: Ways = {}  # the patch folders' way into the fork, checked once for the run
    for entry in series.entries:
        loaded = _load_patch(config, entry, umap.get(entry.name), ways)
        if isinstance(loaded, Finding):
            findings.append(loaded)
        else:
            patches.append(loaded)
    findings += _cross_check(config, series, umap, patches)
    fork = Fork(config, series, umap, ledger, tuple(patches), tuple(findings))
    return fork.require_sound() if strict else fork
