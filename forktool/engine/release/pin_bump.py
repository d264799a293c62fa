"""``pin bump``: every pin site and the config rewritten to a new tag, only the pinned text."""

from __future__ import annotations

import difflib
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from forktool.config import Config, parse_config
from forktool.engine.release.tarball import with_import_commit
from forktool.engine.upstream.fetch import Fetched
from forktool.errors import FatalError, Finding, InputError
from forktool.fsutil import write_files, write_refusal
from forktool.git import Git
from forktool.model.revision import Revision

if TYPE_CHECKING:
    from forktool.engine.retirement.retire import LostFix
from forktool.engine.release.pin_sites import (
    SiteReading,
    _site_findings,
    find_spans,
    read_sites,
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
    if new_config != config._replace(pin_tag=tag, pin_commit=commit, pin_import=tree):
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
    from forktool.engine.retirement.retire import lost_fixes

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
    revision: Revision,
    *,
    dry_run: bool,
    fetched: Fetched | None = None,
    warn: Callable[[str], None] | None = None,
    tree: str | None = None,
) -> BumpResult:
    """Compute (and unless ``dry_run``, write) a bump of every pin to ``revision`` (a
    tag resolved at the command; ``fetched``: what reaching upstream for it did).

    ``tree`` is the tag's release tarball import (``pin.import_commit``); a fork that
    pins a tarball and moves to another tag without one drops its import commit (told
    to ``warn``): the old tarball is not on the new tag.

    Reads forktool.yaml afresh (the caller holds the fork lock), refuses with exit 2
    when any site does not match exactly once; writes all files or none. A retired fix
    that the tag does not contain (a pin moved back below it) is told to ``warn``
    before anything is written; ``check`` then fails until the patch is restored or
    the pin moves on.
    """
    config_text = config.path.read_bytes().decode("utf-8")
    config = parse_config(config_text, config.path)
    tag, commit = revision.name, revision.commit
    edits, texts, new_texts = _rewrite(config, git, config_text, revision, tree, warn)
    changed = {file: text for file, text in new_texts.items() if text != texts[file]}
    contents = {config.file(file): text.encode("utf-8") for file, text in changed.items()}
    head = git.head()
    lost = _lost_fixes(config, git, commit)
    _warn_lost(lost, tag, warn)
    result = BumpResult(
        tag=tag,
        commit=commit,
        previous_tag=config.pin_tag,
        previous_commit=config.pin_commit,
        dry_run=dry_run,
        edits=tuple(e for file_edits in edits.values() for e in file_edits if e.old != e.new),
        diff="".join(pin_edit_diff(file, texts[file], changed[file]) for file in changed),
        written=() if dry_run else tuple(changed),
        fetched=fetched.reached if fetched is not None else False,
        notices=fetched.notices if fetched is not None else (),
        head_contains_tag=(
            (git.is_ancestor(commit, head) if head is not None else None)
            if config.layout == "merged"
            else None
        ),
        contents=contents,
        lost_fixes=tuple(lost),
    )
    if not dry_run and contents:
        _write_bump(contents)
    return result


def _rewrite(
    config: Config,
    git: Git,
    config_text: str,
    revision: Revision,
    tree: str | None,
    warn: Callable[[str], None] | None,
) -> tuple[dict[str, list[Edit]], dict[str, str], dict[str, str]]:
    """Every edit by file, each file's text now and after the bump; refused (nothing
    written) when a site or the config cannot hold the new tag."""
    tag, commit = revision.name, revision.commit
    name = _Names(config)
    edits, texts = _bump_edits(config, read_sites(config), tag, commit, config_text, name)
    new_texts = {
        file: _apply_edits(texts[file], file_edits, file) for file, file_edits in edits.items()
    }
    new_import = _new_import(config, git, tag, commit, tree, warn)
    if new_import != config.pin_import:
        _edit_import(config, name, new_import, edits, new_texts)
    _verify_rewrite(config, new_texts, tag, commit, name, new_import)
    return edits, texts, new_texts


def _edit_import(
    config: Config,
    name: _Names,
    new_import: str | None,
    edits: dict[str, list[Edit]],
    new_texts: dict[str, str],
) -> None:
    """Set (or drop) ``pin.import_commit`` in the new config text, and say so."""
    cfg = name(config.rel(config.path))
    new_texts[cfg] = with_import_commit(new_texts[cfg], new_import)
    line = config.lines.get("pin.import_commit", config.lines["pin.commit"] + 1)
    old = config.pin_import or ""
    edits[cfg].append(Edit(cfg, line, "pin.import_commit", old, new_import or "", 0, 0))


def _warn_lost(lost: Sequence[LostFix], tag: str, warn: Callable[[str], None] | None) -> None:
    if warn is None:
        return
    for fix in lost:
        warn(fix.told(tag))


def _write_bump(contents: dict[Path, bytes]) -> None:
    try:
        write_files(contents)
    except OSError as exc:
        refused = write_refusal(exc, "the bump")
        raise FatalError(
            f"could not write the bump ({exc.strerror or exc}: {exc.filename}); "
            "every file was restored, nothing changed",
            refused.hint if refused else None,
        ) from exc
