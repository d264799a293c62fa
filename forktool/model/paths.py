"""Whether a path named in a patch is safe to write: the one place that decides.

Patches are applied with ``-p1`` (the first component is stripped whatever it is:
``a/`` and ``b/`` in git diffs, ``pkg.orig/`` and ``pkg/`` in quilt diffs) and
``/dev/null`` marks a created or deleted file. Every other check in forktool that
meets a path from a patch, a series line or a ``rename from`` line asks here, so a
path refused in one place is refused everywhere.
"""

from __future__ import annotations

import re
from functools import lru_cache

DEV_NULL = "/dev/null"

# A backslash is an ordinary character in a POSIX file name, but GNU patch on
# Windows and some archivers treat it as a separator: never let it carry a '..'.
_SEGMENT_SEPARATORS = re.compile(r"[/\\]")

# A path that passes every check of check_relative_path at a glance: names of letters,
# digits and "_+-." (none starting with "."), joined by single slashes. Most paths
# in a series look so; anything else is checked in full.
_PLAIN_PATH = re.compile(r"[\w+-][\w.+-]*(?:/[\w+-][\w.+-]*)*", re.ASCII)


def is_dev_null(raw: str) -> bool:
    """True for the name that marks a created (old side) or deleted (new side) file."""
    return raw == DEV_NULL


@lru_cache(maxsize=1 << 14)  # a patch names each path on two or three lines
def strip_components(path: str, strip: int = 1) -> str | None:
    """The path with ``strip`` leading components removed, like ``patch -p<strip>``.

    Runs of slashes count as one separator, as in GNU patch. Returns None when
    nothing is left (``a/`` or ``foo`` with ``-p1``).
    """
    if strip < 0:
        raise ValueError(f"strip must be >= 0, got {strip}")
    if strip == 0:
        return path or None
    parts = [part for part in path.split("/") if part]
    if len(parts) <= strip:
        return None
    return "/".join(parts[strip:])


def check_relative_path(path: str) -> str | None:
    """Why an already-stripped path is unsafe to write below the tree, or None.

    For names that are never stripped: git's ``rename from``/``copy to`` lines,
    ``Index:`` lines, series entries.
    """
    return None if _PLAIN_PATH.fullmatch(path) else _path_problem(path)


def _path_problem(path: str) -> str | None:
    """:func:`check_relative_path`'s checks, one by one."""
    if "\0" in path:
        return "path contains a NUL byte"
    if path == "":
        return "empty path"
    if path.startswith("/"):
        return f"absolute path '{path}'"
    if ".." in _SEGMENT_SEPARATORS.split(path):
        return f"path '{path}' has a '..' segment"
    # Case-insensitive: on macOS and Windows '.GIT' is the same directory.
    if any(part.lower() == ".git" for part in path.split("/")):
        return f"path '{path}' writes into .git"
    return None


@lru_cache(maxsize=1 << 14)
def check_patch_path(raw: str, strip: int = 1) -> str | None:
    """Why a path as written in a ``---``/``+++``/``diff --git`` line is unsafe, or None.

    The whole raw path is checked, stripped component included: no legitimate
    patch has ``..`` or ``.git`` in its ``a/`` prefix, and a tool that strips
    differently must not be able to reach them.
    """
    if is_dev_null(raw):
        return None
    reason = check_relative_path(raw)
    if reason is not None:
        return reason
    if strip_components(raw, strip) is None:
        plural = "" if strip == 1 else "s"
        return f"path '{raw}' has nothing left after stripping {strip} component{plural}"
    return None
