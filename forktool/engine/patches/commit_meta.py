"""The commit a patch becomes: its author, date and message as its header declares them
(the one reading of a patch's metadata, for fmt, import, export and refresh)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from email.utils import parseaddr
from pathlib import Path

from forktool.config import PatchForm
from forktool.fork import Patch

PLACEHOLDER_NAME = "forktool"
PLACEHOLDER_EMAIL = "forktool@localhost"
PLACEHOLDER_DATE = "@0 +0000"


@dataclass(frozen=True)
class CommitMeta:
    """What a patch's commit carries: author, author date, message."""

    name: str
    email: str
    date: str
    message: str

    def env(self) -> dict[str, str]:
        # Committer = author: the same patch always makes the same commit id.
        return {
            "GIT_AUTHOR_NAME": self.name,
            "GIT_AUTHOR_EMAIL": self.email,
            "GIT_AUTHOR_DATE": self.date,
            "GIT_COMMITTER_NAME": self.name,
            "GIT_COMMITTER_EMAIL": self.email,
            "GIT_COMMITTER_DATE": self.date,
        }


_IDENT = re.compile(r"^(.*?)\s*<([^<>\n]*)>\s*$")


def _identity(text: str | None) -> tuple[str, str] | None:
    """(name, email) of ``Name <email>`` as git reads an identity: the email may be
    empty or no address at all (sqlite3's ``drh <>``, ``dan <Dan Kennedy>``: git commits
    and format-patches both), the name may not; a bare address stands for both."""
    if not text:
        return None
    if (ident := _IDENT.match(text.strip())) is not None:
        name, email = ident.group(1).strip().strip('"'), ident.group(2).strip()
    else:
        name, email = parseaddr(text)
        if "@" not in email:
            return None
    name = name or email.split("@", 1)[0]
    return (name, email) if name else None


def commit_meta(patch: Patch) -> CommitMeta | str:
    """The commit metadata a patch's header declares, or why it cannot be read (said of
    the patch, which the caller names)."""
    header = patch.parsed.header
    if header.style == "mbox":
        who = _identity(header.author)
        if who is None or not header.date:
            return (
                "the mail header needs a 'From: Name <email>' and a 'Date:' line to be regenerated"
            )
        body = "\n\n".join(part for part in (header.message, _extra_fields(header.lines)) if part)
        message = (header.subject or "") + "\n" + (f"\n{body}\n" if body else "")
        return CommitMeta(who[0], who[1], header.date, message)
    name, email = _identity(header.author) or (PLACEHOLDER_NAME, PLACEHOLDER_EMAIL)
    text = "\n".join(header.lines).strip()
    subject = header.subject or Path(patch.name).stem
    message = subject + "\n" + (f"\n{text}\n" if text else "")
    return CommitMeta(name, email, PLACEHOLDER_DATE, message)


# The fields git format-patch writes in a mail header itself; any other (DEP-3's Origin,
# Forwarded, Bug-Debian, written among them by a maintainer) is a fact the regenerated
# header would lose, so it goes to the end of the message.
_MAIL_FIELDS = frozenset(
    "from date subject mime-version content-type content-transfer-encoding message-id "
    "in-reply-to references to cc".split()
)


def _extra_fields(lines: Sequence[str]) -> str:
    """The mail header's fields that are not the mail's own, as ``Key: value`` lines."""
    kept = []
    for line in lines[1:]:
        text = line.rstrip("\r")
        if not text:
            break
        key, colon, value = text.partition(":")
        if colon and key and not key[0].isspace() and key.strip().lower() not in _MAIL_FIELDS:
            kept.append(f"{key.strip()}: {value.strip()}")
    return "\n".join(kept)


def canonical_meta(patch: Patch) -> CommitMeta | str:
    """:func:`commit_meta` for a regeneration in the canonical form, which is one commit
    per patch: a file of several format-patch mails (a commit each, as gnutls28's Debian
    patches are) is refused, since one commit would lose every later mail's commit id,
    author and message."""
    count = len(patch.mails())
    if count > 1:
        return (
            f"the file holds {count} format-patch mails, a commit each, and the canonical "
            f"form is one commit per patch: split it into {count} patches (their mails' "
            "facts kept), or keep the fork in patch_form: maintainers"
        )
    return commit_meta(patch)


def lenient_meta(patch: Patch) -> CommitMeta:
    """The patch's own metadata, or placeholders when its header lacks them: in the
    maintainers' form the commit never reaches the file (only its diff does)."""
    meta = commit_meta(patch)
    if isinstance(meta, CommitMeta):
        return meta
    subject = patch.parsed.header.subject or Path(patch.name).stem
    return CommitMeta(PLACEHOLDER_NAME, PLACEHOLDER_EMAIL, PLACEHOLDER_DATE, subject + "\n")


def meta_for_form(form: PatchForm) -> Callable[[Patch], CommitMeta | str]:
    """How a chain's commits get their metadata in ``form``."""
    return lenient_meta if form == "maintainers" else canonical_meta
