"""``fmt``: is every patch file byte-identical to its form on the pin?

The form is the fork's ``patch_form``: forktool's canonical form, or the maintainers'
own (a patch that applies under the fork's ``apply_rule`` is left as it is; another keeps
its header byte for byte and gets its diff regenerated).

Each patch is regenerated on the pinned tree (see :mod:`forktool.engine.patches.canonical`) and
compared byte for byte. A file whose regeneration differs only cosmetically (same
files, modes, hunks and ``git patch-id --stable``: an ``index`` line abbreviation, a
signature, a diffstat, header folding, a plain diff's ``pkg.orig/`` prefixes) is
reported ``cosmetic``. A formatter's contract: after ``fmt`` runs, ``fmt --check``
(and ``check``'s format check) pass, so ``fmt`` rewrites cosmetic differences too;
``fmt --dry-run`` shows what it would write and writes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from forktool.engine import Progress
from forktool.engine.patches.canonical import (
    Chain,
    build_chain,
    chain_bytes,
    cosmetic_only,
    rewrite_diff,
)
from forktool.engine.patches.canonical_confirm import regenerate_if_canonical
from forktool.engine.patches.commit_meta import meta_for_form
from forktool.errors import FatalError
from forktool.fork import Fork
from forktool.fsutil import write_files
from forktool.git import Git

FmtStatus = Literal["canonical", "rewrite", "cosmetic", "error", "pending"]


@dataclass(frozen=True)
class FmtEntry:
    patch: str
    path: str  # relative to the fork root
    status: FmtStatus
    message: str = ""
    diff: str = ""  # unified diff of the file against its canonical form
    written: bool = False
    canonical: bytes | None = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict[str, object]:
        return {
            "patch": self.patch,
            "path": self.path,
            "status": self.status,
            "message": self.message,
            "written": self.written,
            "diff": self.diff,
        }


@dataclass(frozen=True)
class FmtResult:
    base: str
    base_commit: str
    check: bool
    dry_run: bool
    entries: tuple[FmtEntry, ...]
    message: str = ""

    @property
    def failed(self) -> list[FmtEntry]:
        return [e for e in self.entries if e.status in ("error", "pending")]

    @property
    def left(self) -> list[FmtEntry]:
        """Entries whose file is still not canonical after this run."""
        return [e for e in self.entries if e.status != "canonical" and not e.written]

    @property
    def ok(self) -> bool:
        if not self.entries:
            return False
        if self.check:
            return not self.left
        return not self.failed

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "base": self.base,
            "base_commit": self.base_commit,
            "check": self.check,
            "dry_run": self.dry_run,
            "ok": self.ok,
            "canonical": bool(self.entries) and not self.left,
            "patches": [e.to_json() for e in self.entries],
        }
        if self.message:
            data["message"] = self.message
        return data


def plan_fmt(
    fork: Fork, git: Git, *, base: str, base_commit: str, progress: Progress | None = None
) -> tuple[FmtEntry, ...]:
    """Regenerate every patch on ``base_commit`` and compare; nothing is written."""
    form, rule = fork.config.patch_form, fork.config.apply_rule
    fast = regenerate_if_canonical(git, base_commit, fork.patches)
    if fast is not None:
        if progress:
            progress(len(fork.patches))
        return tuple(
            FmtEntry(patch.name, patch.rel, "canonical", canonical=data)
            for patch, data in zip(fork.patches, fast, strict=True)
        )
    with git.temp_index() as index:
        chain = build_chain(
            index,
            base_commit,
            fork.patches,
            base_name=base,
            rule=rule,
            meta_for=meta_for_form(form),
        )
        applied = Chain(chain.base, tuple(link for link in chain.links if link.commit))
        generated = chain_bytes(index, applied, form, rule)
        entries: list[FmtEntry] = []
        for position, patch in enumerate(fork.patches):
            if progress:
                progress(1)
            if position < len(generated):
                entries.append(
                    _compare(git, patch.name, patch.rel, patch.data, generated[position])
                )
            elif position < len(chain.links):
                verdict = chain.links[position].verdict
                message = f"cannot be regenerated on {base}: {verdict.message}"
                entries.append(FmtEntry(patch.name, patch.rel, "error", message))
            else:
                message = "not regenerated: an earlier patch of the series does not apply"
                entries.append(FmtEntry(patch.name, patch.rel, "pending", message))
    return tuple(entries)


def _compare(git: Git, name: str, rel: str, old: bytes, new: bytes) -> FmtEntry:
    if old == new:
        return FmtEntry(name, rel, "canonical", canonical=new)
    diff = rewrite_diff(old, new, rel)
    if cosmetic_only(git, old, new):
        message = "differs from its canonical form only cosmetically (same patch-id and hunks)"
        return FmtEntry(name, rel, "cosmetic", message, diff, canonical=new)
    return FmtEntry(name, rel, "rewrite", "differs from its canonical form", diff, canonical=new)


def fmt_fork(
    fork: Fork,
    git: Git,
    *,
    base: str,
    base_commit: str,
    check: bool,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> FmtResult:
    """``fmt --check`` (compare only), ``fmt --dry-run`` (show what would be written) or
    ``fmt`` (rewrite every file that is not canonical, cosmetic differences included)."""
    if not fork.patches:
        return FmtResult(
            base, base_commit, check, dry_run, (), "the series lists no patches: nothing to check"
        )
    entries = plan_fmt(fork, git, base=base, base_commit=base_commit, progress=progress)
    if check:
        return FmtResult(base, base_commit, check, dry_run, entries)
    if any(e.status in ("error", "pending") for e in entries):
        return FmtResult(
            base,
            base_commit,
            check,
            dry_run,
            entries,
            "nothing was written: every patch must regenerate before any file changes",
        )
    if dry_run:
        return FmtResult(base, base_commit, check, dry_run, entries)
    wanted = {"rewrite", "cosmetic"}
    originals = {patch.rel: patch.data for patch in fork.patches}
    changes = {
        fork.config.root / e.path: e.canonical
        for e in entries
        if e.status in wanted and e.canonical is not None
    }
    if changes:
        for e in entries:
            if e.status in wanted and (fork.config.root / e.path).read_bytes() != originals[e.path]:
                raise FatalError(
                    f"{e.path} changed while fmt was running; nothing was written",
                    "run 'forktool fmt' again",
                )
        write_files(changes)
    done = tuple(replace(e, written=e.status in wanted) for e in entries)
    return FmtResult(base, base_commit, check, dry_run, done)
