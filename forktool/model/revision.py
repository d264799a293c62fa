"""Revisions as values: a commit id, and what the user named resolved to one.

A command resolves each revision the user names once (``forktool.engine.revisions``)
and passes the :class:`Revision` down; nothing below it looks the name up again.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, NamedTuple, NewType, TypeGuard

if TYPE_CHECKING:  # a value's type only: the version reader is imported where it reads
    from packaging.version import Version

CommitId = NewType("CommitId", str)
"""A full commit id: 40 lower-case hex digits, as git prints it."""

HEX40 = re.compile(r"^[0-9a-f]{40}$")


def is_hex40(text: str) -> TypeGuard[CommitId]:
    return bool(HEX40.match(text))


TARBALL = "+tarball"


def tarball_tree(tag: str) -> str:
    """How reports name the tree of ``tag``'s release tarball imported on it."""
    return f"{tag}{TARBALL}"


def tag_of(tree: str) -> str:
    """The tag a tree named by :func:`tarball_tree` (or a tag itself) is of: what a
    command that takes a tag is given."""
    return tree.removesuffix(TARBALL)


def short(oid: str | None) -> str:
    """A commit id as messages and tables show it: its first 12 hex digits ('-' for none)."""
    return oid[:12] if oid else "-"


class Revision(NamedTuple):
    """A name resolved to the commit it peels to: a tag, a branch or a commit id as the
    user wrote it, and the version it reads as when it is a release tag."""

    name: str
    commit: CommitId
    version: Version | None = None


class Release(Revision):
    """A release tag: a revision whose name reads as a version (made with one)."""

    __slots__ = ()

    def __new__(cls, name: str, commit: CommitId, version: Version) -> Release:
        return super().__new__(cls, name, commit, version)

    @property
    def version(self) -> Version:
        version = self[2]
        assert version is not None, "a release is made with its version"
        return version
