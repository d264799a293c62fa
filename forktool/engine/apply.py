"""Where the names of the former ``engine/apply.py`` live now, for code written against it.

That module held several jobs; each has its own module, and new code imports from it:

* :mod:`forktool.engine.attempt`: one patch tried (git's and GNU patch's output read,
  the exactness rule, :func:`~forktool.engine.attempt.classify`, :func:`precheck`);
* :mod:`forktool.engine.verify`: a series onto a commit, in a temporary index;
* :mod:`forktool.engine.appliers`: one patch onto a plain directory, and its modes;
* :mod:`forktool.engine.apply_target`: a series onto a plain directory (``apply --target``).
"""

from __future__ import annotations

from forktool.engine.apply_target import DirResult, apply_to_directory, progress_steps
from forktool.engine.attempt import (
    Attempt,
    PatchVerdict,
    Status,
    acceptable,
    classify,
    is_exact,
    precheck,
    read_git_apply,
    try_patch,
)
from forktool.engine.verify import VerifyResult, resolve_base, verify_series

__all__ = [
    "Attempt",
    "DirResult",
    "PatchVerdict",
    "Status",
    "VerifyResult",
    "acceptable",
    "apply_to_directory",
    "classify",
    "is_exact",
    "precheck",
    "progress_steps",
    "read_git_apply",
    "resolve_base",
    "try_patch",
    "verify_series",
]
