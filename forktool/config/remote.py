"""Names git is handed from the config or the command line: the upstream remote's
name and URL, checked before git ever sees them."""

from __future__ import annotations

# Transports that run a command or read a file descriptor rather than reach a repository.
_COMMAND_TRANSPORTS = ("ext::", "fd::")


def url_problem(url: str) -> str | None:
    """Why ``url`` must not be handed to git as a remote URL, or None. A URL that starts
    with ``-`` is read as an option (``--upload-pack=...`` runs a command); ``ext::`` runs
    a command and ``fd::`` talks to a file descriptor. Applied to upstream.url when the
    config is read and to a remote's URL from git's config before it is fetched from."""
    if url.startswith("-"):
        return "starts with '-', so git would read it as an option"
    if url.lower().startswith(_COMMAND_TRANSPORTS):
        return f"uses the {url.split('::', 1)[0]}:: transport, which runs a command"
    if not url.isprintable():
        return "contains control characters"
    return None


def remote_name_problem(name: str) -> str | None:
    """Why ``name`` is no git remote name, or None."""
    if name.startswith("-") or name.startswith(".") or name.endswith(("/", ".lock")):
        return "is not a remote name"
    if ".." in name or any(c.isspace() or c in "~^:?*[\\" or not c.isprintable() for c in name):
        return "is not a remote name"
    return None


def branch_name_problem(name: str) -> str | None:
    """Why ``name`` is no branch name git would take, or None."""
    bad = name.startswith(("-", "/")) or name.endswith("/") or ".." in name
    if bad or any(c.isspace() or c in "~^:?*[\\" or not c.isprintable() for c in name):
        return "is not a branch name"
    return None
