"""``forktool.yaml``'s sections, each read and validated into :class:`Config`'s fields.

Each reader takes the top-level mapping and returns the keyword arguments of
:class:`~forktool.config.settings.Config` its section sets (nothing for a section
that is not written), recording in ``lines`` where the values that later errors
point at were declared.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from forktool.config.remote import branch_name_problem, remote_name_problem, url_problem
from forktool.config.settings import (
    APPLY_RULES,
    PATCH_FORMS,
    HistorySettings,
    ImageSettings,
    PinSite,
)
from forktool.config.yaml_nodes import (
    Node,
    check_keys,
    choice,
    compose,
    inside_fork,
    seconds,
    user_regex,
)
from forktool.git import is_hex40
from forktool.model.versions import SEPARATORS, VersionScheme

Section = dict[str, Node]
Values = dict[str, Any]

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
_IMAGE_KEYS = {
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
_IMAGE_PATH_KEYS = ("context", "dockerfile", "records", "waivers")


def document(text: str, path: str) -> Section:
    """The file's top-level mapping: valid YAML, known keys only, ``pin`` present."""
    root = Node(compose(text, path), path)
    top = root.mapping("forktool.yaml")
    check_keys(root, top, "forktool.yaml", _TOP_KEYS, {"pin"})
    return top


def pin(top: Section, lines: dict[str, int]) -> Values:
    """``pin:``: the tag, the 40-hex commit it must peel to, the tarball's tree commit."""
    node = top["pin"]
    items = node.mapping("pin")
    check_keys(node, items, "pin", {"tag", "commit", "import_commit"}, {"tag", "commit"})
    values: Values = {"pin_tag": items["tag"].string("pin.tag")}
    for key, name in (("commit", "pin_commit"), ("import_commit", "pin_import")):
        if key not in items:
            continue
        commit = items[key].string(f"pin.{key}")
        if not is_hex40(commit):
            raise items[key].fail(f"pin.{key} '{commit}' must be a full 40-hex lowercase commit id")
        values[name] = commit
        lines[f"pin.{key}"] = items[key].line
    lines["pin.tag"] = items["tag"].line
    return values


def upstream(top: Section, lines: dict[str, int]) -> Values:
    """``upstream:``: the remote's name and URL, its development branch, PR patterns."""
    if "upstream" not in top:
        return {}
    node = top["upstream"]
    items = node.mapping("upstream")
    check_keys(node, items, "upstream", {"remote", "url", "branch", "pr_patterns"}, set())
    values: Values = {}
    if "remote" in items:
        remote = items["remote"].string("upstream.remote")
        if problem := remote_name_problem(remote):
            raise items["remote"].fail(f"upstream.remote {remote!r} {problem}")
        values["upstream_remote"] = remote
    if "url" in items:
        url = items["url"].string("upstream.url")
        if problem := url_problem(url):
            raise items["url"].fail(
                f"upstream.url {url!r} {problem}; refusing it",
                "write the repository's URL (https://..., ssh://..., git@host:path) or a path",
            )
        values["upstream_url"] = url
    if "branch" in items:
        values["upstream_branch"] = _branch_name(items["branch"])
    if "pr_patterns" in items:
        patterns = items["pr_patterns"].sequence("upstream.pr_patterns")
        values["pr_patterns"] = tuple(
            user_regex(item, "upstream.pr_patterns", "pr", "the PR number or id")
            for item in patterns
        )
        for number, item in enumerate(patterns):
            lines[f"upstream.pr_patterns.{number}"] = item.line
    return values


def _branch_name(node: Node) -> str:
    name = node.string("upstream.branch")
    if problem := branch_name_problem(name):
        raise node.fail(f"upstream.branch '{name}' {problem}")
    return name


def rules(top: Section) -> Values:
    """``layout``, ``patch_form`` and ``apply_rule``: how the fork is kept and applied."""
    values: Values = {}
    if "layout" in top:
        layout = top["layout"].string("layout")
        if layout not in ("merged", "overlay"):
            raise top["layout"].fail(f"layout '{layout}' must be 'merged' or 'overlay'")
        values["layout"] = layout
    for key, allowed in (("patch_form", PATCH_FORMS), ("apply_rule", APPLY_RULES)):
        if key in top:
            values[key] = choice(top[key], key, allowed)
    return values


def releases(top: Section) -> Values:
    """``release_tags``, ``release_version`` and ``prereleases``: which upstream tags are
    releases, and how a version is read from one."""
    values: Values = {}
    if "release_tags" in top:
        values["release_tags"] = top["release_tags"].string("release_tags")
    if "release_version" in top:
        values["release_version"] = _release_version(top["release_version"])
    if "prereleases" in top:
        values["prereleases"] = top["prereleases"].boolean("prereleases")
    return values


def _release_version(node: Node) -> VersionScheme:
    """``release_version: {prefix: 'curl-', separator: '_'}``: how a version is read."""
    items = node.mapping("release_version")
    check_keys(node, items, "release_version", {"prefix", "separator"}, {"separator"})
    prefix = ""
    if "prefix" in items:
        raw = items["prefix"]
        if not raw.is_text:
            raise raw.fail("release_version.prefix must be a string ('' for none)")
        prefix = raw.text
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


def paths(top: Section) -> Values:
    """Where the fork keeps its files: series, patches, map, ledger, record."""
    values: Values = {}
    for key in _PATH_KEYS:
        if key in top:
            value = top[key].string(key)
            if not inside_fork(value):
                raise top[key].fail(f"{key} '{value}' must be a path inside the fork")
            values[key] = value
    return values


def pin_sites(top: Section) -> Values:
    """``pin_sites:``: every other place that names the pinned tag."""
    if "pin_sites" not in top:
        return {}
    return {"pin_sites": tuple(_pin_site(item) for item in top["pin_sites"].sequence("pin_sites"))}


def _pin_site(node: Node) -> PinSite:
    items = node.mapping("a pin_sites entry")
    check_keys(node, items, "a pin_sites entry", {"file", "pattern"}, {"file", "pattern"})
    file = items["file"].string("pin_sites.file")
    pattern = user_regex(items["pattern"], "pin_sites", "tag", "the text a pin bump rewrites")
    if not inside_fork(file):
        raise items["file"].fail(f"pin_sites file '{file}' must be a path inside the fork")
    return PinSite(file, pattern, node.line)


def image(top: Section) -> Values:
    """``image:``: the candidate image's repository, build and gate."""
    if "image" not in top:
        return {}
    node = top["image"]
    items = node.mapping("image")
    check_keys(node, items, "image", _IMAGE_KEYS, {"repository", "dockerfile"})
    special = {"gate", "gate_timeout"}
    values: Values = {k: items[k].string(f"image.{k}") for k in _IMAGE_KEYS - special if k in items}
    for key in _IMAGE_PATH_KEYS:
        if key in values and not inside_fork(values[key]):
            raise items[key].fail(f"image.{key} '{values[key]}' must be a path inside the fork")
    if "gate_timeout" in items:
        values["gate_timeout"] = seconds(items["gate_timeout"], "image.gate_timeout")
    gate = _gate(items["gate"]) if "gate" in items else ()
    return {"image": ImageSettings(gate=gate, **values)}


def _gate(node: Node) -> tuple[tuple[str, ...], ...]:
    items = node.sequence("image.gate")
    if items and items[0].is_scalar:
        return (_command(node),)
    return tuple(_command(item) for item in items)


def _command(node: Node) -> tuple[str, ...]:
    return tuple(
        part.string("an image.gate command word") for part in node.sequence("an image.gate command")
    )


def history(top: Section) -> Values:
    """``history:``: the commit contract ``check-history`` and ``export`` enforce."""
    if "history" not in top:
        return {}
    node = top["history"]
    items = node.mapping("history")
    check_keys(
        node, items, "history", {"prefixes", "required_trailers", "gnu_patch", "branch"}, set()
    )
    values: Values = {"configured": True}
    if "prefixes" in items:
        values["prefixes"] = _history_prefixes(items["prefixes"])
    if "required_trailers" in items:
        values["required_trailers"] = tuple(
            item.string("a history.required_trailers entry")
            for item in items["required_trailers"].sequence("history.required_trailers")
        )
    if "gnu_patch" in items:
        values["gnu_patch"] = items["gnu_patch"].boolean("history.gnu_patch")
    if "branch" in items:
        values["branch"] = items["branch"].string("history.branch")
    return {"history": HistorySettings(**values)}


def _history_prefixes(node: Node) -> tuple[str, ...]:
    prefixes = []
    for item in node.sequence("history.prefixes"):
        raw = item.string("a history.prefixes entry")
        prefix = raw.rstrip("/")
        if not prefix or raw.startswith("/") or ".." in Path(prefix).parts:
            raise item.fail(f"history prefix '{raw}' must be a path inside the tree")
        prefixes.append(prefix)
    return tuple(prefixes)


def refresh(top: Section) -> Values:
    """``refresh:``: whether a patch may move by a clean 3-way merge."""
    if "refresh" not in top:
        return {}
    node = top["refresh"]
    items = node.mapping("refresh")
    check_keys(node, items, "refresh", {"allow_merged"}, set())
    if "allow_merged" not in items:
        return {}
    return {"allow_merged": items["allow_merged"].boolean("refresh.allow_merged")}
