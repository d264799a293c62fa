"""A patch file's header: the ``From <sha>`` mail header of ``git format-patch`` or a
plain (DEP-3 style) header, its subject, author, message and trailers
(``Upstream-PR``, ``Upstream-Merge``, ``Exit-Criterion``), each trailer checked."""

from __future__ import annotations

import re
from collections.abc import Sequence

from forktool.model.patch_text import Cursor, bare, decode_rfc2047, rfc822_fields, trimmed
from forktool.model.patchfile import (
    TRAILER_KEYS,
    UPSTREAM_MERGE,
    PatchHeader,
    PatchProblem,
    Trailer,
    parse_upstream_merge,
)

_CANONICAL_KEY = {key.lower(): key for key in TRAILER_KEYS}


# [0-9] rather than \d: \d also matches non-ASCII digits, which no diff tool writes.
_MBOX_FROM = re.compile(r"^From ([0-9a-fA-F]{40}) ")


_PATCH_TAG = re.compile(r"^\[PATCH[^\]]*\]\s*", re.IGNORECASE)


# The line that starts each mail git format-patch writes (its fixed date included):
# what starts the second and later mails of a file that holds several.
_MAIL_START = re.compile(r"^From ([0-9a-fA-F]{40}) Mon Sep 17 00:00:00 2001$")


_TRAILER = re.compile(
    r"^(upstream-pr|upstream-merge|exit-criterion)[ \t]*:[ \t]*(.*?)[ \t]*$", re.IGNORECASE
)


_DEP3_SUBJECT = re.compile(r"^(?:# )?(?:Description|Subject):[ \t]*(.*?)[ \t]*$")


_DEP3_AUTHOR = re.compile(r"^(?:# )?(?:Author|From):[ \t]*(.*?)[ \t]*$")


class HeaderReader:
    """Reads a patch file's header from its lines, collecting the problems it finds
    (the parser of the whole file builds on it)."""

    def __init__(self, lines: Sequence[str], strip: int) -> None:
        self.lines = lines
        self.strip = strip
        self.cursor = Cursor(lines)
        self.problems: list[PatchProblem] = []
        self._kinds: str | None = None

    def malformed(self, message: str, line: int | None) -> None:
        self.problems.append(PatchProblem("malformed", message, line))

    def parse_header(self, lines: Sequence[str]) -> PatchHeader:
        match = _MBOX_FROM.match(bare(lines[0])) if lines else None
        if match is None:
            return self.plain_header(lines)
        fields, body_start = rfc822_fields(lines)
        body_end = next(
            (i for i in range(body_start, len(lines)) if bare(lines[i]) == "---"), len(lines)
        )
        subject = fields.get("subject")
        if subject is not None:
            subject = _PATCH_TAG.sub("", decode_rfc2047(subject))
        author = fields.get("from")
        return PatchHeader(
            style="mbox",
            from_sha=match.group(1).lower(),
            author=None if author is None else decode_rfc2047(author),
            date=fields.get("date"),
            subject=subject,
            message=trimmed(lines[body_start:body_end]),
            trailers=self.trailers(lines, body_start),
            lines=tuple(lines),
        )

    def plain_header(self, lines: Sequence[str]) -> PatchHeader:
        subject = author = None
        for line in lines:
            if subject is None and (m := _DEP3_SUBJECT.match(bare(line))):
                subject = m.group(1)
            if author is None and (m := _DEP3_AUTHOR.match(bare(line))):
                author = m.group(1)
        return PatchHeader(
            style="plain",
            from_sha=None,
            author=author,
            date=None,
            subject=subject,
            message=trimmed(lines),
            trailers=self.trailers(lines, 0),
            lines=tuple(lines),
        )

    def trailers(self, lines: Sequence[str], start: int) -> tuple[Trailer, ...]:
        found: list[Trailer] = []
        for index in range(start, len(lines)):
            text = bare(lines[index])
            if text.startswith("# "):
                text = text[2:]
            match = _TRAILER.match(text)
            if match is None:
                continue
            trailer = Trailer(_CANONICAL_KEY[match.group(1).lower()], match.group(2), index + 1)
            self.check_trailer(trailer, found)
            found.append(trailer)
        return tuple(found)

    def check_trailer(self, trailer: Trailer, earlier: list[Trailer]) -> None:
        if trailer.value == "":
            self.malformed(f"empty {trailer.key} trailer", trailer.line)
            return
        if trailer.key != UPSTREAM_MERGE:
            return
        first = next((t for t in earlier if t.key == UPSTREAM_MERGE), None)
        if first is not None:
            message = f"second Upstream-Merge trailer (first on line {first.line})"
            self.malformed(message, trailer.line)
        elif parse_upstream_merge(trailer.value) is None:
            self.malformed(
                f"Upstream-Merge must be 40-hex commits or 'none', not '{trailer.value}'",
                trailer.line,
            )


_MAIL_DATE = b" Mon Sep 17 00:00:00 2001"  # no line end: a CR LF file too


def mail_count(data: bytes) -> int:
    """How many git format-patch mails a patch file may hold, at most: one count of
    their first line's fixed date, no decoding (a fork load asks it of every patch)."""
    return data.count(_MAIL_DATE)


def mails_in(data: bytes) -> list[tuple[str, str | None]]:
    """:func:`mails` of a patch file's bytes; no decoding when no line can start a mail."""
    if not mail_count(data):
        return []
    return mails(data.decode("utf-8", "surrogateescape").split("\n"))


def mails(lines: Sequence[str]) -> list[tuple[str, str | None]]:
    """Each ``git format-patch`` mail in a patch file's lines, in order: (the commit id
    its ``From <sha>`` line names, its subject without ``[PATCH n/m]``). A file of
    several mails (gnutls28's and dovecot's Debian patches: a CVE fix as the upstream
    commits that made it) gives one pair per mail; a file of no mail gives none."""
    found: list[tuple[str, str | None]] = []
    for index, line in enumerate(lines):
        match = _MAIL_START.match(bare(line)) if line.startswith("From ") else None
        if match is None:
            continue
        subject = rfc822_fields(lines[index:])[0].get("subject")
        if subject is not None:
            subject = _PATCH_TAG.sub("", decode_rfc2047(subject))
        found.append((match.group(1).lower(), subject))
    return found
