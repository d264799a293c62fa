"""Fetching from upstream: tags, branches, the remote's view of its tags."""

from __future__ import annotations

from collections.abc import Sequence

from forktool.git.refs import Refs


class Remotes(Refs):
    def fetch_tag(self, remote: str, tag: str) -> None:
        """Fetch one tag from ``remote`` (never overwriting a local tag of that name)."""
        self.run(
            [
                "fetch",
                "--no-tags",
                "--end-of-options",
                remote,
                f"refs/tags/{tag}:refs/tags/{tag}",
            ],
            purpose=f"fetch tag {tag} from {remote}",
        )

    def fetch(self, source: str, refspecs: Sequence[str], *, unshallow: bool = False) -> None:
        """Fetch exactly ``refspecs`` (tags, commit ids) from ``source`` (a remote or a
        URL): no tag is followed or taken beyond them (``--no-tags`` also overrides a
        remote's ``tagOpt``); refspecs go on stdin, so a thousand tags fit. Not
        ``--quiet``: git names each ref it rejects only when it may speak."""
        args = ["fetch", "--no-auto-gc", "--no-tags", "--no-write-fetch-head", "--stdin"]
        if unshallow:
            args.append("--unshallow")
        self.run(
            [*args, "--end-of-options", source],
            purpose=f"fetch from {source}",
            input="".join(f"{r}\n" for r in refspecs).encode(),
        )

    def remote_tags(self, source: str) -> dict[str, str]:
        """Every tag of ``source`` and the commit it peels to (``ls-remote``, no objects
        fetched)."""
        return self.remote_tag_commits(source, ())

    def remote_head_branch(self, source: str) -> str | None:
        """The branch ``source``'s HEAD names (``ls-remote --symref``), None when it cannot
        be read (no network, no such remote, a detached HEAD)."""
        res = self.run(
            ["ls-remote", "--symref", "--end-of-options", source, "HEAD"],
            purpose=f"read the default branch of {source}",
            check=False,
        )
        for line in res.out.splitlines() if res.ok else ():
            ref, _, name = line.partition("\t")
            if name == "HEAD" and ref.startswith("ref: refs/heads/"):
                return ref.removeprefix("ref: refs/heads/")
        return None

    def remote_tag_commits(self, source: str, tags: Sequence[str]) -> dict[str, str]:
        """The commit each of ``tags`` peels to on ``source`` (``ls-remote``, no objects
        fetched); a tag ``source`` does not have is absent. No ``tags``: every tag."""
        refs = [f"refs/tags/{t}" for t in tags]
        out = self.out(
            [
                "ls-remote",
                "--tags",
                "--end-of-options",
                source,
                *refs,
                *(f"{r}^{{}}" for r in refs),
            ],
            purpose=f"read tags of {source}",
        )
        found: dict[str, str] = {}
        for line in out.splitlines():
            oid, _, ref = line.partition("\t")
            name = ref.removeprefix("refs/tags/")
            if name.endswith("^{}"):
                found[name[:-3]] = oid  # the peeled commit wins over the tag object
            else:
                found.setdefault(name, oid)
        return found

    def fetch_branch(self, source: str, branch: str, remote: str) -> None:
        """Fetch ``branch`` from ``source`` (a remote or a URL) into
        ``refs/remotes/<remote>/<branch>``."""
        self.run(
            [
                "fetch",
                "--no-tags",
                "--no-write-fetch-head",
                "--end-of-options",
                source,
                f"+refs/heads/{branch}:refs/remotes/{remote}/{branch}",
            ],
            purpose=f"fetch {branch} from {source}",
        )
