"""A repository's own git config cannot change a result: every setting that could is
pinned for every git run (forktool/git.py)."""

from __future__ import annotations

from testing.helpers import MiniFork, make_patch

from forktool.builder import RepoBuilder

APP = "".join(f"line {n}\n" for n in range(1, 21))

# Settings a user may well have in .git/config, each of which changes `git log -p`
# (and so patch-ids) or what git prints.
HOSTILE_CONFIG = {
    "diff.context": "0",
    "diff.noprefix": "true",
    "diff.algorithm": "patience",
    "diff.interHunkContext": "10",
    "diff.renames": "copies",
    "log.showSignature": "true",
    "log.decorate": "full",
    "core.abbrev": "40",
    "color.ui": "always",
}


def _fork(builder: RepoBuilder) -> MiniFork:
    """v1.0.1 carries fix 9 as a cherry-pick without -x (found by patch-id) and reverts
    fix 7 with an unrelated title (found by inverse patch-id)."""
    builder.commit("import\n", {"app.py": APP})
    builder.tag("v1.0.0")
    builder.branch("release-1.0")
    nine = APP.replace("line 9\n", "line nine\n")
    fix9 = builder.commit("fix line 9\n", {"app.py": nine})
    builder.checkout("release-1.0")
    seven = APP.replace("line 17\n", "line seventeen\n")
    fix17 = builder.commit("fix line 17\n", {"app.py": seven})
    builder.commit("tidy\n", {"other.txt": "x\n"})
    builder.commit("rework the app\n", {"app.py": APP})
    builder.cherry_pick(fix9, x=False)
    builder.tag("v1.0.1")
    builder.checkout("main")
    patches = {
        "0001-nine.patch": make_patch(builder, "v1.0.0", {"app.py": nine}, "fix line 9"),
        "0002-seventeen.patch": make_patch(builder, "v1.0.0", {"app.py": seven}, "fix 17"),
    }
    fork = MiniFork(builder, "v1.0.0")
    fork.write(patches, commits={"0001-nine.patch": fix9, "0002-seventeen.patch": fix17})
    return fork


def test_repository_diff_config_does_not_change_absorbed_evidence(builder: RepoBuilder) -> None:
    fork = _fork(builder)
    plain = fork.cli("absorbed", "--tag", "v1.0.1", "--format", "json")
    assert plain.code == 0, plain.err
    kinds = [
        [e["kind"] for e in p["evidence"]]  # type: ignore[index]
        for p in plain.json()["patches"]  # type: ignore[union-attr]
    ]
    assert kinds == [["patch-id", "content-present"], ["still-applies", "revert"]]
    for key, value in HOSTILE_CONFIG.items():
        builder.git.run(["config", "--local", key, value], purpose=f"set {key}")
    hostile = fork.cli("absorbed", "--tag", "v1.0.1", "--format", "json")
    assert hostile.code == 0, hostile.err
    assert hostile.json() == plain.json()
