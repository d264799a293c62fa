"""A fork's .gitattributes never changes what forktool writes or compares.

``-diff``/``binary`` would turn a text patch into "Binary files differ" or a GIT
binary patch, a diff driver (``diff=python``, or one with textconv or xfuncname from
the repository's config) would change hunk headers or rewrite the text, ``text``/
``eol`` would convert line endings. Every git call that produces a diff runs in an
attribute-free view (forktool/git.py), so the canonical form, export, refresh, verify
and check give the same bytes and verdicts with or without the attributes.
"""

from __future__ import annotations

import pytest
from testing.helpers import run_cli, snapshot_tree

from forktool.builder import RepoBuilder

HOSTILE = [
    "* -diff\n",
    "* binary\n",
    "*.py diff=python\n",
    "*.py diff=shout\n",  # a driver from the repository's config: textconv + xfuncname
    "* text eol=crlf\n",
    "*.py diff=shout\n*.patch -diff -text\n",
]


def _fork_files(snapshot: dict[str, bytes]) -> dict[str, bytes]:
    return {k: v for k, v in snapshot.items() if not k.startswith(".git")}


def _shout_driver(fork: RepoBuilder) -> None:
    for key, value in (
        ("diff.shout.textconv", "tr a-z A-Z <"),
        ("diff.shout.xfuncname", "^(.*)$"),
        ("diff.shout.algorithm", "patience"),
    ):
        fork.git.run(["config", key, value], purpose="a diff driver")


@pytest.mark.parametrize("attributes", HOSTILE)
def test_gitattributes_do_not_change_what_forktool_writes_or_compares(
    example_fork: RepoBuilder, attributes: str
) -> None:
    root = example_fork.path
    assert run_cli("-C", root, "import", "--branch", "p").code == 0
    clean = snapshot_tree(root)
    _shout_driver(example_fork)
    (root / ".gitattributes").write_text(attributes)
    example_fork.git.run(["add", ".gitattributes"], purpose="stage")
    example_fork.git.run(
        ["-c", "user.name=A", "-c", "user.email=a@x", "commit", "-qm", "attributes"],
        purpose="commit the attributes",
    )
    for argv in (("fmt", "--check"), ("verify",), ("check", "--skip", "align")):
        result = run_cli("-C", root, *argv)
        assert result.code == 0, (argv, result.out, result.err)
    exported = run_cli("-C", root, "export", "--from", "p", "--format", "json")
    assert exported.code == 0, exported.err
    assert exported.json()["written"] == []  # type: ignore[index]
    after = snapshot_tree(root)
    assert _fork_files(after) == _fork_files(clean)
    refreshed = run_cli("-C", root, "refresh", "--onto", "v1.1.0", "--format", "json")
    assert refreshed.code == 0, refreshed.err
    assert refreshed.json()["written"] == []  # type: ignore[index]
