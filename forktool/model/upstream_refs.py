"""Upstream references written in a patch's header, in its ecosystem's vocabulary.

Forks that exist before forktool keep what a patch is in upstream in its header:

- Debian DEP-3: ``Origin: upstream, <url>/commit/<sha>``, ``Origin: <url>/commit/<sha>``,
  ``Origin: upstream, commit:<sha>`` (abbreviated or not),
  ``Applied-Upstream: <version>, <url>/commit/<sha>``, ``Bug: <url>``,
  ``Forwarded: <url> | not-needed`` (``pending``, not ``none``, when the Origin says the
  change is upstream's: ``upstream``, ``backport`` or a revision URL);
- Yocto/OpenEmbedded: ``Upstream-Status: Backport [<url>/commit/<sha> | <sha>]``,
  ``Submitted [<url>]``, ``Pending``, ``Accepted``, ``Inappropriate [reason]``, ``Denied``,
  ``Inactive-Upstream``;
- openSUSE kernel-source: ``Git-commit: <sha>``, ``Patch-mainline: <version> | Submitted,
  <url> | Never, <reason> | No, <reason> | Queued ...``;
- Linux stable and Android kernels: a ``commit <sha> upstream.`` or ``[ Upstream commit
  <sha> ]`` line, ``FROMLIST:`` subjects (waiting upstream), and git's cherry-picked line;
- git: ``(cherry picked from commit <sha>)``; forktool: ``Upstream-Merge:``, ``Upstream-PR:``.

:func:`read_refs` turns those lines into what an ``upstream.map`` entry would say:
commits (as written: 40 hex digits, or an abbreviation of at least 7 that the caller
must resolve before using it), ``none`` (fork-only for good) or ``pending`` (waiting for
upstream), with the PR or bug URL and the header line it came from. Pure: no git, no
files; it never invents a commit.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

RefKind = Literal["commits", "none", "pending"]

_SHA = r"[0-9a-fA-F]{7,40}"
_FULL = re.compile(r"^[0-9a-fA-F]{40}$")
_FIELD = re.compile(r"^([A-Za-z][A-Za-z0-9-]*)[ \t]*:[ \t]*(.*?)[ \t]*$")
_URL = re.compile(r"https?://[^\s\]\)>,]+")
# A commit in a URL: GitHub's and GitLab's /commit/<id>, SourceForge's /ci/<id>, cgit's
# /commit/?id=<id> and gitweb's ?a=commit;h=<id>. An "id=" elsewhere is no commit
# (Bugzilla's attachment.cgi?id=1073339 is all digits, and so a hex abbreviation).
_URL_SHA = re.compile(
    r"(?:/commits?/|/ci/|/commit/?\?(?:[^\s#]*?[&;])?id=|[?&;]a=commit(?:diff)?[&;](?:[^\s#]*?[&;])?h=)"
    r"(" + _SHA + r")(?![0-9a-fA-F])"
)
# git describe's name of a commit, as file's DEP-3 Origin lines give it: FILE5_44-5-g813b3304.
_DESCRIBED = re.compile(r"(?:^|[\s/,])[A-Za-z0-9._-]+-[0-9]+-g(" + _SHA + r")(?![0-9a-zA-Z])")
_BARE_SHA = re.compile(r"(?:^|[\s\[,])(?:commit[: ]?\s*)?([0-9a-fA-F]{40})(?![0-9a-fA-F])")
# DEP-3's own form, ``commit:<id>``, where the id is often abbreviated: the prefix says it
# is a commit, so an abbreviation is taken (to be resolved by the caller, never guessed).
_DEP3_COMMIT = re.compile(r"(?:^|[\s\[,])commit:\s*(" + _SHA + r")(?![0-9a-zA-Z])")
_PICKED = re.compile(r"^\(cherry picked from commit (" + _SHA + r")(?:[ \t][^)]*)?\)$")
_STABLE = re.compile(
    r"^(?:commit (" + _SHA + r") upstream\.?|\[ ?Upstream commit (" + _SHA + r") ?\])$",
    re.IGNORECASE,
)
_BRACKET = re.compile(r"\[(.*)\]")
# A DEP-3 Origin naming upstream: its category (``upstream``, ``backport``) or a revision
# URL (Mercurial's /rev/, a changeset, a commit). "Forwarded: not-needed" beside it means
# "upstream has it already", not "this fork's own for good".
_UPSTREAM_ORIGIN = re.compile(
    r"^(?:(?:upstream|backport)\b|\S*https?://\S*/(?:rev|raw-rev|changeset|commits?|ci)/)",
    re.IGNORECASE,
)
_FROMLIST = re.compile(r"^(?:\[[^\]]*\]\s*)?FROMLIST:", re.IGNORECASE)

# Where a PR / bug URL may come from, best first.
_PR_KEYS = ("upstream-pr", "forwarded", "upstream-status", "patch-mainline", "origin", "bug")


@dataclass(frozen=True)
class UpstreamRef:
    """What a patch's header says about upstream, as an ``upstream.map`` entry would."""

    kind: RefKind
    commits: tuple[str, ...]  # lowercase, as written (40 hex, or an abbreviation to resolve)
    pr: str | None  # the PR or bug URL, when the header names one
    source: str  # the header line the entry comes from, as written

    @property
    def abbreviated(self) -> tuple[str, ...]:
        return tuple(c for c in self.commits if not _FULL.match(c))


@dataclass
class _Found:
    commits: list[tuple[str, str]]  # (commit, line)
    merge: tuple[tuple[str, ...], str] | None  # forktool's Upstream-Merge, (commits, line)
    states: list[tuple[RefKind, str]]  # none / pending markers, in order
    prs: dict[str, str]  # key -> URL (first of each key)
    from_upstream: bool = False  # DEP-3 Origin says upstream's: upstream, backport, a revision


def _clean(line: str) -> str:
    text = line[:-1] if line.endswith("\r") else line
    text = text.strip()
    if text.startswith("#"):
        text = text[1:].strip()
    return text


def _first_url(value: str) -> str | None:
    match = _URL.search(value)
    return match.group(0).rstrip(".;:") if match else None


def _commits_in(value: str) -> list[str]:
    """Commits named in a field value: in a commit URL, as a bare 40-hex id, as DEP-3's
    ``commit:<id>`` (7 to 40 hex digits), or in git describe's ``<tag>-<n>-g<id>``."""
    found = [m.group(1) for m in _URL_SHA.finditer(value)]
    if not found:
        found = [m.group(1) for m in _BARE_SHA.finditer(value)]
    if not found:
        found = [m.group(1) for m in _DEP3_COMMIT.finditer(value)]
    if not found:
        found = [m.group(1) for m in _DESCRIBED.finditer(value)]
    return [c.lower() for c in dict.fromkeys(found)]


def _merge_value(value: str) -> tuple[str, ...] | None:
    if value.lower() == "none":
        return ()
    parts = [p.strip() for p in value.split(",")]
    if parts and all(_FULL.match(p) for p in parts):
        return tuple(dict.fromkeys(p.lower() for p in parts))
    return None


def _status(found: _Found, key: str, value: str, line: str) -> None:
    """Yocto's Upstream-Status and SUSE's Patch-mainline."""
    word = value.split(None, 1)[0].rstrip(",").lower() if value else ""
    if key == "upstream-status":
        if word in ("backport", "accepted"):
            inner = _BRACKET.search(value)
            commits = _commits_in(inner.group(1)) if inner else []
            if not commits and inner:
                commits = [
                    t.lower() for t in inner.group(1).split() if re.fullmatch(_SHA, t.strip(","))
                ]
            found.commits += [(c, line) for c in commits]
            if not commits:
                found.states.append(("pending", line))
        elif word in ("submitted", "pending"):
            found.states.append(("pending", line))
        elif word in ("inappropriate", "denied", "inactive-upstream"):
            found.states.append(("none", line))
        return
    # Patch-mainline
    if word in ("never", "no"):
        found.states.append(("none", line))
    elif word in ("submitted", "queued"):
        found.states.append(("pending", line))


def _field(found: _Found, key: str, value: str, line: str) -> None:
    url = _first_url(value)
    if url and key in _PR_KEYS and not _URL_SHA.search(url):
        found.prs.setdefault(key, url)
    if key == "upstream-merge":
        merge = _merge_value(value)
        if merge is not None and found.merge is None:
            found.merge = (merge, line)
    elif key == "upstream-pr":
        found.states.append(("pending", line))
    elif key == "git-commit" and re.fullmatch(_SHA, value):
        found.commits.append((value.lower(), line))
    elif key in ("origin", "applied-upstream", "git-commit"):
        found.commits += [(c, line) for c in _commits_in(value)]
        if key == "origin" and _UPSTREAM_ORIGIN.match(value):
            found.from_upstream = True
    elif key == "forwarded":
        lowered = value.lower()
        if lowered == "not-needed":
            found.states.append(("none", line))
        elif url or lowered == "yes":
            found.states.append(("pending", line))
    elif key in ("upstream-status", "patch-mainline"):
        _status(found, key, value, line)


def read_refs(lines: Sequence[str], subject: str | None = None) -> UpstreamRef | None:
    """The upstream.map entry a patch header implies, or None when it says nothing."""
    found = _Found([], None, [], {})
    if subject and _FROMLIST.match(subject.strip()):
        found.states.append(("pending", subject.strip()))
    for raw in lines:
        line = _clean(raw)
        if not line:
            continue
        if picked := _PICKED.match(line):
            # A pick of a pick (a backport picked again with -x) carries a line for each:
            # the same change under other ids, not commits all needed. The last line
            # names the commit this one was picked from; an earlier one goes.
            found.commits = [(c, said) for c, said in found.commits if not _PICKED.match(said)]
            found.commits.append((picked.group(1).lower(), line))
            continue
        if stable := _STABLE.match(line):
            found.commits.append(((stable.group(1) or stable.group(2)).lower(), line))
            continue
        if field := _FIELD.match(line):
            _field(found, field.group(1).lower(), field.group(2), line)
    pr = next((found.prs[k] for k in _PR_KEYS if k in found.prs), None)
    if found.merge is not None:
        commits, line = found.merge
        return UpstreamRef("commits" if commits else "none", commits, pr, line)
    if found.commits:
        # A header's own statement (DEP-3 Origin, Git-commit, "commit <sha> upstream")
        # names the commit the patch is; a cherry-pick line beside it is where that commit
        # came from, the same change under another id (python3.11's CVE backports: Origin
        # the 3.11 commit, the line main's). Both as the map's commits need a release
        # holding both, and a 3.11 release never holds main's.
        stated = [(c, said) for c, said in found.commits if not _PICKED.match(said)]
        named = stated or found.commits
        unique = tuple(dict.fromkeys(c for c, _ in named))
        return UpstreamRef("commits", unique, pr, named[0][1])
    if found.states:
        kind, line = found.states[0]
        if kind == "none" and found.from_upstream:
            kind = "pending"  # upstream's change, its commit not named: never "fork-only"
        return UpstreamRef(kind, (), pr, line)
    return None


def map_value(ref: UpstreamRef, note: str = "") -> str:
    """The second column onward of the map line ``ref`` implies (commits resolved)."""
    first = ",".join(ref.commits) if ref.commits else ref.kind
    extra = ref.pr or note
    return f"{first} {extra}".strip() if extra else first
