"""``apply --target DIR``: a series onto a plain directory (an installed package).

Every decision is made in a scratch copy of the touched files first; the target is
changed only once the result is proven, and restored if anything goes wrong.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from forktool.config import ApplyRule
from forktool.engine import Progress
from forktool.engine.apply.appliers import APPLIERS, Applier, touched
from forktool.engine.apply.attempt import classify
from forktool.engine.apply.precheck import precheck
from forktool.engine.apply.verdict import Attempt, PatchVerdict, acceptable, allows_offset, is_exact
from forktool.errors import FatalError
from forktool.fork import Fork, Patch
from forktool.model.patchfile import FileDiff

STRAY_SUFFIXES = (".orig", ".rej")


# What ``apply --target`` does: apply the series; prove the directory carries it
# (--verify); bring it to "every patch but P" (--except P); prove it is exactly that
# (--verify --except P). The engine dispatches on this one value.
ApplyMode = Literal["apply", "verify", "except", "verify-except"]


def apply_mode(*, verify: bool, excluding: bool) -> ApplyMode:
    """The mode the options ``--verify`` and ``--except`` name."""
    if verify:
        return "verify-except" if excluding else "verify"
    return "except" if excluding else "apply"


@dataclass(frozen=True)
class DirResult:
    target: str
    engine: str
    mode: ApplyMode
    ok: bool
    dry_run: bool
    patches: tuple[PatchVerdict, ...]
    state: dict[str, str] = field(default_factory=dict)  # patch -> applied | absent, as found
    changed: tuple[str, ...] = ()
    message: str = ""
    excluded: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {
            "target": self.target,
            "engine": self.engine,
            # "verify" for both proofs (the contract's values), the left-out patches apart
            "mode": "verify" if self.mode == "verify-except" else self.mode,
            "excluded": list(self.excluded),
            "ok": self.ok,
            "dry_run": self.dry_run,
            "message": self.message,
            "state": self.state,
            "changed": list(self.changed),
            "patches": [p.to_json() for p in self.patches],
        }


def symlink_problem(target: Path, rel: str, link_diff: bool) -> str | None:
    """Why writing ``rel`` under ``target`` could land outside it, or None.

    A symlinked directory on the way is refused wherever it points (writes would
    follow it), and so is a symlink at the file itself unless the patch changes
    the link as a link (``link_diff``: git's mode 120000), which replaces it
    without following it.
    """
    current = target
    parts = Path(rel).parts
    for depth, part in enumerate(parts, start=1):
        current = current / part
        if not current.is_symlink():
            continue
        shown = "/".join(parts[:depth])
        pointee = os.readlink(current)
        if depth < len(parts):
            return f"{rel}: '{shown}' is a symlinked directory (to {pointee}); refusing to write through it"
        if not link_diff:
            return f"{rel}: is a symlink (to {pointee}); refusing to patch through it"
    return None


GITLINK_MODE = "160000"


def is_gitlink(diff: FileDiff) -> bool:
    return GITLINK_MODE in (diff.old_mode, diff.new_mode)


def _target_refusal(target: Path, patch: Patch, links: set[str]) -> PatchVerdict | None:
    """Why ``patch`` cannot go onto ``target`` as it is, found before anything runs."""
    if gitlink := next((d for d in patch.parsed.files if is_gitlink(d)), None):
        reason = (
            f"{gitlink.path}: a submodule (gitlink, mode {GITLINK_MODE}) has no content "
            "to apply to a plain directory; leave submodules out of the series"
        )
        return PatchVerdict(patch.name, "unsupported", reason, file=gitlink.path)
    for rel in touched([patch]):
        problem = symlink_problem(target, rel, rel in links) or kind_problem(target, rel)
        if problem:
            return PatchVerdict(patch.name, "unsafe", problem, file=rel)
    return None


def kind_problem(target: Path, rel: str) -> str | None:
    """Why the thing at ``rel`` cannot be patched as a file (a directory, a FIFO, a
    device: copying or reading it would fail or block), or None."""
    path = target / rel
    try:
        mode = path.lstat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISREG(mode) or stat.S_ISLNK(mode):
        return None
    kind = (
        "a directory"
        if stat.S_ISDIR(mode)
        else "a FIFO"
        if stat.S_ISFIFO(mode)
        else ("a device or socket")
    )
    return f"{rel}: is {kind} where the patch expects a file; refusing to patch it"


@contextmanager
def _scratch_copy(target: Path, paths: Sequence[str]) -> Iterator[Path]:
    """A private copy of ``paths`` from ``target``; the target is never written here."""
    scratch = Path(tempfile.mkdtemp(prefix="forktool-scratch-")) / "tree"
    scratch.mkdir()
    try:
        _copy_paths(target, scratch, paths)
        yield scratch
    finally:
        shutil.rmtree(scratch.parent, ignore_errors=True)


def _copy_paths(src_root: Path, dest_root: Path, paths: Sequence[str]) -> None:
    for rel in paths:
        src = src_root / rel
        if not (src.exists() or src.is_symlink()):
            continue
        dest = dest_root / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest, follow_symlinks=False)


def _sync_back(scratch: Path, target: Path, paths: Sequence[str]) -> list[str]:
    """Make ``target`` match ``scratch`` on ``paths``; returns the paths changed."""
    changed = []
    for rel in paths:
        src, dest = scratch / rel, target / rel
        src_there = src.exists() or src.is_symlink()
        dest_there = dest.exists() or dest.is_symlink()
        if src_there and dest_there and not src.is_symlink() and not dest.is_symlink():
            if src.read_bytes() == dest.read_bytes() and src.stat().st_mode == dest.stat().st_mode:
                continue
        if not src_there and not dest_there:
            continue
        if dest_there:
            dest.unlink()
        if src_there:
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest, follow_symlinks=False)
        else:
            _prune_empty_dirs(dest.parent, target)
        changed.append(rel)
    return changed


def _prune_empty_dirs(directory: Path, stop: Path) -> None:
    while directory != stop and directory.is_dir() and not any(directory.iterdir()):
        directory.rmdir()
        directory = directory.parent


def stray_files(target: Path, series_paths: Sequence[str] = ()) -> list[str]:
    """``.orig``/``.rej`` files under ``target`` that an applier would leave behind;
    a path the series itself names (a patch may create ``setup.cfg.orig``) is not one."""
    own = set(series_paths)
    return sorted(
        rel
        for p in target.rglob("*")
        if p.name.endswith(STRAY_SUFFIXES)
        and p.is_file()
        and (rel := p.relative_to(target).as_posix()) not in own
    )


def _trial(
    applier: Applier, scratch: Path, patch: Patch, *, reverse: bool = False, fuzz: bool = False
) -> Attempt:
    """Try one patch on a throwaway copy of its files: a failed GNU patch run can
    leave hunks half-applied, so nothing is ever tried on the scratch tree itself."""
    with _scratch_copy(scratch, touched([patch])) as probe:
        return applier.attempt(probe, patch, reverse=reverse, fuzz=fuzz)


def _judge(
    applier: Applier,
    scratch: Path,
    patch: Patch,
    base: str,
    *,
    reverse: bool = False,
    rule: ApplyRule = "exact",
) -> PatchVerdict:
    """Classify one patch on the scratch tree, and apply it there when it is exact (or,
    under dpkg-source's ``rule``, applies at an offset without fuzz)."""
    attempt = _trial(applier, scratch, patch, reverse=reverse)
    fuzzy: Attempt | None = None
    reverse_ok = False
    if not attempt.ok:
        reverse_ok = is_exact(_trial(applier, scratch, patch, reverse=not reverse))
        if not reverse_ok:
            fuzzy = _trial(applier, scratch, patch, reverse=reverse, fuzz=True)
    verdict = classify(patch, attempt, fuzzy, reverse_ok, base, rule)
    if acceptable(verdict.status, allows_offset(rule)):
        applier.attempt(scratch, patch, reverse=reverse)
    return verdict


def progress_steps(mode: ApplyMode, patches: int) -> int:
    """How many progress ticks :func:`apply_to_directory` makes at most (``except``
    first peels every applied patch off, then applies)."""
    return 2 * patches if mode == "except" else patches


def apply_to_directory(
    fork: Fork,
    target: Path,
    *,
    engine: str = "git",
    mode: ApplyMode = "apply",
    exclude: Sequence[str] = (),
    dry_run: bool = False,
    progress: Progress | None = None,
) -> DirResult:
    """Bring ``target`` to the declared state, or prove it is there (``verify``)."""
    result = _apply(fork, target, engine, mode, exclude, dry_run, progress)
    return replace(result, excluded=tuple(sorted(exclude)))


def _apply(
    fork: Fork,
    target: Path,
    engine: str,
    mode: ApplyMode,
    exclude: Sequence[str],
    dry_run: bool,
    progress: Progress | None,
) -> DirResult:
    if not target.is_dir():
        problem = "not a directory" if target.exists() else "no such directory"
        raise FatalError(f"--target {target}: {problem}")
    if not fork.patches:
        raise FatalError(
            f"{fork.config.series} lists no patches: refusing to report an empty series as applied",
            "a fork with nothing to apply should not run this step",
        )
    if bool(exclude) != (mode in ("except", "verify-except")):
        raise ValueError(f"mode {mode} with exclude={list(exclude)}")
    for name in exclude:
        fork.patch(name)  # exit 2 on an unknown name
    applier: Applier = APPLIERS[engine]()
    patches = list(fork.patches)
    base = f"the target directory {target}"
    early = [precheck(p, engine, rule=fork.config.apply_rule) for p in patches]
    bad = [v for v in early if v is not None]
    if bad:
        return DirResult(
            str(target),
            engine,
            mode,
            False,
            dry_run,
            tuple(bad),
            message="refused before applying anything",
        )
    paths = touched(patches)
    links = {d.path for p in patches for d in p.parsed.files if d.is_symlink}
    for patch in patches:
        if refusal := _target_refusal(target, patch, links):
            return DirResult(
                str(target), engine, mode, False, dry_run, (refusal,), message=refusal.message
            )
    strays = stray_files(target, paths)
    if strays:
        message = (
            f"leftover files already in the target: {', '.join(strays[:5])}; "
            "a previous run left them: restore the pristine files first"
        )
        return DirResult(str(target), engine, mode, False, dry_run, (), message=message)
    with _scratch_copy(target, paths) as scratch:
        if mode == "verify-except":
            return _verify_except(applier, scratch, target, patches, set(exclude), base, dry_run)
        rule = fork.config.apply_rule
        if mode == "verify":
            return _verify_directory(
                applier, scratch, target, patches, base, dry_run, progress, rule
            )
        if mode == "apply":
            verdicts = []
            for patch in patches:
                verdict = _judge(applier, scratch, patch, base, rule=rule)
                verdicts.append(verdict)
                if progress:
                    progress(1)
                if not acceptable(verdict.status, allows_offset(rule)):
                    return DirResult(
                        str(target),
                        engine,
                        mode,
                        False,
                        dry_run,
                        tuple(verdicts),
                        message=f"{patch.name}: {verdict.message}; the target was not changed",
                    )
            return _finish(scratch, target, paths, engine, mode, dry_run, tuple(verdicts), {})
        state, verdicts_or_error = _declare(applier, scratch, patches, set(exclude), base, progress)
        if isinstance(verdicts_or_error, str):
            return DirResult(
                str(target), engine, mode, False, dry_run, (), state, message=verdicts_or_error
            )
        return _finish(scratch, target, paths, engine, mode, dry_run, verdicts_or_error, state)


def _verify_directory(
    applier: Applier,
    scratch: Path,
    target: Path,
    patches: list[Patch],
    base: str,
    dry_run: bool,
    progress: Progress | None,
    rule: ApplyRule = "exact",
) -> DirResult:
    verdicts = []
    accepted = allows_offset(rule)
    for patch in reversed(patches):
        verdict = _judge(applier, scratch, patch, base, reverse=True, rule=rule)
        if verdict.status == "fails":
            message = verdict.message.replace("does not apply", "does not reverse-apply")
            if message.startswith("already applied"):
                message = "not applied: the patch applies forward, so the target lacks it"
            verdict = PatchVerdict(
                patch.name, "fails", message, (), verdict.file, verdict.hunk, verdict.line
            )
        verdicts.append(verdict)
        if progress:
            progress(1)
        if not acceptable(verdict.status, accepted):
            break
    verdicts.reverse()
    ok = len(verdicts) == len(patches) and all(acceptable(v.status, accepted) for v in verdicts)
    strays = stray_files(target, touched(patches))
    message = (
        f"the target carries exactly the {len(patches)} patches of the series"
        if ok
        else "the target does not carry exactly the declared series"
    )
    if strays:
        ok = False
        message = f"leftover files in the target: {', '.join(strays[:5])}"
    return DirResult(
        str(target), applier.name, "verify", ok, dry_run, tuple(verdicts), message=message
    )


def _verify_except(
    applier: Applier,
    scratch: Path,
    target: Path,
    patches: list[Patch],
    exclude: set[str],
    base: str,
    dry_run: bool,
) -> DirResult:
    """Prove ``target`` is exactly "every patch but ``exclude``": the others reverse-apply
    exactly (newest first) and then the whole series applies exactly on what is left,
    so the left-out patches are absent, not merely unchecked."""
    kept = [p for p in patches if p.name not in exclude]
    verdicts = _verify_directory(applier, scratch, target, kept, base, dry_run, None)
    if not verdicts.ok:
        return replace(
            verdicts,
            mode="verify-except",
            excluded=tuple(sorted(exclude)),
            message="the target does not carry the series' other patches exactly",
        )
    forward: dict[str, PatchVerdict] = {}
    for patch in patches:
        verdict = _judge(applier, scratch, patch, base)
        forward[patch.name] = verdict
        if verdict.status != "exact":
            break
    shown: list[PatchVerdict] = []
    for patch in patches:
        if patch.name in exclude:
            found = forward.get(patch.name)
            if found is None:
                found = PatchVerdict(patch.name, "fails", "not checked: an earlier patch failed")
            elif found.status == "exact":
                found = replace(found, message="absent (--except): it applies on the rest")
            elif found.message.startswith("already applied"):
                found = replace(found, message="present, though --except says it is left out")
            shown.append(found)
        else:
            shown.append(next(v for v in verdicts.patches if v.patch == patch.name))
    ok = all(v.status == "exact" for v in shown) and len(forward) == len(patches)
    left_out = ", ".join(sorted(exclude))
    message = (
        f"the target carries exactly the series except {left_out}"
        if ok
        else f"the target is not the series without {left_out}"
    )
    return DirResult(
        str(target),
        applier.name,
        "verify-except",
        ok,
        dry_run,
        tuple(shown),
        message=message,
        excluded=tuple(sorted(exclude)),
    )


def _declare(
    applier: Applier,
    scratch: Path,
    patches: list[Patch],
    exclude: set[str],
    base: str,
    progress: Progress | None,
) -> tuple[dict[str, str], tuple[PatchVerdict, ...] | str]:
    """Peel off whatever is applied (newest first), then apply all but ``exclude``."""
    state: dict[str, str] = {}
    for patch in reversed(patches):
        if progress:
            progress(1)
        if is_exact(_trial(applier, scratch, patch, reverse=True)):
            applier.attempt(scratch, patch, reverse=True)
            state[patch.name] = "applied"
        elif is_exact(_trial(applier, scratch, patch)):
            state[patch.name] = "absent"
        else:
            return state, (
                f"{patch.name}: the target is in an unknown state (the patch neither applies nor "
                "reverse-applies exactly); restore the pristine files first"
            )
    verdicts = []
    for patch in patches:
        if patch.name in exclude:
            verdicts.append(PatchVerdict(patch.name, "exact", "left out (--except)"))
        else:
            verdict = _judge(applier, scratch, patch, base)
            verdicts.append(verdict)
            if verdict.status != "exact":
                return state, f"{patch.name}: {verdict.message}; the target was not changed"
        if progress:
            progress(1)
    return dict(reversed(list(state.items()))), tuple(verdicts)


def _finish(
    scratch: Path,
    target: Path,
    paths: list[str],
    engine: str,
    mode: ApplyMode,
    dry_run: bool,
    verdicts: tuple[PatchVerdict, ...],
    state: dict[str, str],
) -> DirResult:
    def result(ok: bool, changed: tuple[str, ...] = (), message: str = "") -> DirResult:
        return DirResult(
            str(target), engine, mode, ok, dry_run, verdicts, state, changed, message=message
        )

    strays = stray_files(scratch, paths)
    if strays:
        return result(
            False, message=f"the applier left {', '.join(strays)}; the target was not changed"
        )
    if dry_run:
        return result(True, message="dry run: nothing written")
    with _scratch_copy(target, paths) as backup:
        try:
            changed = _sync_back(scratch, target, paths)
        except BaseException:
            _sync_back(backup, target, paths)
            raise
    strays = stray_files(target, paths)
    if strays:
        return result(
            False, tuple(changed), f"leftover files in the target: {', '.join(strays[:5])}"
        )
    return result(True, tuple(changed))
