"""Pin sites: every place that names the pinned tag, read, checked and rewritten.

A pin site is a file plus a regular expression whose ``(?P<tag>...)`` group marks
the tag (``pin_sites`` in forktool.yaml); ``pin.tag`` in forktool.yaml is a site
too. :func:`read_pins` reads them all, :func:`verify_pin_sites` says what is wrong, and
:func:`plan_bump` computes a bump as edits of the matched spans of the raw text:
never a YAML round trip, so every other byte (comments, quoting, indentation)
stays as it was.

Patterns come from the fork's config, and Python's ``re`` can backtrack for
ever on a pathological one (``(a+)+$``) while holding the interpreter, so no
signal or thread can stop it. Patterns therefore run in a separate, isolated
Python process with a time limit (``regex_safety.run_limited``); a pattern
that does not finish is refused with exit 2 naming the site. Site files are
capped at :data:`MAX_SITE_BYTES`: pin sites are small configuration files.
"""

from __future__ import annotations

import difflib
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from forktool.config import Config, PinSite, parse_config
from forktool.engine.pin_state import PinState, pin_state, require_tree
from forktool.engine.tarball import with_import_commit
from forktool.engine.upstream import fetch_upstream
from forktool.errors import FatalError, Finding, InputError, command_line
from forktool.fsutil import write_files, write_refusal
from forktool.git import Git
from forktool.regex_safety import MAX_MATCHES, RegexTimeout, run_limited

if TYPE_CHECKING:
    from forktool.engine.retire import LostFix

MAX_SITE_BYTES = 1 << 20

# Characters refused in a tag name even where git would accept them: a tag name
# is pasted into Dockerfiles, workflows and shell scripts.
_UNSAFE_TAG_CHARS = set(";&|$`'\"\\<>(){}[]*?!#~^:,=%@")


@dataclass(frozen=True)
class Match:
    """One match of a site's pattern. ``value`` is None when the tag group took no part."""

    line: int
    value: str | None
    start: int  # character offsets of the tag group in the file's text (unused for
    end: int  # forktool.yaml's pin.tag, whose span comes from the YAML parser)

    def to_json(self) -> dict[str, object]:
        return {"line": self.line, "value": self.value}


@dataclass(frozen=True)
class SiteReading:
    """One pin site as found on disk."""

    file: str
    pattern: str | None  # None for forktool.yaml's pin.tag
    declared_line: int  # where forktool.yaml declares the site (pin.tag's own line for the config)
    matches: tuple[Match, ...] = ()
    problem: str | None = None  # the file could not be read or searched
    text: str | None = field(default=None, repr=False, compare=False)

    @property
    def is_config(self) -> bool:
        return self.pattern is None

    @property
    def value(self) -> str | None:
        """The tag the site names, when it names exactly one."""
        return self.matches[0].value if len(self.matches) == 1 else None

    @property
    def line(self) -> int | None:
        return self.matches[0].line if len(self.matches) == 1 else None

    def to_json(self) -> dict[str, object]:
        return {
            "file": self.file,
            "line": self.line,
            "value": self.value,
            "pattern": self.pattern,
            "declared_line": self.declared_line,
            "matches": [m.to_json() for m in self.matches],
            "problem": self.problem,
        }


@dataclass(frozen=True)
class PinsResult:
    """``pin show`` and ``pin check``: the pin, every site, and what is wrong."""

    pin: PinState
    layout: str
    sites: tuple[SiteReading, ...]  # forktool.yaml's pin.tag first
    findings: tuple[Finding, ...] = ()
    head: str | None = None
    head_contains_pin: bool | None = None  # None when not checked (overlay, or unknown)
    checked: bool = False  # pin check judged the pin; pin show only lists

    @property
    def ok(self) -> bool:
        return not any(f.severity == "error" for f in self.findings)

    def to_json(self) -> dict[str, object]:
        return {
            "ok": self.ok if self.checked else None,
            "tag": self.pin.tag,
            "commit": self.pin.recorded,
            "tag_commit": self.pin.actual,
            "layout": self.layout,
            "head": self.head,
            "head_contains_pin": self.head_contains_pin,
            "sites": [s.to_json() for s in self.sites],
            "findings": [f.to_json() for f in self.findings],
        }


# -- reading -------------------------------------------------------------------------


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _read_site_text(config: Config, site: PinSite) -> tuple[str | None, str | None]:
    """(text, problem): the site file's text, or why it cannot be read."""
    path = config.file(site.file)
    if path.is_symlink():
        return None, "is a symbolic link; a pin site must be a regular file"
    if not path.exists():
        return None, "no such file"
    if not path.is_file():
        return None, "is not a regular file"
    size = path.stat().st_size
    if size > MAX_SITE_BYTES:
        return None, f"is {size} bytes; pin site files are limited to {MAX_SITE_BYTES} bytes"
    try:
        return path.read_bytes().decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return None, f"is not UTF-8 text (byte {exc.start})"


def find_spans(jobs: Sequence[tuple[PinSite, str]]) -> list[list[tuple[int, int]]]:
    """The tag group's spans for each (site, text), under a time limit.

    Exit 2 (FatalError) when a pattern runs past :data:`PATTERN_TIMEOUT_SECONDS`.
    """
    spans: list[list[tuple[int, int]]] = []
    for site, text in jobs:  # one child per site: a hang is its own site's
        try:
            spans.append(run_limited([site.pattern], [text], "tag")[0][0])
        except RegexTimeout as stop:
            raise FatalError(
                f"forktool.yaml:{site.line}: pin_sites pattern for {site.file} did not finish "
                f"within {stop.seconds:g} s (catastrophic backtracking?)",
                "simplify the pattern: anchor it and avoid nested repetition like (a+)+",
            ) from None
        except RuntimeError as exc:
            raise FatalError(f"could not search the pin sites: {exc}") from None
    return spans


def _config_reading(config: Config) -> SiteReading:
    line = config.lines.get("pin.tag", 0)
    return SiteReading(
        file=config.rel(config.path),
        pattern=None,
        declared_line=line,
        matches=(Match(line, config.pin_tag, 0, 0),),
    )


def read_sites(config: Config) -> tuple[SiteReading, ...]:
    """forktool.yaml's pin.tag, then every ``pin_sites`` entry as found on disk."""
    readings: list[SiteReading | None] = []
    jobs: list[tuple[PinSite, str]] = []
    slots: list[int] = []
    for site in config.pin_sites:
        text, problem = _read_site_text(config, site)
        if text is None:
            readings.append(SiteReading(site.file, site.pattern, site.line, problem=problem))
            continue
        slots.append(len(readings))
        readings.append(None)
        jobs.append((site, text))
    for slot, (site, text), spans in zip(slots, jobs, find_spans(jobs), strict=True):
        matches = tuple(
            Match(
                _line_of(text, max(start, 0)), text[start:end] if start >= 0 else None, start, end
            )
            for start, end in spans
        )
        readings[slot] = SiteReading(site.file, site.pattern, site.line, matches, text=text)
    return (_config_reading(config), *(r for r in readings if r is not None))


def read_pins(config: Config, git: Git) -> PinsResult:
    """``pin show``: the pin and every site, problems included, no verdict."""
    return PinsResult(pin_state(config, git), config.layout, read_sites(config))


# -- checking ------------------------------------------------------------------------


def _site_findings(config: Config, reading: SiteReading, *, compare: bool = True) -> list[Finding]:
    """What is wrong with one site; ``compare`` also requires it to name pin.tag."""
    cfg = config.rel(config.path)
    if reading.problem is not None:
        return [
            Finding(
                "error",
                f"pin site {reading.file} {reading.problem}",
                cfg,
                reading.declared_line,
                "fix the path in pin_sites, or restore the file",
            )
        ]
    if not reading.matches:
        return [
            Finding(
                "error",
                f"pin site {reading.file}: pattern {reading.pattern!r} matches nothing",
                cfg,
                reading.declared_line,
                "a pin site must match exactly once; fix the pattern or the file",
            )
        ]
    if len(reading.matches) > 1:
        count = f"{len(reading.matches)}" + ("+" if len(reading.matches) >= MAX_MATCHES else "")
        lines = ", ".join(str(m.line) for m in reading.matches[:10])
        return [
            Finding(
                "error",
                f"pattern matches {count} times (lines {lines}); a pin site must match "
                "exactly once",
                reading.file,
                reading.matches[1].line,
                f"make the pattern declared at {cfg}:{reading.declared_line} more specific",
            )
        ]
    match = reading.matches[0]
    if match.value is None:
        return [
            Finding(
                "error",
                "the pattern matches but its (?P<tag>...) group does not",
                reading.file,
                match.line,
                f"fix the pattern declared at {cfg}:{reading.declared_line}",
            )
        ]
    if compare and match.value != config.pin_tag:
        return [
            Finding(
                "error",
                f"names {match.value!r}, but pin.tag is {config.pin_tag!r} "
                f"({cfg}:{config.lines.get('pin.tag', 0)})",
                reading.file,
                match.line,
                f"run '{command_line('forktool', 'pin', 'bump', config.pin_tag)}' to make every site agree",
            )
        ]
    return []


def _drift_finding(config: Config, sites: Sequence[SiteReading]) -> Finding | None:
    """One finding naming every distinct tag when the sites disagree among themselves."""
    named: dict[str, list[str]] = {}
    for site in sites:
        if site.value is not None:
            named.setdefault(site.value, []).append(f"{site.file}:{site.line}")
    if len(named) < 2:
        return None
    parts = "; ".join(f"{tag!r} at {', '.join(where)}" for tag, where in sorted(named.items()))
    return Finding(
        "error",
        f"pin sites disagree: {parts}",
        config.rel(config.path),
        config.lines.get("pin.tag", 0),
        f"run '{command_line('forktool', 'pin', 'bump', config.pin_tag)}' to make every site agree",
    )


def _tag_findings(config: Config, git: Git, state: PinState) -> list[Finding]:
    cfg = config.rel(config.path)
    if not state.present:
        return [
            Finding(
                "error",
                f"pinned tag {state.tag!r} does not exist in this repository",
                cfg,
                config.lines.get("pin.tag"),
                f"fetch it: {command_line('git', 'fetch', config.upstream_remote, 'tag', state.tag)}",
            )
        ]
    if state.moved:
        return [
            Finding(
                "error",
                f"pinned tag {state.tag!r} now peels to {state.actual}, not the recorded "
                f"pin.commit {state.recorded}",
                cfg,
                config.lines.get("pin.commit"),
                "a moved or re-created upstream tag is a supply-chain risk: find out why "
                "before re-pinning",
            )
        ]
    return []


def _ancestry_finding(config: Config, git: Git, head: str | None) -> tuple[Finding | None, bool]:
    """For a merged fork: HEAD must contain the pinned commit. (finding, contains)."""
    cfg = config.rel(config.path)
    line = config.lines.get("pin.commit")
    if head is None:
        return Finding("error", "HEAD has no commit yet", cfg, line), False
    if git.object_types([config.pin_commit]).get(config.pin_commit) != "commit":
        message = f"pin.commit {config.pin_commit} is not a commit in this repository"
        hint = f"fetch upstream: {command_line('git', 'fetch', config.upstream_remote, '--tags')}"
        return Finding("error", message, cfg, line, hint), False
    if git.is_ancestor(config.pin_commit, head):
        return None, True
    return (
        Finding(
            "error",
            f"HEAD ({head[:10]}) does not contain the pinned commit {config.pin_commit[:10]} "
            f"({config.pin_tag}); a merged-layout fork must merge the tag it pins",
            cfg,
            line,
            f"merge it: {command_line('git', 'merge', config.pin_tag)}",
        ),
        False,
    )


def _import_findings(config: Config, git: Git) -> list[Finding]:
    """``pin.import_commit`` must be a commit whose only parent is the pinned commit."""
    try:
        require_tree(config, git)
    except FatalError as exc:
        line = config.lines.get("pin.import_commit")
        return [Finding("error", exc.message, config.rel(config.path), line, exc.hint)]
    return []


def verify_pin_sites(config: Config, git: Git) -> PinsResult:
    """``pin check``: every site names pin.tag once, the tag is locked, HEAD carries it."""
    state = pin_state(config, git)
    sites = read_sites(config)
    findings: list[Finding] = []
    for reading in sites[1:]:
        findings += _site_findings(config, reading)
    drift = _drift_finding(config, sites)
    if drift is not None:
        findings.append(drift)
    findings += _tag_findings(config, git, state)
    if state.ok and config.pin_import is not None:
        findings += _import_findings(config, git)
    head = git.head()
    contains: bool | None = None
    if config.layout == "merged":
        finding, contains = _ancestry_finding(config, git, head)
        if finding is not None:
            findings.append(finding)
    return PinsResult(state, config.layout, sites, tuple(findings), head, contains, checked=True)


# -- bumping -------------------------------------------------------------------------


def validate_tag_name(git: Git, tag: str) -> None:
    """Refuse (exit 2) a tag name git would refuse, or one unsafe to paste into files."""
    problem: str | None = None
    if not tag:
        problem = "is empty"
    elif tag.startswith("-"):
        problem = "starts with '-'"
    elif any(ch.isspace() for ch in tag):
        problem = "contains whitespace"
    elif any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in tag):
        problem = "contains a control character"
    elif bad := sorted(set(tag) & _UNSAFE_TAG_CHARS):
        problem = "contains " + " ".join(repr(ch) for ch in bad)
    elif not tag.isascii():
        problem = "contains non-ASCII characters"
    elif not git.check_ref_format(f"refs/tags/{tag}"):
        problem = "is not a valid git tag name (git check-ref-format)"
    if problem is not None:
        raise FatalError(
            f"tag name {tag!r} {problem}",
            "a pinned tag is written into Dockerfiles, workflows and scripts: use a plain "
            "release tag such as v1.2.0",
        )


@dataclass(frozen=True)
class Edit:
    file: str
    line: int
    what: str  # "pin.tag", "pin.commit" or "pin site"
    old: str
    new: str
    start: int
    end: int

    def to_json(self) -> dict[str, object]:
        return {
            "file": self.file,
            "line": self.line,
            "what": self.what,
            "old": self.old,
            "new": self.new,
        }


@dataclass(frozen=True)
class BumpResult:
    tag: str
    commit: str
    previous_tag: str
    previous_commit: str
    dry_run: bool
    edits: tuple[Edit, ...]
    diff: str
    written: tuple[str, ...]
    fetched: bool = False
    notices: tuple[str, ...] = ()  # from reaching upstream, for stderr
    head_contains_tag: bool | None = None
    contents: dict[Path, bytes] = field(default_factory=dict, repr=False, compare=False)
    lost_fixes: tuple[LostFix, ...] = ()  # retired fixes the new pin does not contain

    @property
    def changed(self) -> bool:
        return bool(self.contents)

    def to_json(self) -> dict[str, object]:
        return {
            "tag": self.tag,
            "commit": self.commit,
            "previous_tag": self.previous_tag,
            "previous_commit": self.previous_commit,
            "dry_run": self.dry_run,
            "fetched": self.fetched,
            "changed": self.changed,
            "written": list(self.written),
            "head_contains_tag": self.head_contains_tag,
            "edits": [e.to_json() for e in self.edits],
            "diff": self.diff,
            "lost_fixes": [lost.to_json() for lost in self.lost_fixes],
        }


def _scalar_span(node: yaml.Node, text: str, where: str, path: str) -> tuple[int, int]:
    """The span of a scalar's value in ``text``, inside its quotes if it has them."""
    line = int(node.start_mark.line) + 1
    if not isinstance(node, yaml.ScalarNode) or node.style not in (None, "'", '"'):
        raise FatalError(
            f"{path}:{line}: {where} must be a plain or quoted scalar for a pin bump to rewrite",
            f"write it on one line, e.g. '{where.split('.')[-1]}: value'",
        )
    start, end = int(node.start_mark.index), int(node.end_mark.index)
    if node.style is not None:
        start, end = start + 1, end - 1
    if text[start:end] != node.value:
        raise FatalError(
            f"{path}:{line}: {where} is written with escapes or line breaks; a pin bump "
            "edits it in place and cannot",
            f"write {where} plainly on one line",
        )
    return start, end


def _config_spans(text: str, path: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """Where ``pin.tag`` and ``pin.commit``'s values sit in forktool.yaml's raw text.

    The text already passed :func:`parse_config`, so the shape is known to be sound.
    """
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    assert root is not None
    pin = next(v for k, v in root.value if k.value == "pin")
    values = {k.value: v for k, v in pin.value}
    return (
        _scalar_span(values["tag"], text, "pin.tag", path),
        _scalar_span(values["commit"], text, "pin.commit", path),
    )


def _apply_edits(text: str, edits: Sequence[Edit], file: str) -> str:
    """``text`` with each edit's span replaced; a site that names forktool.yaml's own
    pin.tag span collapses into the config edit, any other overlap is refused."""
    unique = {(e.start, e.end, e.new): e for e in edits}
    ordered = sorted(unique.values(), key=lambda e: e.start)
    for before, after in itertools.pairwise(ordered):
        if after.start < before.end:
            raise FatalError(
                f"{file}: pin sites overlap at line {after.line}; a bump cannot rewrite both",
                "make the pin_sites patterns match different text",
            )
    out: list[str] = []
    cursor = 0
    for edit in ordered:
        out += [text[cursor : edit.start], edit.new]
        cursor = edit.end
    out.append(text[cursor:])
    return "".join(out)


def pin_edit_diff(rel: str, old: str, new: str) -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"a/{rel}",
        tofile=f"b/{rel}",
    )
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


class _Names:
    """One name per file, however pin_sites spells its path (``./x``, ``d/../x``)."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.seen: dict[Path, str] = {}

    def __call__(self, rel: str) -> str:
        return self.seen.setdefault(self.config.file(rel).resolve(), rel)


def _bump_edits(
    config: Config,
    sites: Sequence[SiteReading],
    tag: str,
    commit: str,
    config_text: str,
    name: _Names,
) -> tuple[dict[str, list[Edit]], dict[str, str]]:
    """Every edit, grouped by file, and each file's current text. Refuses on any bad site."""
    cfg = name(config.rel(config.path))
    problems: list[Finding] = []
    for reading in sites[1:]:
        problems += _site_findings(config, reading, compare=False)
    if problems:
        raise InputError(
            problems, "nothing was written; run 'forktool pin check' to see every problem"
        )
    (tag_start, tag_end), (commit_start, commit_end) = _config_spans(config_text, cfg)
    edits: dict[str, list[Edit]] = {
        cfg: [
            Edit(cfg, config.lines["pin.tag"], "pin.tag", config.pin_tag, tag, tag_start, tag_end),
            Edit(
                cfg,
                config.lines["pin.commit"],
                "pin.commit",
                config.pin_commit,
                commit,
                commit_start,
                commit_end,
            ),
        ]
    }
    texts = {cfg: config_text}
    for reading in sites[1:]:
        match = reading.matches[0]
        assert reading.text is not None
        file = name(reading.file)
        texts[file] = reading.text
        edits.setdefault(file, []).append(
            Edit(file, match.line, "pin site", match.value or "", tag, match.start, match.end)
        )
    return edits, texts


def _verify_rewrite(
    config: Config,
    new_texts: dict[str, str],
    tag: str,
    commit: str,
    name: _Names,
    tree: str | None = None,
) -> None:
    """Re-read the rewritten files: the config must differ only in the pin, every site
    must now name exactly ``tag``. Anything else means a pattern or the YAML cannot
    hold this tag, and nothing is written."""
    cfg = name(config.rel(config.path))
    try:
        new_config: Config | None = parse_config(new_texts[cfg], config.path)
    except FatalError:
        new_config = None
    if new_config != replace(config, pin_tag=tag, pin_commit=commit, pin_import=tree):
        raise FatalError(
            f"{cfg}: rewriting pin.tag to {tag!r} would change how the file reads as YAML; "
            "nothing was written",
            f"quote the value of pin.tag in {cfg}, e.g. tag: '{tag}'",
        )
    jobs = [(site, new_texts[name(site.file)]) for site in config.pin_sites]
    for (site, text), spans in zip(jobs, find_spans(jobs), strict=True):
        values = [text[s:e] for s, e in spans if s >= 0]
        if values != [tag] or len(spans) != 1:
            shown = ", ".join(repr(v) for v in values) or "nothing"
            raise FatalError(
                f"{site.file}: after the bump the pattern declared at {cfg}:{site.line} would "
                f"read {shown}, not {tag!r}; nothing was written",
                "widen the pattern's (?P<tag>...) group so it matches the whole tag",
            )


def _lost_fixes(config: Config, git: Git, commit: str) -> list[LostFix]:
    """Retired fixes ``commit`` lacks; an unreadable record is the check's to report."""
    from forktool.engine.retire import lost_fixes

    try:
        return lost_fixes(config, git, commit)
    except FatalError:
        return []


def _new_import(
    config: Config,
    git: Git,
    tag: str,
    commit: str,
    tree: str | None,
    warn: Callable[[str], None] | None,
) -> str | None:
    """The ``pin.import_commit`` after a bump to ``tag``: ``tree`` (checked: a commit on
    ``tag``), else the current one when the tag stays, else none."""
    if tree is not None:
        if git.parents(tree) != [commit]:
            raise FatalError(
                f"{tree[:12]} is not a release tarball import on {tag}",
                f"import it: forktool pin import-tarball FILE... --tag {tag}",
            )
        return tree
    if tag == config.pin_tag or config.pin_import is None:
        return config.pin_import
    if warn is not None:
        warn(
            f"pin.import_commit is dropped: it imports the release tarball of "
            f"{config.pin_tag}, not {tag}; import {tag}'s with 'forktool pin import-tarball "
            f"FILE...' (or sync with --tarball FILE)"
        )
    return None


def plan_bump(
    config: Config,
    git: Git,
    tag: str,
    *,
    fetch: bool,
    dry_run: bool,
    warn: Callable[[str], None] | None = None,
    tree: str | None = None,
) -> BumpResult:
    """Compute (and unless ``dry_run``, write) a bump of every pin to ``tag``.

    ``tree`` is ``tag``'s release tarball import (``pin.import_commit``); a fork that
    pins a tarball and moves to another tag without one drops its import commit (told
    to ``warn``): the old tarball is not on the new tag.

    Reads forktool.yaml afresh (the caller holds the fork lock), refuses with exit 2
    when TAG is unknown or any site does not match exactly once; writes all files or
    none. A retired fix that ``tag`` does not contain (a pin moved back below it) is
    told to ``warn`` before anything is written; ``check`` then fails until the patch
    is restored or the pin moves on.
    """
    validate_tag_name(git, tag)
    config_text = config.path.read_bytes().decode("utf-8")
    config = parse_config(config_text, config.path)
    sites = read_sites(config)
    fetched = False
    notices: tuple[str, ...] = ()
    if fetch:
        reached = fetch_upstream(config, git, tags=[tag], offline="drop --fetch")
        fetched, notices = reached.reached, reached.notices
    commit = git.tag_commit(tag)
    if commit is None:
        raise FatalError(
            f"unknown tag '{tag}'",
            f"fetch it: {command_line('forktool', 'pin', 'bump', tag, '--fetch')} (or "
            f"{command_line('git', 'fetch', config.upstream_remote, 'tag', tag)})",
        )
    name = _Names(config)
    edits, texts = _bump_edits(config, sites, tag, commit, config_text, name)
    new_texts = {
        file: _apply_edits(texts[file], file_edits, file) for file, file_edits in edits.items()
    }
    new_import = _new_import(config, git, tag, commit, tree, warn)
    if new_import != config.pin_import:
        cfg = name(config.rel(config.path))
        new_texts[cfg] = with_import_commit(new_texts[cfg], new_import)
        line = config.lines.get("pin.import_commit", config.lines["pin.commit"] + 1)
        old = config.pin_import or ""
        edits[cfg].append(Edit(cfg, line, "pin.import_commit", old, new_import or "", 0, 0))
    _verify_rewrite(config, new_texts, tag, commit, name, new_import)
    changed = {file: text for file, text in new_texts.items() if text != texts[file]}
    diff = "".join(pin_edit_diff(file, texts[file], changed[file]) for file in changed)
    contents = {config.file(file): text.encode("utf-8") for file, text in changed.items()}
    real_edits = tuple(e for file_edits in edits.values() for e in file_edits if e.old != e.new)
    head = git.head()
    contains = git.is_ancestor(commit, head) if head is not None else None
    lost = _lost_fixes(config, git, commit)
    if warn is not None:
        for fix in lost:
            warn(
                f"{fix.describe(tag)}; restore it "
                f"({command_line('forktool', 'retire', '--undo', fix.patch)}) "
                "or pin a tag that contains it"
            )
    result = BumpResult(
        tag=tag,
        commit=commit,
        previous_tag=config.pin_tag,
        previous_commit=config.pin_commit,
        dry_run=dry_run,
        edits=real_edits,
        diff=diff,
        written=() if dry_run else tuple(changed),
        fetched=fetched,
        notices=notices,
        head_contains_tag=contains if config.layout == "merged" else None,
        contents=contents,
        lost_fixes=tuple(lost),
    )
    if not dry_run and contents:
        try:
            write_files(contents)
        except OSError as exc:
            refused = write_refusal(exc, "the bump")
            raise FatalError(
                f"could not write the bump ({exc.strerror or exc}: {exc.filename}); "
                "every file was restored, nothing changed",
                refused.hint if refused else None,
            ) from exc
    return result
