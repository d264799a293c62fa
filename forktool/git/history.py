"""History: commits as ``git log`` shows them (messages, trailers, parents, dates),
counted and listed along a tip's lines."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from forktool.git.ancestry import Ancestry
from forktool.git.runner import run


class LogEntry(NamedTuple):
    """One commit as ``git log`` shows it."""

    commit: str
    parents: tuple[str, ...]
    author: str  # "Name <email>"
    date: str  # author date, ISO 8601
    message: str

    @property
    def subject(self) -> str:
        return self.message.split("\n", 1)[0].strip()


class History(Ancestry):
    def first_parent_log(self, tip: str, exclude: Sequence[str] = ()) -> list[LogEntry]:
        """Newest first: every commit on ``tip``'s first-parent line and not in
        ``exclude``, with parents, author, date and full message. One ``git log``."""
        args = ["log", "--first-parent", tip, *(f"^{e}" for e in exclude)]
        return self._log_entries(args, None, purpose=f"read the history of {tip}")

    def log_entries(self, commits: Sequence[str]) -> list[LogEntry]:
        """Exactly ``commits``, in that order, as :meth:`first_parent_log` shows them."""
        stdin = ("\n".join(commits) + "\n").encode()
        return self._log_entries(
            ["log", "--no-walk=unsorted", "--stdin"], stdin, purpose="read commits"
        )

    def _log_entries(self, args: list[str], stdin: bytes | None, *, purpose: str) -> list[LogEntry]:
        fmt = "--format=%H%x1f%P%x1f%an <%ae>%x1f%aI%x1f%B%x1e"
        res = self.run([*args, "--no-color", fmt, "--"], purpose=purpose, input=stdin)
        entries = []
        for record in res.out.split("\x1e"):
            fields = record.lstrip("\n").split("\x1f", 4)
            if len(fields) == 5:
                commit, parents, author, date, message = fields
                entries.append(LogEntry(commit, tuple(parents.split()), author, date, message))
        return entries

    def log_messages(
        self,
        tip: str,
        exclude: Sequence[str] = (),
        *,
        grep: str | Sequence[str] | None = None,
        ignore_case: bool = False,
    ) -> list[tuple[str, str]]:
        """(commit, full message) for every commit in ``tip`` and not in ``exclude``.

        One ``git log`` call; ``grep`` (fixed strings) keeps only messages holding one
        of them (in any case with ``ignore_case``).
        """
        args = ["log", "-z", "--no-color", "--format=%H%n%B"]
        if grep is not None:
            args.append("--fixed-strings")
            args += [f"--grep={g}" for g in ([grep] if isinstance(grep, str) else grep)]
            if ignore_case:
                args.append("--regexp-ignore-case")
        res = self.run(
            [*args, tip, *(f"^{e}" for e in exclude), "--"], purpose=f"read the history of {tip}"
        )
        found = []
        for entry in res.out.split("\0"):
            commit, _, message = entry.strip("\n").partition("\n")
            if commit:
                found.append((commit, message))
        return found

    def subjects_and_trailers(
        self, commits: Sequence[str]
    ) -> list[tuple[str, str, list[tuple[str, str]]]]:
        """``(commit, subject, [(trailer key, value)...])`` for exactly ``commits``, in order."""
        res = self.run(
            [
                "log",
                "--no-walk=unsorted",
                "--stdin",
                "-z",
                "--format=%H%x1f%s%x1f%(trailers:unfold,separator=%x1e)",
            ],
            purpose="read the commit messages",
            input=("\n".join(commits) + "\n").encode(),
        )
        found = []
        for record in res.out.split("\0"):
            if not record.strip():
                continue
            commit, subject, trailer_text = [*record.lstrip("\n").split("\x1f"), "", ""][:3]
            trailers = []
            for item in trailer_text.split("\x1e"):
                key, sep, value = item.partition(":")
                if sep:
                    trailers.append((key.strip(), value.strip()))
            found.append((commit, subject, trailers))
        return found

    def commit_date_raw(self, rev: str) -> str:
        """``rev``'s committer date as git stores it (``<seconds> <zone>``)."""
        return self.out(
            ["log", "-1", "--format=%cd", "--date=raw", rev], purpose=f"read the date of {rev}"
        )

    def commits_changing(self, text: str, path: str) -> list[tuple[str, tuple[str, ...]]]:
        """Newest first: (commit, parents) for each commit in HEAD's history that changed
        how often ``text`` occurs in ``path`` (``git log -S``)."""
        out = self.out(
            ["log", "--no-color", "--format=%H %P", f"-S{text}", "HEAD", "--", path],
            purpose=f"search the history of {path}",
        )
        found = []
        for line in out.splitlines():
            commit, *parents = line.split()
            found.append((commit, tuple(parents)))
        return found

    def parents_graph(self, tips: Sequence[str], exclude: Sequence[str] = ()) -> list[list[str]]:
        """``[commit, parent...]`` for every commit in ``tips`` and not in ``exclude``,
        children before parents (``rev-list --topo-order --parents``; one call)."""
        if not tips:
            return []
        stdin = "\n".join([*tips, *(f"^{e}" for e in exclude)]) + "\n"
        res = self.run(
            ["rev-list", "--topo-order", "--parents", "--stdin"],
            purpose="read the history of the release tags",
            input=stdin.encode(),
        )
        return [line.split() for line in res.out.splitlines() if line]

    def commits_with_parents(self, base: str, tip: str) -> list[list[str]]:
        """Oldest first, ``[commit, parent...]`` for each commit of ``base..tip``."""
        listing = self.out(
            ["rev-list", "--reverse", "--topo-order", "--parents", f"{base}..{tip}"],
            purpose=f"list the commits between {base[:12]} and {tip[:12]}",
        )
        return [line.split() for line in listing.splitlines() if line]

    def count_commits(self, include: str, exclude: str) -> int:
        """How many commits ``include`` has that ``exclude`` does not."""
        return int(
            self.out(
                ["rev-list", "--count", include, f"^{exclude}"],
                purpose=f"count the commits in {include} not in {exclude}",
            )
        )

    def first_parent_touching(
        self, tip: str, start: str, paths: Sequence[str], *, top: Path | None = None
    ) -> list[str]:
        """Oldest first: the commits on ``tip``'s first-parent line after ``start`` whose
        change from their first parent touches ``paths`` (relative to ``top``, the top of
        the work tree; one ``rev-list``)."""
        return run(
            [
                "rev-list",
                "--first-parent",
                "--reverse",
                tip,
                f"^{start}",
                "--",
                *(f":(literal){p}" for p in paths),
            ],
            cwd=top or self.toplevel(),
            purpose=f"list the commits touching the patch's files up to {tip[:12]}",
        ).out.split()
