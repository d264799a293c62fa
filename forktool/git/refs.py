"""Refs and tags: names resolved to commits (``find_*`` answer None, ``require_*`` refuse)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from forktool.errors import FatalError
from forktool.faults import faultpoint
from forktool.git.objects import Objects
from forktool.model.revision import CommitId

NOT_A_TAG_HINT = "name a tag (git tag --list); to judge another commit, tag it first"

# What makes a name a revision expression rather than a ref (git check-ref-format
# refuses these in ref names): v1.3.0~2, v1^{tree}, v1:path, v1@{1}, a..b, globs.
_REVISION_SYNTAX = re.compile(r"[~^:?*\[\\]|@\{|\.\.")


def is_revision_expression(name: str) -> bool:
    """``v1.3.0~2`` and the like (a name with spaces or control characters is no
    expression, and no tag either: it stays an unknown tag)."""
    if any(ch.isspace() or not ch.isprintable() for ch in name):
        return False
    return bool(_REVISION_SYNTAX.search(name))


def object_spec(rev: str, kind: str = "object") -> str | None:
    """What :meth:`Refs.find_object` asks git to resolve for ``rev`` peeled to ``kind``;
    None for a ``rev`` it refuses to ask about (an option, a NUL)."""
    if rev.startswith("-") or "\0" in rev:
        return None
    return f"{rev}^{{{kind}}}"


def tag_ref(tag: str) -> str | None:
    """The ref a tag name is looked up as; None for a revision expression (``v1~2``),
    which names no tag."""
    return None if is_revision_expression(tag) else f"refs/tags/{tag}"


def commit_spec(rev: str | None, tag: str) -> str | None:
    """What resolving a verify base asks git first: ``rev``'s commit, or (``rev`` None)
    the commit ``tag`` peels to (:meth:`Refs.find_tag_commit`)."""
    ref = tag_ref(tag) if rev is None else rev
    return None if ref is None else object_spec(ref, "commit")


class Refs(Objects):
    def head(self) -> CommitId | None:
        return self.find_commit("HEAD")

    def remotes(self) -> list[str]:
        return self.out(["remote"], purpose="list remotes").split()

    def remote_urls(self, remote: str) -> list[str]:
        """Every URL git would fetch ``remote`` from (after ``insteadOf`` rewriting)."""
        res = self.run(
            ["remote", "get-url", "--all", "--end-of-options", remote],
            purpose=f"read the URL of remote {remote}",
            check=False,
        )
        return res.out.splitlines() if res.ok else []

    def remote_url(self, remote: str) -> str | None:
        """The URL ``remote`` fetches from (``insteadOf`` rewrites applied), or None."""
        if remote.startswith("-") or remote not in self.remotes():
            return None
        urls = self.remote_urls(remote)
        return urls[0] if urls else None

    def symbolic_target(self, ref: str) -> str | None:
        """The ref that the symbolic ref ``ref`` points to (``refs/remotes/upstream/HEAD``
        -> ``refs/remotes/upstream/master``); None when ``ref`` is not a symbolic ref."""
        res = self.run(
            ["symbolic-ref", "--quiet", "--end-of-options", ref],
            purpose=f"read where {ref} points",
            check=False,
        )
        return (res.out.strip() or None) if res.ok else None

    def find_object(self, rev: str, kind: str = "object") -> str | None:
        """The object ``rev`` names, peeled to ``kind`` (``""``: through every tag), or
        None if there is none."""
        spec = object_spec(rev, kind)
        if spec is None:
            return None
        if spec in self._resolved:
            return self._resolved.pop(spec)
        res = self.run(
            ["rev-parse", "--verify", "--quiet", "--end-of-options", spec],
            purpose=f"resolve {rev}",
            check=False,
        )
        return res.out.strip() if res.ok else None

    def find_commit(self, rev: str) -> CommitId | None:
        """The commit ``rev`` names (peeled through tags), or None if there is none."""
        oid = self.find_object(rev, "commit")
        return CommitId(oid) if oid is not None else None

    def require_commit(self, rev: str, *, what: str = "revision") -> CommitId:
        oid = self.find_commit(rev)
        if oid is None:
            self._refuse_non_commit(rev, what)
            self.require_objects()
            raise FatalError(
                f"unknown {what} '{rev}'",
                "fetch it first (git fetch <remote> --tags), or check the spelling",
            )
        return oid

    def _refuse_non_commit(self, rev: str, what: str) -> None:
        """Refuse ``rev`` when it names an object that is no commit (a tree, a blob)."""
        found = self.find_object(rev)
        if found is not None:
            kind = self.object_types([found]).get(found) or "object"
            raise FatalError(f"{what} '{rev}' is a {kind}, not a commit")

    def find_tag_commit(self, tag: str) -> CommitId | None:
        """The commit an existing tag peels to (through any chain of annotated tags), or
        None if there is no such tag (a revision expression such as ``v1.3.0~2`` names
        no tag)."""
        ref = tag_ref(tag)
        # One call: a missing tag and one that peels to no commit both give None.
        return None if ref is None else self.find_commit(ref)

    def require_tag_commit(self, tag: str, *, hint: str) -> CommitId:
        """The commit ``tag`` peels to, or the one refusal of a TAG that names no tag
        (``hint``: how this command would bring it in)."""
        oid = self.find_tag_commit(tag)
        if oid is not None:
            return oid
        if is_revision_expression(tag):
            raise FatalError(
                f"'{tag}' is a revision expression, not a tag: a tag (refs/tags/...) is needed",
                NOT_A_TAG_HINT,
            )
        target = self.find_object(f"refs/tags/{tag}", "")  # peeled to a non-tag
        if target is not None:
            kind = self.object_types([target]).get(target) or "object"
            raise FatalError(f"tag '{tag}' names a {kind}, not a commit", NOT_A_TAG_HINT)
        short = tag.removeprefix("refs/tags/")
        if short != tag and self.find_tag_commit(short) is not None:
            raise FatalError(
                f"'{tag}' is a full ref name: give the tag's own name, '{short}'",
                NOT_A_TAG_HINT,
            )
        if self.find_commit(tag) is not None:
            raise FatalError(
                f"'{tag}' names a commit but no tag: a tag (refs/tags/...) is needed",
                NOT_A_TAG_HINT,
            )
        self.require_objects()
        raise FatalError(f"unknown tag '{tag}'", hint)

    def list_tags(self, pattern: str | None = None) -> list[str]:
        args = ["tag", "--list"]
        if pattern:
            args.append(pattern)
        return [t for t in self.out(args, purpose="list tags").splitlines() if t]

    def tag_commits(self, pattern: str | None = None) -> dict[str, CommitId]:
        """Every tag (matching ``pattern``) mapped to the commit it peels to, in two calls.

        ``%(*objectname)`` peels one level only: a tag of a tag (of a tag...) is peeled
        fully by one ``cat-file --batch-check`` of ``refs/tags/NAME^{commit}``. A tag
        of a tree or a blob names no commit and is left out.
        """
        fmt = "%(refname:strip=2)%00%(objectname)%00%(*objectname)%00%(objecttype)%00%(*objecttype)"
        args = ["for-each-ref", f"--format={fmt}", "refs/tags/" + (pattern or "")]
        if pattern and not any(c in pattern for c in "*?["):
            args[-1] = f"refs/tags/{pattern}"
        out = self.run(args, purpose="list tags").out
        peeled_to: dict[str, CommitId | None] = {}
        for line in out.splitlines():
            name, oid, peeled, otype, ptype = line.split("\0")
            if otype == "commit":
                peeled_to[name] = CommitId(oid)
            elif ptype == "commit":
                peeled_to[name] = CommitId(peeled)
            elif ptype == "tag":
                peeled_to[name] = None  # a tag of a tag: peeled below
        nested = [f"refs/tags/{name}^{{commit}}" for name, oid in peeled_to.items() if oid is None]
        found = self.resolve_names(nested)
        result: dict[str, CommitId] = {}
        for name, known in peeled_to.items():
            hit = found.get(f"refs/tags/{name}^{{commit}}") if known is None else (known, "commit")
            if hit is not None and hit[1] == "commit":
                result[name] = CommitId(hit[0])
        return result

    def check_ref_format(self, ref: str) -> bool:
        """Whether ``ref`` (a full ref name such as ``refs/tags/v1``) is a valid ref name."""
        if ref.startswith("-") or "\0" in ref:
            return False
        return self.run(
            ["check-ref-format", ref], purpose=f"check the ref name {ref!r}", check=False
        ).ok

    def annotated_tag(self, name: str) -> tuple[str, str] | None:
        """(commit, message) of the annotated tag ``name``; None when there is no such tag.

        A lightweight tag yields an empty message.
        """
        commit = self.find_tag_commit(name)
        if commit is None:
            return None
        res = self.run(
            ["cat-file", "-p", f"refs/tags/{name}"], purpose=f"read tag {name}", check=False
        )
        if not res.ok or not res.out.startswith("object "):
            return commit, ""
        _header, _, message = res.out.partition("\n\n")
        return commit, message

    def create_annotated_tag(
        self, name: str, commit: str, message: str, identity: Mapping[str, str]
    ) -> None:
        """``git tag -a``; ``identity`` carries GIT_COMMITTER_NAME/EMAIL (the tagger)."""
        self.run(
            ["tag", "-a", "--cleanup=verbatim", "-F", "-", "--end-of-options", name, commit],
            purpose=f"create tag {name}",
            input=message.encode("utf-8"),
            env=identity,
        )

    def branch_commit(self, name: str) -> CommitId | None:
        return self.find_commit(f"refs/heads/{name}")

    def delete_branch(self, name: str) -> None:
        faultpoint("git.delete_branch")
        self.run(["branch", "-D", "--end-of-options", name], purpose=f"delete branch {name}")

    def is_valid_branch_name(self, branch: str) -> bool:
        """Whether ``branch`` may name a branch (``check-ref-format --branch``)."""
        if branch.startswith("-") or "\0" in branch:
            return False
        return self.run(
            ["check-ref-format", "--branch", branch], purpose="check the branch name", check=False
        ).ok

    def create_ref(self, ref: str, new: str, old: str, *, reason: str) -> None:
        """Point ``ref`` at ``new`` if it is still at ``old`` (the zero id: if it does
        not exist), logging ``reason``."""
        self.run(["update-ref", "-m", reason, ref, new, old], purpose=f"create {ref}")
