"""The fork's settings as typed values: what ``forktool.yaml`` declares, after
validation (:func:`forktool.config.parse_config` builds them)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal, NamedTuple

from forktool.model.tuples import last_field_aside
from forktool.model.versions import VersionScheme, effective_scheme

Layout = Literal["merged", "overlay"]
# The form the fork keeps its patch files in: forktool's canonical form (``fmt`` rewrites
# every file to it), or the maintainers' own (headers kept byte for byte, a diff
# regenerated only when it needs it).
PatchForm = Literal["canonical", "maintainers"]
# What counts as applying: forktool's exact rule (every hunk at offset 0, no fuzz), or
# dpkg-source's (no fuzz ever; offsets, and hunk headers edited by hand, reported and
# accepted). The rule itself lives in forktool.engine.apply.verdict.
ApplyRule = Literal["exact", "dpkg"]
PATCH_FORMS = ("canonical", "maintainers")
APPLY_RULES = ("exact", "dpkg")


class PinSite(NamedTuple):
    file: str
    pattern: str
    line: int  # where the site is declared in forktool.yaml


class ImageSettings(NamedTuple):
    repository: str
    dockerfile: str
    build_arg: str = "BASE_TAG"
    context: str = "."
    gate: tuple[tuple[str, ...], ...] = ()
    site: str | None = None  # directory in the image that carries the series
    records: str = ".forktool/gate-records"
    waivers: str | None = None
    gate_timeout: int = 600  # seconds each gate command may run before it is killed


class HistorySettings(NamedTuple):
    """The commit contract ``check-history`` (and ``export``) enforce."""

    prefixes: tuple[str, ...] = ()  # every path a commit touches must lie under one
    required_trailers: tuple[str, ...] = ("Upstream-Merge",)
    gnu_patch: bool = False  # images apply with GNU patch: no renames, modes, symlinks, binaries
    branch: str | None = None  # the release branch whose commits are exported (check runs on it)
    configured: bool = False  # a 'history:' section is written: export enforces the contract


@last_field_aside
class Config(NamedTuple):
    root: Path  # the directory holding forktool.yaml
    path: Path
    pin_tag: str
    pin_commit: str
    upstream_remote: str = "upstream"
    upstream_url: str | None = None
    upstream_branch: str = "main"  # upstream's development branch (upstream resolve, forecast)
    pr_patterns: tuple[str, ...] = ()  # extra regexes with a (?P<pr>...) group
    layout: Layout = "merged"
    patch_form: PatchForm = "canonical"
    apply_rule: ApplyRule = "exact"
    release_tags: str = "v*"
    release_version: VersionScheme | None = None  # as written; see version_scheme
    prereleases: bool = True
    pin_import: str | None = None  # pin.import_commit: the release tarball's tree on the tag
    series: str = "series"
    patches: str = "patches"
    upstream_map: str = "upstream.map"
    ledger: str = "alignment.ledger"
    record: str = "FORK.md"
    pin_sites: tuple[PinSite, ...] = ()
    image: ImageSettings | None = None
    history: HistorySettings = HistorySettings()
    allow_merged: bool = True  # refresh.allow_merged: a patch may move by a clean 3-way merge
    # Where each key is written, for messages; not part of the settings (two configs
    # that read alike are equal): the last field, left out of equality and the hash.
    lines: Mapping[str, int] = {}

    def file(self, relative: str) -> Path:
        return self.root / relative

    @property
    def version_scheme(self) -> VersionScheme:
        """How a version is read from a release tag: ``release_version``, else the
        pinned tag's shape (when it is one of the release tags), else the pattern's."""
        return self.release_version or effective_scheme(self.release_tags, self.pin_tag)

    @property
    def series_path(self) -> Path:
        return self.file(self.series)

    @property
    def patches_dir(self) -> Path:
        return self.file(self.patches)

    @property
    def map_path(self) -> Path:
        return self.file(self.upstream_map)

    @property
    def ledger_path(self) -> Path:
        return self.file(self.ledger)

    @property
    def record_path(self) -> Path:
        return self.file(self.record)

    def own_paths(self) -> tuple[Path, ...]:
        """The fork's bookkeeping files and directories: forktool.yaml, the series, the
        patches, the map, the ledger and the record (the one list of them)."""
        return (
            self.path,
            self.series_path,
            self.patches_dir,
            self.map_path,
            self.ledger_path,
            self.record_path,
        )

    def own_files(self) -> tuple[str, ...]:
        """:meth:`own_paths` relative to the fork root: declared divergence by definition
        (align, sync's merge)."""
        return tuple(Path(self.rel(p)).as_posix() for p in self.own_paths())

    def owns(self, path: str) -> bool:
        """Whether ``path`` (relative to the fork root) is or lies under an own file."""
        return any(path == own or path.startswith(own + "/") for own in self.own_files())

    def rel(self, path: Path) -> str:
        """``path`` as the user sees it: relative to the fork root."""
        try:
            return str(path.relative_to(self.root))
        except ValueError:
            return str(path)
