"""``forktool.yaml`` -> typed, validated settings.

PyYAML is used to read only. Unknown keys, missing required keys, wrong types and
bad ``pin_sites`` patterns are errors that name the file and line. Aliases and
anchors are refused outright: a config needs none, and they are how a YAML bomb
expands.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from forktool.errors import FatalError
from forktool.git import is_hex40
from forktool.inputs import LINK_HINT, linked_directory, read_input
from forktool.model.text import whole_number
from forktool.model.versions import SEPARATORS, VersionScheme, effective_scheme
from forktool.regex_safety import nested_repeat

CONFIG_NAME = "forktool.yaml"
Layout = Literal["merged", "overlay"]
# The form the fork keeps its patch files in: forktool's canonical form (``fmt`` rewrites
# every file to it), or the maintainers' own (headers kept byte for byte, a diff
# regenerated only when it needs it).
PatchForm = Literal["canonical", "maintainers"]
# What counts as applying: forktool's exact rule (every hunk at offset 0, no fuzz), or
# dpkg-source's (no fuzz ever; offsets, and hunk headers edited by hand, reported and
# accepted). The rule itself lives in forktool.engine.apply.verdict.
ApplyRule = Literal["exact", "dpkg"]
MAX_CONFIG_BYTES = 1 << 20
_NOT_TEXT = {"tag:yaml.org,2002:null", "tag:yaml.org,2002:bool"}


@dataclass(frozen=True)
class PinSite:
    file: str
    pattern: str
    line: int  # where the site is declared in forktool.yaml


@dataclass(frozen=True)
class ImageSettings:
    repository: str
    dockerfile: str
    build_arg: str = "BASE_TAG"
    context: str = "."
    gate: tuple[tuple[str, ...], ...] = ()
    site: str | None = None  # directory in the image that carries the series
    records: str = ".forktool/gate-records"
    waivers: str | None = None
    gate_timeout: int = 600  # seconds each gate command may run before it is killed


@dataclass(frozen=True)
class HistorySettings:
    """The commit contract ``check-history`` (and ``export``) enforce."""

    prefixes: tuple[str, ...] = ()  # every path a commit touches must lie under one
    required_trailers: tuple[str, ...] = ("Upstream-Merge",)
    gnu_patch: bool = False  # images apply with GNU patch: no renames, modes, symlinks, binaries
    branch: str | None = None  # the release branch whose commits are exported (check runs on it)
    configured: bool = False  # a 'history:' section is written: export enforces the contract


@dataclass(frozen=True)
class Config:
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
    lines: dict[str, int] = field(default_factory=dict, compare=False)

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


class _Node:
    """A YAML node with the file name, so every error can say where it is."""

    def __init__(self, node: yaml.Node, path: str) -> None:
        self.node = node
        self.path = path

    @property
    def line(self) -> int:
        return int(self.node.start_mark.line) + 1

    def fail(self, message: str, hint: str | None = None) -> FatalError:
        return FatalError(f"{self.path}:{self.line}: {message}", hint)

    def mapping(self, what: str) -> dict[str, _Node]:
        if not isinstance(self.node, yaml.MappingNode):
            raise self.fail(f"{what} must be a mapping")
        out: dict[str, _Node] = {}
        for key, value in self.node.value:
            if not isinstance(key, yaml.ScalarNode):
                raise _Node(key, self.path).fail(f"{what}: keys must be plain names")
            if key.value in out:
                raise _Node(key, self.path).fail(f"{what}: key '{key.value}' appears twice")
            out[key.value] = _Node(value, self.path)
        return out

    def string(self, what: str) -> str:
        # Raw scalar text: an unquoted 1.10 stays "1.10", never the float 1.1.
        plain = isinstance(self.node, yaml.ScalarNode) and self.node.tag not in _NOT_TEXT
        if not plain:
            raise self.fail(f"{what} must be a string")
        value = str(self.node.value)
        if not value:
            raise self.fail(f"{what} must not be empty")
        return value

    def boolean(self, what: str) -> bool:
        if not isinstance(self.node, yaml.ScalarNode) or self.node.tag != "tag:yaml.org,2002:bool":
            raise self.fail(f"{what} must be true or false")
        return str(self.node.value).lower() in ("true", "yes", "on")

    def sequence(self, what: str) -> list[_Node]:
        if not isinstance(self.node, yaml.SequenceNode):
            raise self.fail(f"{what} must be a list")
        return [_Node(item, self.path) for item in self.node.value]


def _check_keys(
    node: _Node, items: dict[str, _Node], what: str, allowed: set[str], required: set[str]
) -> None:
    for key, value in items.items():
        if key not in allowed:
            known = ", ".join(sorted(allowed))
            raise FatalError(
                f"{node.path}:{_key_line(node, key)}: unknown key '{key}' in {what}",
                f"known keys: {known}",
            )
        del value
    for key in sorted(required - items.keys()):
        raise node.fail(f"{what} is missing required key '{key}'")


def _key_line(node: _Node, key: str) -> int:
    assert isinstance(node.node, yaml.MappingNode)
    for k, _ in node.node.value:
        if k.value == key:
            return int(k.start_mark.line) + 1
    return node.line


def _compose(text: str, path: str) -> yaml.Node:
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                line = event.start_mark.line + 1 if event.start_mark else 0
                raise FatalError(
                    f"{path}:{line}: YAML anchors and aliases are not allowed in forktool.yaml",
                    "write each value out in full",
                )
            tag = getattr(event, "tag", None)
            if tag is not None and not tag.startswith("tag:yaml.org,2002:"):
                line = event.start_mark.line + 1 if event.start_mark else 0
                raise FatalError(
                    f"{path}:{line}: unknown YAML tag {tag!r}: forktool.yaml takes plain values",
                    f"remove the tag ({tag}) and write the value alone",
                )
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise FatalError(f"{path}{where}: not valid YAML: {problem}") from exc
    if node is None:
        raise FatalError(
            f"{path}: the file is empty", "run 'forktool init --pin TAG' to create one"
        )
    return node


def _user_regex(node: _Node, what: str, group: str, marks: str) -> str:
    """A user's pattern, vetted: it compiles, cannot backtrack for ever, has ``group``."""
    pattern = node.string(what)
    try:
        regex = re.compile(pattern, re.MULTILINE)
    except re.error as exc:
        raise node.fail(f"{what} pattern does not compile: {exc}") from exc
    if nested_repeat(pattern):
        raise node.fail(
            f"{what} pattern nests a repeat inside a repeat, like (a+)+: "
            "it can backtrack for ever on a near-miss line",
            f"repeat a plain item instead, e.g. (?P<{group}>\\S+)",
        )
    if group not in regex.groupindex:
        raise node.fail(f"{what} pattern has no (?P<{group}>...) group", f"the group marks {marks}")
    return pattern


# Transports that run a command or read a file descriptor rather than reach a repository.
_COMMAND_TRANSPORTS = ("ext::", "fd::")


def url_problem(url: str) -> str | None:
    """Why ``url`` must not be handed to git as a remote URL, or None. A URL that starts
    with ``-`` is read as an option (``--upload-pack=...`` runs a command); ``ext::`` runs
    a command and ``fd::`` talks to a file descriptor. Applied to upstream.url when the
    config is read and to a remote's URL from git's config before it is fetched from."""
    if url.startswith("-"):
        return "starts with '-', so git would read it as an option"
    if url.lower().startswith(_COMMAND_TRANSPORTS):
        return f"uses the {url.split('::', 1)[0]}:: transport, which runs a command"
    if not url.isprintable():
        return "contains control characters"
    return None


def remote_name_problem(name: str) -> str | None:
    """Why ``name`` is no git remote name, or None."""
    if name.startswith("-") or name.startswith(".") or name.endswith(("/", ".lock")):
        return "is not a remote name"
    if ".." in name or any(c.isspace() or c in "~^:?*[\\" or not c.isprintable() for c in name):
        return "is not a remote name"
    return None


def _release_version(node: _Node) -> VersionScheme:
    """``release_version: {prefix: 'curl-', separator: '_'}``: how a version is read."""
    items = node.mapping("release_version")
    _check_keys(node, items, "release_version", {"prefix", "separator"}, {"separator"})
    prefix = ""
    if "prefix" in items:
        raw = items["prefix"]
        plain = isinstance(raw.node, yaml.ScalarNode) and raw.node.tag not in _NOT_TEXT
        if not plain:
            raise raw.fail("release_version.prefix must be a string ('' for none)")
        prefix = str(raw.node.value)
        if any(c in prefix for c in "*?[") or any(c.isspace() for c in prefix):
            raise raw.fail(
                f"release_version.prefix '{prefix}' must be the tags' literal text, not a pattern"
            )
    separator = items["separator"].string("release_version.separator")
    if separator not in SEPARATORS:
        raise items["separator"].fail(
            f"release_version.separator '{separator}' must be one of "
            + ", ".join(f"'{s}'" for s in SEPARATORS)
        )
    return VersionScheme(prefix, separator)


def _branch_name(node: _Node) -> str:
    name = node.string("upstream.branch")
    bad = name.startswith(("-", "/")) or name.endswith("/") or ".." in name
    if bad or any(c.isspace() or c in "~^:?*[\\" or not c.isprintable() for c in name):
        raise node.fail(f"upstream.branch '{name}' is not a branch name")
    return name


PATCH_FORMS = ("canonical", "maintainers")
APPLY_RULES = ("exact", "dpkg")


def _choice(node: _Node, what: str, allowed: tuple[str, ...]) -> str:
    value = node.string(what)
    if value not in allowed:
        raise node.fail(
            f"{what} '{value}' must be one of: {', '.join(allowed)}",
            f"e.g. {what}: {allowed[0]}",
        )
    return value


def _pin_site(node: _Node) -> PinSite:
    items = node.mapping("a pin_sites entry")
    _check_keys(node, items, "a pin_sites entry", {"file", "pattern"}, {"file", "pattern"})
    file = items["file"].string("pin_sites.file")
    pattern = _user_regex(items["pattern"], "pin_sites", "tag", "the text a pin bump rewrites")
    if file.startswith("/") or ".." in Path(file).parts:
        raise items["file"].fail(f"pin_sites file '{file}' must be a path inside the fork")
    return PinSite(file, pattern, node.line)


def _command(node: _Node) -> tuple[str, ...]:
    return tuple(
        part.string("an image.gate command word") for part in node.sequence("an image.gate command")
    )


def _gate(node: _Node) -> tuple[tuple[str, ...], ...]:
    items = node.sequence("image.gate")
    if items and isinstance(items[0].node, yaml.ScalarNode):
        return (_command(node),)
    return tuple(_command(item) for item in items)


def _image(node: _Node) -> ImageSettings:
    items = node.mapping("image")
    allowed = {
        "repository",
        "dockerfile",
        "build_arg",
        "context",
        "gate",
        "site",
        "records",
        "waivers",
        "gate_timeout",
    }
    _check_keys(node, items, "image", allowed, {"repository", "dockerfile"})
    special = {"gate", "gate_timeout"}
    values: dict[str, Any] = {
        k: items[k].string(f"image.{k}") for k in allowed - special if k in items
    }
    for key in _IMAGE_PATH_KEYS:
        if key in values and not _inside_fork(values[key]):
            raise items[key].fail(f"image.{key} '{values[key]}' must be a path inside the fork")
    if "gate_timeout" in items:
        values["gate_timeout"] = _seconds(items["gate_timeout"], "image.gate_timeout")
    gate = _gate(items["gate"]) if "gate" in items else ()
    return ImageSettings(gate=gate, **values)


_IMAGE_PATH_KEYS = ("context", "dockerfile", "records", "waivers")


def _inside_fork(value: str) -> bool:
    return not value.startswith("/") and ".." not in Path(value).parts


def _seconds(node: _Node, what: str) -> int:
    return _whole_number(node, what, (1, 86400), "seconds", example=600)


def _whole_number(
    node: _Node, what: str, bounds: tuple[int, int], unit: str, *, example: int
) -> int:
    """A number in the config: a plain YAML integer written in ASCII digits, in range.
    Every number the config holds is read here."""
    plain = isinstance(node.node, yaml.ScalarNode) and node.node.style is None
    text = str(node.node.value) if isinstance(node.node, yaml.ScalarNode) else ""
    low, high = bounds
    number = whole_number(text, len(str(high))) if plain else None
    if number is None or not low <= number <= high:
        shown = text if len(text) <= 40 else text[:40] + "..."
        raise node.fail(
            f"{what} {shown!r} must be a whole number of {unit} from {low} to {high}",
            f"write it in ASCII digits, unquoted, e.g. {what.rsplit('.', 1)[-1]}: {example}",
        )
    return number


def _history(node: _Node) -> HistorySettings:
    items = node.mapping("history")
    allowed = {"prefixes", "required_trailers", "gnu_patch", "branch"}
    _check_keys(node, items, "history", allowed, set())
    values: dict[str, Any] = {"configured": True}
    if "prefixes" in items:
        prefixes = []
        for item in items["prefixes"].sequence("history.prefixes"):
            raw = item.string("a history.prefixes entry")
            prefix = raw.rstrip("/")
            if not prefix or raw.startswith("/") or ".." in Path(prefix).parts:
                raise item.fail(f"history prefix '{raw}' must be a path inside the tree")
            prefixes.append(prefix)
        values["prefixes"] = tuple(prefixes)
    if "required_trailers" in items:
        values["required_trailers"] = tuple(
            item.string("a history.required_trailers entry")
            for item in items["required_trailers"].sequence("history.required_trailers")
        )
    if "gnu_patch" in items:
        values["gnu_patch"] = items["gnu_patch"].boolean("history.gnu_patch")
    if "branch" in items:
        values["branch"] = items["branch"].string("history.branch")
    return HistorySettings(**values)


_TOP_KEYS = {
    "upstream",
    "pin",
    "layout",
    "patch_form",
    "apply_rule",
    "release_tags",
    "release_version",
    "prereleases",
    "series",
    "patches",
    "upstream_map",
    "ledger",
    "record",
    "pin_sites",
    "image",
    "history",
    "refresh",
}
_PATH_KEYS = ("series", "patches", "upstream_map", "ledger", "record")


def parse_config(text: str, path: Path) -> Config:
    shown = str(path)
    root_node = _Node(_compose(text, shown), shown)
    top = root_node.mapping("forktool.yaml")
    _check_keys(root_node, top, "forktool.yaml", _TOP_KEYS, {"pin"})
    values: dict[str, Any] = {}
    lines: dict[str, int] = {key: node.line for key, node in top.items()}

    pin = top["pin"].mapping("pin")
    _check_keys(top["pin"], pin, "pin", {"tag", "commit", "import_commit"}, {"tag", "commit"})
    values["pin_tag"] = pin["tag"].string("pin.tag")
    for key, name in (("commit", "pin_commit"), ("import_commit", "pin_import")):
        if key not in pin:
            continue
        commit = pin[key].string(f"pin.{key}")
        if not is_hex40(commit):
            raise pin[key].fail(f"pin.{key} '{commit}' must be a full 40-hex lowercase commit id")
        values[name] = commit
        lines[f"pin.{key}"] = pin[key].line
    lines["pin.tag"] = pin["tag"].line

    if "upstream" in top:
        upstream = top["upstream"].mapping("upstream")
        _check_keys(
            top["upstream"],
            upstream,
            "upstream",
            {"remote", "url", "branch", "pr_patterns"},
            set(),
        )
        if "remote" in upstream:
            remote = upstream["remote"].string("upstream.remote")
            if problem := remote_name_problem(remote):
                raise upstream["remote"].fail(f"upstream.remote {remote!r} {problem}")
            values["upstream_remote"] = remote
        if "url" in upstream:
            url = upstream["url"].string("upstream.url")
            if problem := url_problem(url):
                raise upstream["url"].fail(
                    f"upstream.url {url!r} {problem}; refusing it",
                    "write the repository's URL (https://..., ssh://..., git@host:path) or a path",
                )
            values["upstream_url"] = url
        if "branch" in upstream:
            values["upstream_branch"] = _branch_name(upstream["branch"])
        if "pr_patterns" in upstream:
            items = upstream["pr_patterns"].sequence("upstream.pr_patterns")
            values["pr_patterns"] = tuple(
                _user_regex(item, "upstream.pr_patterns", "pr", "the PR number or id")
                for item in items
            )
            for number, item in enumerate(items):
                lines[f"upstream.pr_patterns.{number}"] = item.line
    if "layout" in top:
        layout = top["layout"].string("layout")
        if layout not in ("merged", "overlay"):
            raise top["layout"].fail(f"layout '{layout}' must be 'merged' or 'overlay'")
        values["layout"] = layout
    for key, allowed in (("patch_form", PATCH_FORMS), ("apply_rule", APPLY_RULES)):
        if key in top:
            values[key] = _choice(top[key], key, allowed)
    if "release_tags" in top:
        values["release_tags"] = top["release_tags"].string("release_tags")
    if "release_version" in top:
        values["release_version"] = _release_version(top["release_version"])
    if "prereleases" in top:
        values["prereleases"] = top["prereleases"].boolean("prereleases")
    for key in _PATH_KEYS:
        if key in top:
            value = top[key].string(key)
            if value.startswith("/") or ".." in Path(value).parts:
                raise top[key].fail(f"{key} '{value}' must be a path inside the fork")
            values[key] = value
    if "pin_sites" in top:
        values["pin_sites"] = tuple(
            _pin_site(item) for item in top["pin_sites"].sequence("pin_sites")
        )
    if "image" in top:
        values["image"] = _image(top["image"])
    if "history" in top:
        values["history"] = _history(top["history"])
    if "refresh" in top:
        refresh = top["refresh"].mapping("refresh")
        _check_keys(top["refresh"], refresh, "refresh", {"allow_merged"}, set())
        if "allow_merged" in refresh:
            values["allow_merged"] = refresh["allow_merged"].boolean("refresh.allow_merged")
    return Config(root=path.parent, path=path, lines=lines, **values)


def load_config(path: Path) -> Config:
    if not path.is_file():
        raise FatalError(
            f"{path}: no such file",
            "run 'forktool init --pin TAG' in the fork, or pass -C DIR / --config FILE",
        )
    data = read_input(path, str(path))
    if len(data) > MAX_CONFIG_BYTES:
        raise FatalError(f"{path}: {len(data)} bytes is too large for a config file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FatalError(f"{path}: not valid UTF-8 (byte {exc.start})") from exc
    config = parse_config(text, path.resolve())
    refuse_linked_directories(config)
    return config


def refuse_linked_directories(config: Config) -> None:
    """Every file the fork keeps must be reached without leaving the fork through a
    symlinked directory: forktool would read (and rewrite, and delete) files git does
    not commit, possibly outside the fork."""
    files = [config.series, config.upstream_map, config.ledger, config.record]
    files += [site.file for site in config.pin_sites]
    directories = [config.patches, f"{config.patches}/notes"]
    for rel, itself in [*((f, False) for f in files), *((d, True) for d in directories)]:
        problem = linked_directory(config.root, rel, itself=itself)
        if problem:
            raise FatalError(
                f"{rel}: {problem}; forktool reads and writes the fork's files only inside "
                "the fork",
                LINK_HINT,
            )


def find_config(start: Path, stop: Callable[[Path], bool] | None = None) -> Path:
    """The nearest forktool.yaml at or above ``start`` (not above ``stop``'s directory)."""
    here = start.resolve()
    for directory in (here, *here.parents):
        candidate = directory / CONFIG_NAME
        if candidate.is_file():
            return candidate
        if stop is not None and stop(directory):
            break
    raise FatalError(
        f"no {CONFIG_NAME} found in {here} or above",
        "run 'forktool init --pin TAG' to start a fork here, or pass -C DIR / --config FILE",
    )
