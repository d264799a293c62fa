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
from forktool.engine.apply.appliers import APPLIERS, Applier, touched
from forktool.engine.apply.precheck import precheck
from forktool.engine.apply.scratch import scratch_copy, sync_back
from forktool.engine.apply.target_safety import stray_files, target_refusal
from forktool.engine.apply.trials import judge, trial
from forktool.engine.apply.verdict import (
    PatchVerdict,
    acceptable,
    allows_offset,
    applies_unfuzzed,
    is_exact,
    says_already_applied,
)
from forktool.errors import FatalError
from forktool.fork import Fork, Patch

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
        verdict = judge(applier, scratch, patch, base, rule=rule)
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
        verdict = judge(applier, scratch, patch, base, reverse=True, rule=rule)
        if verdict.status == "fails":
            message = verdict.message.replace("does not apply", "does not reverse-apply")
            if says_already_applied(message):
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
        verdict = judge(applier, scratch, patch, base)
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
                found = found._replace(message="absent (--except): it applies on the rest")
            elif says_already_applied(found.message):
                found = found._replace(message="present, though --except says it is left out")
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
    """Peel off every patch that reverse-applies exactly (newest first), then apply all
    but ``exclude``, each exactly. A patch that does not reverse-apply is taken to be
    absent: on a pristine tree a patch that builds on an earlier one applies only once
    that one has (so nothing is asked of it before). A tree in no state of the series
    fails the second step, and the target is not changed."""
    state: dict[str, str] = {}
    for patch in reversed(patches):
        if progress:
            progress(1)
        back = trial(applier, scratch, patch, reverse=True)
        if is_exact(back):
            applier.attempt(scratch, patch, reverse=True)
            state[patch.name] = "applied"
        elif applies_unfuzzed(back) and not is_exact(trial(applier, scratch, patch)):
            # on at an offset, as the fork's rule allows (a reverse at an offset alone
            # may be a look-alike: a patch that applies exactly is absent)
            return state, _off_the_exact_rule(patch, "is on the target only at an offset")
        else:
            state[patch.name] = "absent"
    with scratch_copy(scratch, touched(patches)) as peeled:  # to tell why, on a failure
        verdicts = []
        for position, patch in enumerate(patches):
            if patch.name in exclude:
                verdicts.append(PatchVerdict(patch.name, "exact", "left out (--except)"))
            else:
                verdict = judge(applier, scratch, patch, base)
                verdicts.append(verdict)
                if verdict.status != "exact":
                    needs = _needs_left_out(applier, peeled, patches[: position + 1], exclude)
                    return state, _undeclared(patch, verdict, needs)
            if progress:
                progress(1)
    return dict(reversed(list(state.items()))), tuple(verdicts)


def _needs_left_out(
    applier: Applier, peeled: Path, patches: Sequence[Patch], exclude: set[str]
) -> list[str]:
    """The left-out patches among ``patches`` when the last of them applies exactly on
    ``peeled`` (the target with every applied patch taken off) once they are applied
    too: then it is the arm, not the target, that cannot be; [] when it does not."""
    left_out = [p.name for p in patches if p.name in exclude]
    if not left_out:
        return []
    for patch in patches:
        if not is_exact(trial(applier, peeled, patch)):
            return []
        applier.attempt(peeled, patch, reverse=False)
    return left_out


def _off_the_exact_rule(patch: Patch, why: str) -> str:
    return (
        f"{patch.name}: {why}; --except keeps the exact rule (an arm is proven by exact "
        "applies and reverses), whatever the fork's rule: refresh the patch; the target "
        "was not changed"
    )


def _undeclared(patch: Patch, verdict: PatchVerdict, left_out: Sequence[str]) -> str:
    """Why ``--except`` could not bring the target to its state at ``patch``: it needs
    the ``left_out`` patches (it applies with them), or the target is in no state of
    the series."""
    said = verdict.message.partition(";")[0] if verdict.status == "offset" else verdict.message
    if left_out:  # exact once they are applied: the arm, not the patch, is at fault
        return (
            f"{patch.name}: {said}, with {', '.join(left_out)} left out: this arm "
            "cannot be built (the patch is exact only on top of the left-out one); the "
            "target was not changed"
        )
    if verdict.status == "offset":
        return _off_the_exact_rule(patch, said)
    return (
        f"{patch.name}: the target is in an unknown state: with every patch that "
        f"reverse-applies exactly taken off, {verdict.message}; restore the pristine files "
        "first; the target was not changed"
    )


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
