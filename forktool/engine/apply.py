"""The former home of the attempt, verify and ``apply --target`` code, now
:mod:`forktool.engine.attempt`; kept for the code that imports from here."""

from __future__ import annotations

from forktool.engine.attempt import (
    Attempt,
    DirResult,
    PatchVerdict,
    VerifyResult,
    apply_to_directory,
    classify,
    precheck,
    progress_steps,
    read_git_apply,
    resolve_base,
    try_patch,
    verify_series,
)

__all__ = [
    "Attempt",
    "DirResult",
    "PatchVerdict",
    "VerifyResult",
    "apply_to_directory",
    "classify",
    "precheck",
    "progress_steps",
    "read_git_apply",
    "resolve_base",
    "try_patch",
    "verify_series",
]
