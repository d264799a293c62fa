"""Shared by several test modules (moved out of test_sync.py)."""

from __future__ import annotations

from forktool.builder import RepoBuilder
from forktool.model.record import empty_section
from testing.helpers import make_patch

IDENTITY = {"GIT_AUTHOR_NAME": "Sync Bot", "GIT_AUTHOR_EMAIL": "sync@fork.example"}


def _lines(name: str, count: int = 12) -> str:
    return "".join(f"{name} line {i}\n" for i in range(1, count + 1))


V1 = {name: _lines(name) for name in ("a.py", "b.py", "c.py", "d.py")}


def _edit(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


def build_sync_fork(repo: RepoBuilder) -> RepoBuilder:
    """The fixture history of this module's docstring, in the empty repository ``repo``."""
    repo.commit("upstream: import\n", dict(V1))
    repo.tag("v1")
    repo.branch("upstream", "v1")
    repo.checkout("upstream")
    fix = repo.commit(
        "a: fix line 5\n", {"a.py": _edit(V1["a.py"], "a.py line 5\n", "a.py line 5 fixed\n")}
    )
    repo.commit(
        "v2 work\n",
        {
            "c.py": "c header 1\nc header 2\nc header 3\n" + V1["c.py"],
            "d.py": _edit(V1["d.py"], "d.py line 6\n", "d.py line 6 rewritten upstream\n"),
        },
    )
    repo.tag("v2")
    repo.checkout("main")
    patches = {
        "0001-a.patch": make_patch(
            repo,
            "v1",
            {"a.py": _edit(V1["a.py"], "a.py line 5\n", "a.py line 5 fixed\n")},
            "a: fix line 5",
        ),
        "0002-b.patch": make_patch(
            repo,
            "v1",
            {"b.py": _edit(V1["b.py"], "b.py line 3\n", "b.py line 3 forked\n")},
            "b: fork change",
        ),
        "0003-c.patch": make_patch(
            repo,
            "v1",
            {"c.py": _edit(V1["c.py"], "c.py line 8\n", "c.py line 8 forked\n")},
            "c: fork change",
        ),
        "0004-d.patch": make_patch(
            repo,
            "v1",
            {"d.py": _edit(V1["d.py"], "d.py line 6\n", "d.py line 6 forked\n")},
            "d: fork change",
        ),
    }
    files: dict[str, str | bytes | None] = {f"patches/{n}": data for n, data in patches.items()}
    files["series"] = "".join(f"{n}\n" for n in patches)
    files["upstream.map"] = f"0001-a.patch {fix}\n" + "".join(
        f"{n} none\n" for n in list(patches)[1:]
    )
    files["forktool.yaml"] = (
        f"pin:\n  tag: v1\n  commit: {repo.rev('v1')}\nlayout: merged\nrelease_tags: 'v*'\n"
    )
    files["alignment.ledger"] = "".join(
        f"add {p} permanent the fork's own files\n"
        for p in (
            "forktool.yaml",
            "series",
            "upstream.map",
            "patches/**",
            "alignment.ledger",
            "FORK.md",
        )
    )
    files["FORK.md"] = "# Fork\n\n" + empty_section()
    repo.commit("fork: carry four patches on v1\n", files)
    return repo


def v3_with_0002_cherry_picked(fork: RepoBuilder) -> None:
    """Upstream v3: v2 plus a cherry-pick of the fork's 0002 change (b.py line 3)."""
    fork.checkout("upstream")
    fork.commit(
        "b: fork change\n\n(cherry picked from commit " + "e" * 40 + ")\n",
        {"b.py": _edit(V1["b.py"], "b.py line 3\n", "b.py line 3 forked\n")},
    )
    fork.tag("v3")
    fork.checkout("main")


def _drop_conflicting_patch(fork: RepoBuilder) -> None:
    _drop(fork, "0004-d.patch")


def _drop(fork: RepoBuilder, name: str) -> None:
    root = fork.path
    umap = "".join(
        line
        for line in (root / "upstream.map").read_text().splitlines(keepends=True)
        if not line.startswith(name + " ")
    )
    fork.commit(
        f"fork: drop {name}\n",
        {
            "series": (root / "series").read_text().replace(f"{name}\n", ""),
            "upstream.map": umap,
            f"patches/{name}": None,
        },
    )
