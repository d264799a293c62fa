"""``forktool init``: scaffold a fork's files, pinned to a tag that resolves."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from forktool.config import (
    CONFIG_NAME,
    Config,
    load_config,
    remote_name_problem,
    url_problem,
)
from forktool.engine.patches.canonical import loose_patch
from forktool.engine.patches.map_suggest import Suggestion, UpstreamLine, build_suggestions
from forktool.engine.retirement.releases import pattern_for_tag
from forktool.engine.revisions import Upstream, resolve
from forktool.engine.upstream.fetch import upstream_default_branch
from forktool.errors import FatalError, InputError, command_line
from forktool.fork import NOTES_DIR, NOTES_README, Patch
from forktool.fsutil import write_files
from forktool.git import Git
from forktool.inputs import read_input, read_text
from forktool.model.record import broken_markers, empty_section, section_state, with_section
from forktool.model.series import parse_series
from forktool.model.versions import scheme_for_tag

FORK_MD = """\
# Fork notes

This repository is a soft fork of {remote_hint}, pinned to upstream release
`{tag}` and carrying a small series of patches on top. It is kept with
[forktool](https://pypi.org/project/forktool/).

## Charter

- **Additive only.** Upstream files are changed by patches in `patches/`, never
  edited in place; every other divergence from the pinned tag is declared in
  `alignment.ledger` with an exit criterion.
- **One patch per upstream fix.** Each patch maps to the upstream commit(s) in
  `upstream.map` whose presence in a release retires it (`pending <PR-url>` until
  upstream merges it; `none` for a fork-only patch).
- **Retire by ancestry.** A patch is dropped only when the pinned release tag
  contains its upstream commit (`forktool absorbed --tag TAG`), never because a
  probe passed without it.

## Release procedure

1. `forktool upstream poll` - is there a newer release, and what would a sync do?
2. `forktool sync TAG` - retire what the tag absorbed, refresh the rest, bump pins.
3. `forktool check` - the gate: exact apply, round trip, pins, alignment, record.

## Retirement record

Maintained by `forktool retire`; do not edit between the markers.

"""

SERIES = "# Patch series, applied in this order with -p1. One patch file name per line.\n"
UPSTREAM_MAP = (
    "# <patch-file> <40-hex upstream commit>[,<commit>...] [url or note]\n"
    "# 'pending [PR-url]' marks a patch waiting for upstream (never retired);\n"
    "# 'none' marks a fork-only patch that no upstream commit will ever retire.\n"
)
LEDGER = (
    "# Declared divergence from the pinned tag.\n"
    "# <add|del> <path-or-glob> <permanent|until:<condition>> <rationale...>\n"
    "# The fork's own files (forktool.yaml, series, patches, upstream.map, this ledger,\n"
    "# FORK.md) are declared by definition.\n"
)
NOTES_TEXT = "Per-patch context notes: `<patch-stem>.md`.\n"


# An adopted quilt series stays as its maintainers keep it, applied as dpkg-source applies it.
_MAINTAINERS_FORM = (
    "# The patches stay as their maintainers keep them (fmt and refresh keep every header\n"
    "# byte for byte), applied as dpkg-source applies them: fuzz never, offsets reported\n"
    "# and accepted. 'patch_form: canonical' and 'apply_rule: exact' tighten both.\n"
    "patch_form: maintainers\n"
    "apply_rule: dpkg\n"
)


def config_text(
    tag: str,
    commit: str,
    remote: str,
    url: str | None,
    layout: str,
    *,
    series: str = "series",
    patches: str = "patches",
    branch: str | None = None,
    maintainers: bool = False,
) -> str:
    upstream = f"upstream:\n  remote: {remote}\n" + (f"  url: {url}\n" if url else "")
    if branch is not None and branch != Config.upstream_branch:
        upstream += f"  branch: {branch}\n"  # the remote's HEAD, e.g. jq's master
    releases = pattern_for_tag(tag).replace("'", "''")  # YAML single-quoted
    scheme = scheme_for_tag(tag)
    version = (
        f"release_version:\n  prefix: '{scheme.prefix}'\n  separator: '{scheme.separator}'\n"
        if scheme is not None
        else ""
    )
    return (
        f"{upstream}"
        f"pin:\n  tag: {tag}\n  commit: {commit}\n"
        f"layout: {layout}\n"
        f"{_MAINTAINERS_FORM if maintainers else ''}"
        f"release_tags: '{releases}'\n"
        f"{version}"
        f"series: {series}\n"
        f"patches: {patches}\n"
        "upstream_map: upstream.map\n"
        "ledger: alignment.ledger\n"
        "record: FORK.md\n"
    )


@dataclass(frozen=True)
class InitResult:
    root: Path
    tag: str
    commit: str
    written: tuple[str, ...]  # files created
    appended: tuple[str, ...] = ()  # files that got the retirement record section
    kept: tuple[str, ...] = ()  # files that existed and were left alone
    quilt: str | None = None  # the adopted quilt directory
    suggestions: tuple[Suggestion, ...] = ()
    warnings: tuple[str, ...] = ()  # e.g. a pinned tag that names no version

    def to_json(self) -> dict[str, object]:
        return {
            "root": str(self.root),
            "tag": self.tag,
            "commit": self.commit,
            "written": list(self.written),
            "appended": list(self.appended),
            "kept": list(self.kept),
            "quilt": self.quilt,
            "suggestions": [s.to_json() for s in self.suggestions],
            "warnings": list(self.warnings),
        }


def _record_text(path: Path, shown: str, fresh: str) -> str | None:
    """FORK.md's new text: ``fresh`` when it does not exist, the section appended when it
    has none, None when it already has one. Broken markers are refused (exit 2)."""
    if not path.exists():
        return fresh
    text = read_text(path, shown, follow=False)
    state = section_state(text)
    if state == "broken":
        raise FatalError(
            f"{shown}: {broken_markers(text)}",
            "fix the markers by hand (one begin line, then one end line); nothing was written",
        )
    return with_section(text) if state == "missing" else None


def _existing_fork(root: Path, tag: str) -> InitResult:
    """init on a fork that has forktool.yaml: only the record section, when it is missing."""
    config = load_config(root / CONFIG_NAME)
    if config.pin_tag != tag:
        raise FatalError(
            f"{CONFIG_NAME} exists and pins {config.pin_tag}; init never changes it",
            f"run '{command_line('forktool', 'pin', 'bump', tag)}' to move the pin, or "
            f"'{command_line('forktool', 'init', '--pin', config.pin_tag)}' to complete this "
            "fork's files",
        )
    fresh = FORK_MD.format(tag=tag, remote_hint=config.upstream_url or "upstream") + empty_section()
    text = _record_text(config.record_path, config.record, fresh)
    appended: tuple[str, ...] = ()
    written: tuple[str, ...] = ()
    if text is not None:
        existed = config.record_path.exists()
        write_files({config.record_path: text.encode("utf-8")})
        if existed:
            appended = (config.record,)
        else:
            written = (config.record,)
    kept = tuple(
        name
        for name in (CONFIG_NAME, config.series, config.upstream_map, config.ledger, config.record)
        if (root / name).exists() and name not in (*appended, *written)
    )
    return InitResult(root, tag, config.pin_commit, written, appended, kept)


@dataclass(frozen=True)
class Quilt:
    """An existing quilt directory adopted in place: its series and patches."""

    rel: str  # relative to the fork's root
    series: str
    patches: tuple[Patch, ...]


def read_quilt(root: Path, directory: Path) -> Quilt:
    """The quilt directory's series, checked: every option but -p1 refused, files present."""
    where = directory if directory.is_absolute() else root / directory
    try:
        rel = where.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        raise FatalError(
            f"{directory} is outside this repository", "adopt a quilt directory inside it"
        ) from None
    if rel == "." or not re.fullmatch(r"[A-Za-z0-9._+/-]+", rel):
        raise FatalError(
            f"{directory}: adopt a subdirectory with a plain name (letters, digits, '._+-/')",
            "e.g. forktool init --pin TAG --from-quilt debian/patches",
        )
    series_rel = f"{rel}/series"
    if not (where / "series").is_file():
        raise FatalError(
            f"{series_rel}: no such file", "a quilt directory holds a 'series' file and its patches"
        )
    series = parse_series(read_input(where / "series", series_rel, follow=False), series_rel)
    problems = [f for f in series.findings if f.severity == "error"]
    if problems:
        raise InputError(problems)  # each with its own hint
    patches = []
    for entry in series.entries:
        path = where / entry.name
        if not path.is_file() and not path.is_symlink():
            raise FatalError(
                f"{series_rel}:{entry.line}: names '{entry.name}' but {rel}/{entry.name} "
                "does not exist",
                "restore the file, or remove the line from the series",
            )
        # As every fork file is read: a regular file inside the fork, never through a
        # symlink (git would commit the link, and the patch checked is not the one shipped).
        data = read_input(path, f"{rel}/{entry.name}", follow=False)
        patches.append(loose_patch(entry.name, path, data))
    return Quilt(rel, series_rel, tuple(patches))


def quilt_map(
    git: Git, quilt: Quilt, upstream: UpstreamLine | None = None
) -> tuple[str, tuple[Suggestion, ...]]:
    """upstream.map for the quilt's patches: what their headers say, else ``pending``."""
    suggestions, entries = build_suggestions(git, quilt.patches, lambda name: None, upstream)
    by_patch = {e.patch: e for e in entries}
    lines = [
        by_patch[p.name].render() if p.name in by_patch else f"{p.name} pending"
        for p in quilt.patches
    ]
    return UPSTREAM_MAP + "".join(line + "\n" for line in lines), suggestions


def scaffold(
    root: Path,
    git: Git,
    *,
    tag: str,
    remote: str,
    url: str | None,
    layout: str,
    quilt_dir: Path | None = None,
) -> InitResult:
    if (root / CONFIG_NAME).exists() and quilt_dir is None:
        return _existing_fork(root, tag)
    _check_remote(remote, url)
    quilt = read_quilt(root, quilt_dir) if quilt_dir is not None else None
    files = _new_files(root, quilt)
    commit = resolve(git, tag, upstream=Upstream(remote)).commit
    fresh = FORK_MD.format(tag=tag, remote_hint=url or f"the '{remote}' remote") + empty_section()
    record = _record_text(root / "FORK.md", "FORK.md", fresh)
    branch = upstream_default_branch(git, remote, url)
    suggestions: tuple[Suggestion, ...] = ()
    if quilt is not None:
        files[CONFIG_NAME] = config_text(
            tag,
            commit,
            remote,
            url,
            layout,
            series=quilt.series,
            patches=quilt.rel,
            branch=branch,
            maintainers=True,
        )
        files["upstream.map"], suggestions = _adopted_map(git, quilt, remote, branch, tag)
    else:
        files[CONFIG_NAME] = config_text(tag, commit, remote, url, layout, branch=branch)
    appended = _write_scaffold(root, files, record)
    kept = ("FORK.md",) if record is None else ()
    return InitResult(
        root,
        tag,
        commit,
        tuple(files),
        appended,
        kept,
        quilt.rel if quilt else None,
        suggestions,
        version_warnings(tag) + _ignored_warnings(git, list(files)) + _empty_warnings(quilt),
    )


def _empty_warnings(quilt: Quilt | None) -> tuple[str, ...]:
    """A warning for an adopted series that lists no patch (Debian's mpfr4: a series of
    one comment): verify, check, import and apply refuse a fork with nothing to apply."""
    if quilt is None or quilt.patches:
        return ()
    return (
        f"{quilt.series} lists no patch: verify, check, import and apply refuse "
        "a fork with nothing to apply until it does",
    )


def _ignored_warnings(git: Git, written: list[str]) -> tuple[str, ...]:
    """A warning for the files init wrote that git ignores (Debian's libpng has
    ``*.map`` in its .gitignore): a commit would leave them out, and a clone of the
    fork would have no such file."""
    ignored = git.ignored(written)
    if not ignored:
        return ()
    names = ", ".join(ignored)
    return (
        f"git ignores {names} (a .gitignore rule): a commit leaves it out and a clone has "
        f"none; add it with: git add -f {' '.join(ignored)}",
    )


def _check_remote(remote: str, url: str | None) -> None:
    """Refuse (exit 2) a remote name or URL git must not be handed."""
    if url is not None and (problem := url_problem(url)):
        raise FatalError(
            f"--upstream-url {url!r} {problem}; refusing it",
            "give the repository's URL (https://..., ssh://..., git@host:path) or a path",
        )
    if problem := remote_name_problem(remote):
        raise FatalError(f"--upstream-remote {remote!r} {problem}")


def _new_files(root: Path, quilt: Quilt | None) -> dict[str, str | None]:
    """The files init creates (forktool.yaml's text comes later), refused (exit 2)
    when any exists: init only ever creates files."""
    files: dict[str, str | None] = {
        CONFIG_NAME: None,
        "upstream.map": UPSTREAM_MAP,
        "alignment.ledger": LEDGER,
    }
    if quilt is None:
        files["series"] = SERIES
        files[f"patches/{NOTES_DIR}/{NOTES_README}"] = NOTES_TEXT
    existing = [name for name in files if (root / name).exists()]
    if existing:
        raise FatalError(
            f"refusing to overwrite existing {', '.join(existing)}",
            "forktool init only creates files; move them aside or edit them by hand",
        )
    return files


def _adopted_map(
    git: Git, quilt: Quilt, remote: str, branch: str | None, tag: str
) -> tuple[str, tuple[Suggestion, ...]]:
    """upstream.map for an adopted quilt series, its headers checked against upstream's
    development branch when the remote has one."""
    ref = f"refs/remotes/{remote}/{branch or Config.upstream_branch}"
    upstream = UpstreamLine(ref if git.find_commit(ref) else None, pattern_for_tag(tag))
    return quilt_map(git, quilt, upstream)


def _write_scaffold(
    root: Path, files: dict[str, str | None], record: str | None
) -> tuple[str, ...]:
    """Write ``files`` and FORK.md's ``record`` (None: it has its section) all together
    (a new FORK.md joins ``files``); the files that got the record section appended."""
    appended: tuple[str, ...] = ()
    if record is not None and (root / "FORK.md").exists():
        appended = ("FORK.md",)
    elif record is not None:
        files["FORK.md"] = record
    changes = {root / name: (text or "").encode() for name, text in files.items()}
    if appended:
        changes[root / "FORK.md"] = (record or "").encode()
    write_files(changes)
    return appended


def version_warnings(tag: str) -> tuple[str, ...]:
    """Why release ordering will not work from ``tag``, if it will not."""
    if scheme_for_tag(tag) is not None:
        return ()
    return (
        f"the pinned tag '{tag}' names no version forktool can read (like 1.2.3, "
        "curl-7_88_1, OpenSSL_1_1_1t or REL_15_2): 'upstream poll' and 'forecast' cannot "
        "tell which releases are newer than the pin (absorbed still judges any tag, and "
        "names first releases among the release tags); pin a release tag, or set "
        "release_tags and release_version in forktool.yaml",
    )
