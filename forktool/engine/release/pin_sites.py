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
capped at :data:`MAX_SITE_BYTES`: pin sites are small configuration files."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from forktool.config import Config, PinSite
from forktool.engine.release.pin_state import PinState, pin_state, require_tree
from forktool.errors import FatalError, Finding, command_line
from forktool.git import Git
from forktool.regex_safety import MAX_MATCHES, RegexTimeout, run_limited

MAX_SITE_BYTES = 1 << 20


# Characters refused in a tag name even where git would accept them: a tag name
# is pasted into Dockerfiles, workflows and shell scripts.
_UNSAFE_TAG_CHARS = set(";&|$`'\"\\<>(){}[]*?!#~^:,=%@")


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
