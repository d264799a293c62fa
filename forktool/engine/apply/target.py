"""``apply --target DIR``: a series onto a plain directory (an installed package).

Every decision is made in a scratch copy of the touched files first; the target is
changed only once the result is proven, and restored if anything goes wrong.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from forktool.config import ApplyRule
from forktool.engine import Progress
from forktool.engine.apply.anchors import (
    gnu_anchors_hold,
    short_of_its_end,
)
from forktool.engine.apply.appliers import APPLIERS, Applier, GnuPatchApplier, touched
from forktool.engine.apply.attempt import classify
from forktool.engine.apply.precheck import precheck
from forktool.engine.apply.scratch import scratch_copy, sync_back
from forktool.engine.apply.target_safety import stray_files, target_refusal
from forktool.engine.apply.verdict import Attempt, PatchVerdict, acceptable, allows_offset, is_exact
from forktool.errors import FatalError
from forktool.fork import Fork, Patch
from forktool.model.text import line_count

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


def _trial(
    applier: Applier,
    scratch: Path,
    patch: Patch,
    *,
    reverse: bool = False,
    fuzz: bool = False,
    unanchored: bool = False,
) -> Attempt:
    """Try one patch on a throwaway copy of its files: a failed GNU patch run can
    leave hunks half-applied, so nothing is ever tried on the scratch tree itself."""
    with scratch_copy(scratch, touched([patch])) as probe:
        return applier.attempt(probe, patch, reverse=reverse, fuzz=fuzz, unanchored=unanchored)


def _fuzz_trial(applier: Applier, scratch: Path, patch: Patch, reverse: bool) -> Attempt:
    """The patch tried with fuzz: by GNU patch at its default fuzz whatever the engine
    (as verify's :func:`~forktool.engine.apply.attempt.fuzz_probe`); by the git
    applier's reduced context only when GNU patch is not installed."""
    if applier.name == "git":
        try:
            return _trial(GnuPatchApplier(), scratch, patch, reverse=reverse, fuzz=True)
        except FatalError:  # GNU patch is not installed
            pass
    return _trial(applier, scratch, patch, reverse=reverse, fuzz=True)


def _short_of_its_end(scratch: Path, patch: Patch, attempt: Attempt) -> PatchVerdict | None:
    """The refusal of a patch git applied with a hunk short of its file's end, where
    GNU patch (dpkg-source) holds it (forktool.engine.apply.anchors); None when none."""

    def base_lines(paths: list[str]) -> dict[str, int]:
        counts = {}
        for path in paths:
            try:
                counts[path] = line_count((scratch / path).read_bytes())
            except OSError:
                continue
        return counts

    return short_of_its_end(patch, attempt, base_lines)


def _placed(applier: Applier, scratch: Path, patch: Patch, reverse: bool) -> Attempt | None:
    """The patch tried without git's anchors, when GNU patch's anchors allow where
    every hunk went (forktool.engine.apply.anchors); None otherwise."""
    if applier.gnu_anchors:
        return None  # its strict try already placed the hunks as GNU patch does
    probe = _trial(applier, scratch, patch, reverse=reverse, unanchored=True)

    def lines_of(path: str) -> int | None:
        try:
            return line_count((scratch / path).read_bytes())
        except OSError:
            return None

    return probe if gnu_anchors_hold(patch.parsed, probe, lines_of, reverse) else None


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
    if attempt.ok and rule == "dpkg" and not reverse and not applier.gnu_anchors:
        if short := _short_of_its_end(scratch, patch, attempt):
            return short
    fuzzy: Attempt | None = None
    placed: Attempt | None = None
    reverse_ok = False
    if not attempt.ok:
        reverse_ok = is_exact(_trial(applier, scratch, patch, reverse=not reverse))
        if not reverse_ok:
            placed = _placed(applier, scratch, patch, reverse)
            if placed is None and attempt.fuzz_may_place:
                fuzzy = _fuzz_trial(applier, scratch, patch, reverse)
    verdict = classify(patch, attempt, fuzzy, reverse_ok, base, rule, placed)
    if acceptable(verdict.status, allows_offset(rule)):
        applier.attempt(scratch, patch, reverse=reverse, unanchored=placed is not None)
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
    _check_request(fork, target, mode, exclude)
    applier: Applier = APPLIERS[engine]()
    patches = list(fork.patches)
    paths = touched(patches)
    if refused := _refusal(fork, target, patches, paths, engine):
        verdicts, message = refused
        return DirResult(str(target), engine, mode, False, dry_run, verdicts, message=message)
    base = f"the target directory {target}"
    rule = fork.config.apply_rule
    with scratch_copy(target, paths) as scratch:
        if mode == "verify-except":
            return _verify_except(applier, scratch, target, patches, set(exclude), base, dry_run)
        if mode == "verify":
            return _verify_directory(
                applier, scratch, target, patches, base, dry_run, progress, rule
            )
        state: dict[str, str] = {}
        if mode == "apply":
            verdicts, failure = _apply_each(applier, scratch, patches, base, rule, progress)
        else:
            state, declared = _declare(applier, scratch, patches, set(exclude), base, progress)
            verdicts, failure = ((), declared) if isinstance(declared, str) else (declared, None)
        if failure is not None:
            return DirResult(
                str(target), engine, mode, False, dry_run, verdicts, state, message=failure
            )
        return _finish(scratch, target, paths, engine, mode, dry_run, verdicts, state)


def _check_request(fork: Fork, target: Path, mode: ApplyMode, exclude: Sequence[str]) -> None:
    """Refuse (exit 2) a request that cannot run at all: no directory, an empty
    series, an unknown ``--except`` name."""
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


def _refusal(
    fork: Fork, target: Path, patches: Sequence[Patch], paths: Sequence[str], engine: str
) -> tuple[tuple[PatchVerdict, ...], str] | None:
    """Why the series cannot go onto ``target`` as it is, found before any patch is
    tried: (the verdicts that say so, the message), or None."""
    early = [precheck(p, engine, rule=fork.config.apply_rule) for p in patches]
    bad = tuple(v for v in early if v is not None)
    if bad:
        return bad, "refused before applying anything"
    links = {d.path for p in patches for d in p.parsed.files if d.is_symlink}
    for patch in patches:
        if refusal := target_refusal(target, patch, links):
            return (refusal,), refusal.message
    strays = stray_files(target, paths)
    if strays:
        return (), (
            f"leftover files already in the target: {', '.join(strays[:5])}; "
            "a previous run left them: restore the pristine files first"
        )
    return None


def _apply_each(
    applier: Applier,
    scratch: Path,
    patches: Sequence[Patch],
    base: str,
    rule: ApplyRule,
    progress: Progress | None,
) -> tuple[tuple[PatchVerdict, ...], str | None]:
    """Each patch judged and applied on the scratch tree in order, up to the first one
    that is not acceptable: the verdicts, and why it stopped (None: it did not)."""
    verdicts: list[PatchVerdict] = []
    for patch in patches:
        verdict = _judge(applier, scratch, patch, base, rule=rule)
        verdicts.append(verdict)
        if progress:
            progress(1)
        if not acceptable(verdict.status, allows_offset(rule)):
            return tuple(verdicts), f"{patch.name}: {verdict.message}; the target was not changed"
    return tuple(verdicts), None


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
    with scratch_copy(target, paths) as backup:
        try:
            changed = sync_back(scratch, target, paths)
        except BaseException:
            sync_back(backup, target, paths)
            raise
    strays = stray_files(target, paths)
    if strays:
        return result(
            False, tuple(changed), f"leftover files in the target: {', '.join(strays[:5])}"
        )
    return result(True, tuple(changed))
