"""Reading the user's files: the one place where an unreadable input becomes exit 2.

Every file forktool reads on the user's behalf (the fork's files, and files named
on the command line) goes through :func:`read_input`, :func:`read_text` or
:func:`parse_json`. Each turns the ways a hostile or broken input fails into one
``FatalError`` naming the file:

- not a regular file: a directory, a FIFO (reading it would block for ever), a
  device, a socket;
- a symlink, for the fork's own files (``follow=False``): git stores a link, not
  its target, so the file that was verified is not the file that ships;
- larger than the caller's limit;
- not UTF-8 (:func:`read_text`), or not JSON / nested deeper than a parser can
  follow (:func:`parse_json`);
- any ``OSError`` on open or read (permission denied, a loop of links, ...).
"""

from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path, PurePosixPath

from forktool.errors import FatalError

# OSErrors that describe the input rather than a bug: a path the user gave or a
# file in the fork that is missing, unreadable or of the wrong kind.
INPUT_ERRNOS = frozenset(
    {
        errno.ENOENT,
        errno.ENOTDIR,
        errno.EISDIR,
        errno.EACCES,
        errno.EPERM,
        errno.ELOOP,
        errno.ENAMETOOLONG,
        errno.ENXIO,
        errno.EFBIG,
    }
)


class UnreadableInput(FatalError):
    """A user's file could not be read as what it should be (exit 2)."""


def describe_os_error(exc: OSError) -> str:
    """``strerror`` in lower case, the way forktool's messages read."""
    text = exc.strerror or type(exc).__name__
    return text[:1].lower() + text[1:]


LINK_HINT = "git commits the link, not its target: replace the link with the directory itself"


def linked_directory(root: Path, rel: str, *, itself: bool = False) -> str | None:
    """Why ``rel`` under ``root`` leaves the fork through a link: the first directory
    on its way (and ``rel`` itself with ``itself``) that is a symlink; or None."""
    parts = PurePosixPath(rel).parts
    current = root
    for depth, part in enumerate(parts if itself else parts[:-1], start=1):
        current = current / part
        if current.is_symlink():
            return (
                f"'{'/'.join(parts[:depth])}' is a symlinked directory (to {os.readlink(current)})"
            )
    return None


# A relative path whose every component is a plain name (not empty, "." or "..").
_PLAIN_RELATIVE = re.compile(r"(?!\.\.?(?:/|$))[^/]+(?:/(?!\.\.?(?:/|$))[^/]+)*")


def _fork_root(path: Path, shown: str) -> Path | None:
    """The fork root ``path`` was built from, when ``shown`` is its path relative to it."""
    text = str(path)
    if _PLAIN_RELATIVE.fullmatch(shown) and text.endswith("/" + shown):
        # The common case, read for every patch of a series: a plain relative name
        # (no empty, "." or ".." component) at the end of the path, compared as text.
        return Path(text[: -len(shown) - 1] or "/")
    parts = PurePosixPath(shown).parts
    if not parts or ".." in parts or PurePosixPath(shown).is_absolute():
        return None
    if path.parts[-len(parts) :] != parts:
        return None
    return Path(*path.parts[: -len(parts)])


# The ways into the fork a run has checked: what is wrong with each folder's (None:
# nothing), by the directory a file was read through and the folder's path relative
# to the fork. A fork load keeps one for every read of its patches, so a series of
# thousands walks its patch folder once, not twice a patch.
Ways = dict[tuple[str, str], "str | None"]


def _linked_way(path: Path, shown: str, ways: Ways | None) -> str | None:
    """:func:`linked_directory` on the way to ``path`` from the fork root it was built
    from (``shown``: its path relative to that root); from ``ways`` when its folder is
    there, and noted there when not."""
    if ways is None:
        root = _fork_root(path, shown)
        return linked_directory(root, shown) if root is not None else None
    key = (str(path).rpartition("/")[0], shown.rpartition("/")[0])
    if key not in ways:
        ways[key] = _linked_way(path, shown, None)
    return ways[key]


def read_input(
    path: Path,
    shown: str,
    *,
    follow: bool = True,
    limit: int | None = None,
    ways: Ways | None = None,
) -> bytes:
    """The bytes of the regular file ``path`` (``shown`` names it in messages).

    ``follow=False`` is for the fork's own files (``shown`` is then the path relative
    to the fork): it refuses a symlink at ``path`` itself, and one on the way to it
    (a symlinked directory inside the fork; a folder found in ``ways`` is not walked
    again, and one walked is noted there).
    """
    try:
        if not follow and path.is_symlink():
            raise UnreadableInput(
                f"{shown}: is a symlink; forktool reads the fork's files only as regular files",
                "git commits the link, not its target: replace the link with the file itself",
            )
        if not follow and (problem := _linked_way(path, shown, ways)):
            raise UnreadableInput(
                f"{shown}: {problem}; forktool reads the fork's files only inside the fork",
                LINK_HINT,
            )
    except OSError as exc:
        raise UnreadableInput(f"{shown}: {describe_os_error(exc)}") from exc
    return read_regular(path, shown, follow=follow, limit=limit)


def read_regular(
    path: Path, shown: str, *, follow: bool = False, limit: int | None = None
) -> bytes:
    """The bytes of ``path`` when it is a regular file (a symlink at ``path`` itself is
    refused unless ``follow``), without :func:`read_input`'s walk for symlinked
    directories: for a file whose way was checked a moment before."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow:
        flags |= os.O_NOFOLLOW
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise UnreadableInput(f"{shown}: {describe_os_error(exc)}") from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
            raise UnreadableInput(f"{shown}: is {kind}")
        if limit is not None and info.st_size > limit:
            raise UnreadableInput(f"{shown}: {info.st_size} bytes is larger than {limit} bytes")
        return _read_all(fd, info.st_size, shown, limit)
    except OSError as exc:
        raise UnreadableInput(f"{shown}: {describe_os_error(exc)}") from exc
    finally:
        os.close(fd)


def _read_all(fd: int, size: int, shown: str, limit: int | None) -> bytes:
    """What is left to read of ``fd`` (``size``: its length when it was opened; a file
    that grew since is read to its end, within ``limit``). Straight from the file
    descriptor: no buffered file object made, one read for the whole file."""
    chunks = []
    total = 0
    want = size + 1  # the whole file in one read; the next one (empty) ends it
    while chunk := os.read(fd, want):
        chunks.append(chunk)
        total += len(chunk)
        if limit is not None and total > limit:
            raise UnreadableInput(f"{shown}: grew past {limit} bytes while it was read")
        want = 1 << 16
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def decode_text(data: bytes, shown: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise UnreadableInput(
            f"{shown}:{line}: not valid UTF-8 (byte {exc.start})", "save the file as UTF-8"
        ) from exc


def read_text(path: Path, shown: str, *, follow: bool = True, limit: int | None = None) -> str:
    """The UTF-8 text of the regular file ``path``."""
    return decode_text(read_input(path, shown, follow=follow, limit=limit), shown)


def parse_json(data: bytes, shown: str) -> object:
    """A JSON document, or exit 2 naming the file (garbage, bad UTF-8, absurd nesting)."""
    import json  # not before git starts on a series (verify reads no JSON)

    try:
        return json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UnreadableInput(f"{shown}: not valid JSON: {exc}") from exc
    except RecursionError:
        raise UnreadableInput(f"{shown}: not valid JSON: nested too deeply") from None


def is_input_os_error(exc: OSError, roots: tuple[Path, ...]) -> bool:
    """Whether ``exc`` is an expected failure to read or write a user's file.

    True only for the errnos in :data:`INPUT_ERRNOS` on a file under one of
    ``roots`` (the fork, the working directory, paths given on the command
    line). Anything else (a temporary file of forktool's own, an unexpected
    errno) is a bug or an environment failure and keeps its traceback.
    """
    if exc.errno not in INPUT_ERRNOS or not exc.filename:
        return False
    try:
        target = Path(os.fsdecode(exc.filename)).absolute()
    except (TypeError, ValueError):
        return False
    return any(target == root or target.is_relative_to(root) for root in roots)
