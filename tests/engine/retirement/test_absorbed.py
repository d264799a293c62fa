"""``forktool absorbed``: ancestry decides, evidence can only object, missing knowledge is exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from testing.helpers import MiniFork, make_patch, run_cli, snapshot_tree

from forktool.builder import RepoBuilder
from forktool.config import load_config
from forktool.demo import DemoUpstream
from forktool.fork import load_fork

P1 = "0001-config-do-not-crash-on-an-empty-config-file.patch"
P2 = "0002-engine-retry-on-timeout.patch"
P3 = "0003-engine-decode-input-as-UTF-8.patch"
P4 = "0004-fork-identify-the-fork-s-builds.patch"

APP = "".join(f"line {n}\n" for n in range(1, 21))


def _edit(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


def test_demo_release_shows_retire_keep_and_revisit(
    example_fork: RepoBuilder, demo_upstream: DemoUpstream
) -> None:
    result = run_cli("-C", example_fork.path, "absorbed", "--tag", "v1.2.0", "--format", "json")
    assert result.code == 0, result.err
    up = demo_upstream
    cherry = up.fix_utf8_cherry
    assert (
        result.json()
        == {
            "tag": "v1.2.0",
            "tag_commit": up.tags["v1.2.0"],
            "patches": [
                {
                    "patch": P1,
                    "upstream_pr": "https://git.example.org/pulse/pulls/41",
                    "upstream_commits": [up.fix_empty_config],
                    "verdict": "retire",
                    "ancestor": True,
                    "first_release": "v1.2.0",
                    "evidence": [
                        {
                            "kind": "content-present",
                            "commit": None,
                            "detail": "the patch reverse-applies exactly on v1.2.0",
                        }
                    ],
                    "reason": f"{up.fix_empty_config[:12]} in v1.2.0 by ancestry",
                },
                {
                    "patch": P2,
                    "upstream_pr": "https://git.example.org/pulse/pulls/57",
                    "upstream_commits": [up.fix_retry_timeout],
                    "verdict": "keep",
                    "ancestor": False,
                    "first_release": "v1.3.0rc0",
                    "evidence": [
                        {
                            "kind": "offset",  # drift: it applies, moved; not "no longer applies"
                            "commit": None,
                            "detail": "pulse/engine.py: hunk 1 applies only at offset +3 (line 99) on v1.2.0; "
                            "run 'forktool refresh'",
                        }
                    ],
                    "reason": f"{up.fix_retry_timeout[:12]} not an ancestor of v1.2.0",
                },
                {
                    "patch": P3,
                    "upstream_pr": "https://git.example.org/pulse/pulls/60",
                    "upstream_commits": [up.fix_utf8],
                    "verdict": "revisit",
                    "ancestor": False,
                    "first_release": "v1.3.0rc0",
                    "evidence": [
                        {
                            "kind": "cherry-pick",
                            "commit": cherry,
                            "detail": f"{cherry[:12]} 'engine: decode input as UTF-8' in v1.2.0 "
                            f"was cherry-picked from {up.fix_utf8[:12]}",
                        },
                        {
                            "kind": "patch-id",
                            "commit": cherry,
                            "detail": f"{cherry[:12]} in v1.2.0 makes the same change "
                            "(same patch-id --stable)",
                        },
                        {
                            "kind": "no-longer-applies",
                            "commit": None,
                            # judged after 0002, which edits the same file
                            "detail": "after the series' earlier patches: pulse/engine.py: hunk 1 does "
                            "not apply at line 39 on v1.2.0: its lines are not there; it "
                            "reverse-applies only at an offset: the change looks present, moved",
                        },
                    ],
                    "reason": f"{up.fix_utf8[:12]} not an ancestor of v1.2.0, but cherry-pick, "
                    "patch-id evidence says the change may be there: decide by hand "
                    "(retire --force --reason, or keep)",
                },
                {
                    "patch": P4,
                    "upstream_pr": None,
                    "upstream_commits": [],
                    "verdict": "fork-only",
                    "ancestor": None,
                    "first_release": None,
                    "evidence": [],
                    "reason": "mapped to 'none': no upstream commit can retire it",
                },
            ],
        }
    )


def test_fix_one_commit_after_the_cut_is_kept_until_the_next_rc(example_fork: RepoBuilder) -> None:
    verdicts = {}
    for tag in ("v1.2.0", "v1.3.0rc0"):
        result = run_cli("-C", example_fork.path, "absorbed", "--tag", tag, "--format", "json")
        assert result.code == 0, result.err
        patch = result.json()["patches"][1]  # type: ignore[index]
        verdicts[tag] = (patch["verdict"], patch["ancestor"], patch["first_release"])
    assert verdicts == {
        "v1.2.0": ("keep", False, "v1.3.0rc0"),
        "v1.3.0rc0": ("retire", True, "v1.3.0rc0"),
    }


def test_absorbed_leaves_the_repository_byte_identical(example_fork: RepoBuilder) -> None:
    before = snapshot_tree(example_fork.path)
    for fmt in ("text", "json"):
        result = run_cli("-C", example_fork.path, "absorbed", "--tag", "v1.2.0", "--format", fmt)
        assert result.code == 0, result.err
    assert snapshot_tree(example_fork.path) == before


def test_commit_graph_option_writes_only_the_commit_graph(example_fork: RepoBuilder) -> None:
    before = snapshot_tree(example_fork.path)
    plain = run_cli("-C", example_fork.path, "absorbed", "--tag", "v1.2.0", "--format", "json")
    result = run_cli(
        "-C", example_fork.path, "absorbed", "--tag", "v1.2.0", "--commit-graph", "--format", "json"
    )
    assert result.code == 0, result.err
    assert result.json() == plain.json()
    after = snapshot_tree(example_fork.path)
    changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    assert changed and all(k.startswith(".git/objects/info/") for k in changed), changed
    assert ".git/objects/info/commit-graph" in after


def test_unknown_tag_is_exit_2(example_fork: RepoBuilder) -> None:
    result = run_cli("-C", example_fork.path, "absorbed", "--tag", "v9.9.9")
    assert result.code == 2
    assert result.error_lines == [
        "error: unknown tag 'v9.9.9'",
        "hint: fetch it (pass --fetch, or git fetch upstream tag v9.9.9), "
        "or check the name (git tag --list)",
    ]


# -- small upstreams built for one question each -----------------------------------------


def _fork(
    repo: RepoBuilder, pin: str, patches: dict[str, bytes], commits: dict[str, str]
) -> MiniFork:
    fork = MiniFork(repo, pin)
    fork.write(patches, commits=commits, extra_config="upstream:\n  remote: origin\n")
    return fork


def test_patch_mapped_to_two_commits_is_kept_until_both_are_in(builder: RepoBuilder) -> None:
    builder.commit("import\n", {"app.py": APP})
    builder.tag("v1.0.0")
    one = _edit(APP, "line 3\n", "line three\n")
    both = _edit(one, "line 15\n", "line fifteen\n")
    first = builder.commit("fix part one\n", {"app.py": one})
    builder.tag("v1.1.0")
    second = builder.commit("fix part two\n", {"app.py": both})
    builder.tag("v1.2.0")
    patch = make_patch(builder, "v1.0.0", {"app.py": both}, "fix both parts")
    fork = _fork(
        builder, "v1.0.0", {"0001-fix.patch": patch}, {"0001-fix.patch": f"{first},{second}"}
    )

    partly = fork.cli("absorbed", "--tag", "v1.1.0", "--format", "json")
    assert partly.code == 0, partly.err
    entry = partly.json()["patches"][0]  # type: ignore[index]
    assert (entry["verdict"], entry["ancestor"], entry["first_release"]) == (
        "keep",
        False,
        "v1.2.0",
    )
    assert entry["reason"] == (
        f"{second[:12]} not an ancestor of v1.1.0 (1 of 2 mapped commits are)"
    )
    whole = fork.cli("absorbed", "--tag", "v1.2.0", "--format", "json")
    entry = whole.json()["patches"][0]  # type: ignore[index]
    assert (entry["verdict"], entry["ancestor"], entry["first_release"]) == (
        "retire",
        True,
        "v1.2.0",
    )
    assert [e["kind"] for e in entry["evidence"]] == ["content-present"]


def test_change_lost_without_a_revert_is_revisit_because_the_patch_still_applies(
    builder: RepoBuilder,
) -> None:
    builder.commit("import\n", {"app.py": APP})
    builder.tag("v1.0.0")
    fixed = _edit(APP, "line 7\n", "line seven\n")
    fix = builder.commit("fix line 7\n", {"app.py": fixed})
    # A bad merge resolution loses the fix while changing something else: no revert
    # names it, and its diff is not the fix's inverse.
    builder.commit("merge the feature branch\n", {"app.py": _edit(APP, "line 20\n", "line 2O\n")})
    builder.tag("v1.1.0")
    patch = make_patch(builder, "v1.0.0", {"app.py": fixed}, "fix line 7")
    fork = _fork(builder, "v1.0.0", {"0001-fix.patch": patch}, {"0001-fix.patch": fix})
    result = fork.cli("absorbed", "--tag", "v1.1.0", "--format", "json")
    assert result.code == 0, result.err
    entry = result.json()["patches"][0]  # type: ignore[index]
    assert entry["verdict"] == "revisit"
    assert entry["ancestor"] is True
    assert entry["evidence"] == [
        {
            "kind": "still-applies",
            "commit": None,
            "detail": "the patch still applies forward exactly on v1.1.0: its change is not there",
        }
    ]
    assert entry["reason"] == (
        f"{fix[:12]} in v1.1.0 by ancestry, yet the patch still applies forward exactly on "
        "v1.1.0: the change is absent there (reverted, or lost in a merge)"
    )


def patch_file(fork: MiniFork) -> Path:
    return fork.root / "patches" / "0001-fix.patch"


C_FILE = "".join(
    f"int f{n}(int x)\n{{\n    if (x < {n}) {{\n        return ERROR;\n    }}\n\n"
    f"    return {n};\n}}\n\n"
    for n in range(1, 5)
)


def test_a_fix_that_applies_again_below_its_own_copy_is_retired(builder: RepoBuilder) -> None:
    """The fix adds a check that ends as its leading context does (``return ERROR; }``
    and a blank line: nginx's "Mp4: prevent chunk index underflow"), so on the tag it
    also applies forward, a few lines below its own copy. It reverse-applies at its own
    lines: the forward apply is a look-alike, and ancestry's retire stands (it was held
    at revisit, saying the change was absent)."""
    builder.commit("import\n", {"f.c": C_FILE})
    builder.tag("v1.0.0")
    check = "        return ERROR;\n    }\n\n"
    fixed = C_FILE.replace(
        check + "    return 2;", check + "    if (x == 99) {\n" + check + "    return 2;", 1
    )
    fix = builder.commit("f2: refuse 99\n", {"f.c": fixed})
    builder.commit("more\n", {"other.txt": "x\n"})
    builder.tag("v1.1.0")
    patch = make_patch(builder, "v1.0.0", {"f.c": fixed}, "f2: refuse 99")
    fork = _fork(builder, "v1.0.0", {"0001-fix.patch": patch}, {"0001-fix.patch": fix})
    with fork.repo.git.temp_index("v1.1.0") as index:  # forward again: below its copy
        again = index.run(["apply", "--cached", "--check", "-v", str(patch_file(fork))],
                          purpose="test", check=False)  # fmt: skip
    assert again.ok and "(offset 4 lines)" in again.err, again.err
    entry = fork.cli("absorbed", "--tag", "v1.1.0", "--format", "json").json()["patches"][0]  # type: ignore[index]
    assert entry["verdict"] == "retire", entry
    assert [e["kind"] for e in entry["evidence"]] == ["content-present"]


def test_release_branch_cherry_pick_without_x_is_found_by_patch_id(builder: RepoBuilder) -> None:
    builder.commit("import\n", {"app.py": APP})
    builder.tag("v1.0.0")
    builder.branch("release-1.0")
    builder.commit("unrelated\n", {"other.txt": "x\n"})
    fixed = _edit(APP, "line 9\n", "line nine\n")
    fix = builder.commit("fix line 9\n", {"app.py": fixed})
    builder.checkout("release-1.0")
    picked = builder.cherry_pick(fix, x=False)
    builder.tag("v1.0.1")
    builder.checkout("main")
    patch = make_patch(builder, "v1.0.0", {"app.py": fixed}, "fix line 9")
    fork = _fork(builder, "v1.0.0", {"0001-fix.patch": patch}, {"0001-fix.patch": fix})
    result = fork.cli("absorbed", "--tag", "v1.0.1", "--format", "json")
    entry = result.json()["patches"][0]  # type: ignore[index]
    assert entry["verdict"] == "revisit"
    assert entry["first_release"] is None
    assert [(e["kind"], e["commit"]) for e in entry["evidence"]] == [
        ("patch-id", picked),
        ("content-present", None),
    ]


def test_fork_only_patch_has_no_ancestor(builder: RepoBuilder) -> None:
    builder.commit("import\n", {"app.py": APP})
    builder.tag("v1.0.0")
    patch = make_patch(builder, "v1.0.0", {"app.py": APP + "fork\n"}, "fork only")
    fork = _fork(builder, "v1.0.0", {"0001-fork.patch": patch}, {})
    entry = fork.cli("absorbed", "--tag", "v1.0.0", "--format", "json").json()["patches"][0]  # type: ignore[index]
    assert (entry["verdict"], entry["ancestor"], entry["first_release"]) == (
        "fork-only",
        None,
        None,
    )


def test_unknown_commit_is_exit_2_naming_it_and_how_to_fetch(builder: RepoBuilder) -> None:
    builder.commit("import\n", {"app.py": APP})
    builder.tag("v1.0.0")
    patch = make_patch(builder, "v1.0.0", {"app.py": APP + "x\n"}, "x")
    ghost = "0123456789abcdef0123456789abcdef01234567"
    fork = _fork(builder, "v1.0.0", {"0001-x.patch": patch}, {"0001-x.patch": ghost})
    before = snapshot_tree(fork.root)
    result = fork.cli("absorbed", "--tag", "v1.0.0")
    assert result.code == 2
    assert result.error_lines == [
        f"error: upstream.map: 0001-x.patch: commit {ghost} is not in this repository",
        "hint: there is no upstream to fetch it from (no remote 'origin', no upstream.url): "
        "add the remote (git remote add origin <url>) or set upstream.url in forktool.yaml",
    ]
    assert snapshot_tree(fork.root) == before
    builder.git.run(["remote", "add", "origin", str(builder.path)], purpose="test")
    for command in (["absorbed", "--tag", "v1.0.0"], ["retire", "0001-x.patch", "--tag", "v1.0.0"]):
        result = fork.cli(*command)  # retire has no --fetch: the hint names absorbed's
        assert result.code == 2
        assert result.error_lines[1:] == [
            f"hint: fetch it: git fetch origin {ghost} (forktool absorbed --fetch does this)"
        ]


def test_commit_id_naming_a_tree_or_blob_is_exit_2(builder: RepoBuilder) -> None:
    builder.commit("import\n", {"app.py": APP})
    builder.tag("v1.0.0")
    tree = builder.git.out(["rev-parse", "v1.0.0^{tree}"], purpose="tree")
    blob = builder.git.out(["rev-parse", "v1.0.0:app.py"], purpose="blob")
    patch = make_patch(builder, "v1.0.0", {"app.py": APP + "x\n"}, "x")
    for oid, kind in ((tree, "tree"), (blob, "blob")):
        fork = _fork(builder, "v1.0.0", {"0001-x.patch": patch}, {"0001-x.patch": oid})
        result = fork.cli("absorbed", "--tag", "v1.0.0")
        assert result.code == 2
        assert result.error_lines[0] == (
            f"error: upstream.map: 0001-x.patch: {oid} is a {kind}, not a commit"
        )


def test_fetch_brings_in_an_unfetched_commit(builder: RepoBuilder, tmp_path: Path) -> None:
    builder.commit("import\n", {"app.py": APP})
    builder.tag("v1.0.0")
    clone = RepoBuilder.clone(builder.path, tmp_path / "fork")
    fixed = _edit(APP, "line 2\n", "line two\n")
    fix = builder.commit("fix line 2\n", {"app.py": fixed})
    builder.tag("v1.1.0")
    patch = make_patch(clone, "v1.0.0", {"app.py": fixed}, "fix line 2")
    fork = _fork(clone, "v1.0.0", {"0001-fix.patch": patch}, {"0001-fix.patch": fix})
    missing = fork.cli("absorbed", "--tag", "v1.1.0")
    assert missing.code == 2
    assert missing.error_lines[0] == "error: unknown tag 'v1.1.0'"
    fetched = fork.cli("absorbed", "--tag", "v1.1.0", "--fetch", "--format", "json")
    assert fetched.code == 0, fetched.err
    entry = fetched.json()["patches"][0]  # type: ignore[index]
    assert (entry["verdict"], entry["first_release"]) == ("retire", "v1.1.0")


def test_shallow_clone_is_refused_with_the_fix_and_fetch_deepens_it(
    builder: RepoBuilder, tmp_path: Path
) -> None:
    builder.commit("import\n", {"app.py": APP})
    builder.tag("v1.0.0")
    fixed = _edit(APP, "line 4\n", "line four\n")
    fix = builder.commit("fix line 4\n", {"app.py": fixed})
    builder.commit("more\n", {"other.txt": "y\n"})
    builder.tag("v1.1.0")
    patch = make_patch(builder, "v1.0.0", {"app.py": fixed}, "fix line 4")
    shallow = RepoBuilder.shallow_clone(builder.path, tmp_path / "shallow", depth=1)
    shallow.git.run(["fetch", "-q", "--depth=1", "origin", "tag", "v1.0.0"], purpose="pin")
    fork = _fork(shallow, "v1.0.0", {"0001-fix.patch": patch}, {"0001-fix.patch": fix})
    before = snapshot_tree(fork.root)
    refused = fork.cli("absorbed", "--tag", "v1.1.0")
    assert refused.code == 2
    assert refused.error_lines == [
        "error: this repository is a shallow clone: ancestry cannot be decided on truncated history",
        "hint: git fetch --unshallow origin (forktool absorbed --fetch does this)",
    ]
    assert snapshot_tree(fork.root) == before
    deepened = fork.cli("absorbed", "--tag", "v1.1.0", "--fetch", "--format", "json")
    assert deepened.code == 0, deepened.err
    assert deepened.json()["patches"][0]["verdict"] == "retire"  # type: ignore[index]
    assert shallow.git.is_shallow() is False


def test_apply_checks_in_one_call_agree_with_one_check_per_patch(
    example_fork: RepoBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bulk ``git apply --check --reject`` reading gives what per-patch checks give."""
    from forktool.engine.retirement import apply_states

    bulk = {}
    for tag in ("v1.1.0", "v1.2.0", "v1.3.0"):
        bulk[tag] = run_cli("-C", example_fork.path, "absorbed", "--tag", tag, "--format", "json")
    monkeypatch.setattr(apply_states, "_attempts_in_bulk", lambda *args, **kwargs: None)
    for tag, expected in bulk.items():
        single = run_cli("-C", example_fork.path, "absorbed", "--tag", tag, "--format", "json")
        assert single.code == expected.code == 0
        assert single.json() == expected.json(), tag


def test_patch_id_evidence_is_exactly_the_commits_git_gives_the_patch_id(
    builder: RepoBuilder,
) -> None:
    """Only commits whose files fit a patch's are read for patch ids: the evidence is
    still exactly the commits `git patch-id --stable` gives the patch's id. Copies
    beside a mode change, an added empty file or another edit in the same directory
    are told apart as git tells them."""
    builder.commit("import\n", {"src/app.py": APP, "src/run.sh": "run\n", "src/b.py": "b\n"})
    builder.tag("v1.0.0")
    builder.branch("release-1.0")
    fixed = _edit(APP, "line 9\n", "line nine\n")
    fix = builder.commit("fix line 9\n", {"src/app.py": fixed})
    builder.checkout("release-1.0")
    copies = [builder.commit("fix line 9\n", {"src/app.py": fixed})]
    builder.commit("undo\n", {"src/app.py": APP})
    (builder.path / "src" / "run.sh").chmod(0o755)
    copies.append(builder.commit("fix line 9, mode\n", {"src/app.py": fixed}))
    builder.commit("undo\n", {"src/app.py": APP})
    copies.append(builder.commit("fix line 9, empty\n", {"src/app.py": fixed, "src/e": ""}))
    builder.commit("undo\n", {"src/app.py": APP})
    copies.append(builder.commit("fix line 9 and b\n", {"src/app.py": fixed, "src/b.py": "bb\n"}))
    builder.tag("v1.0.1")
    builder.checkout("main")
    patch = make_patch(builder, "v1.0.0", {"src/app.py": fixed}, "fix line 9")
    fork = _fork(builder, "v1.0.0", {"0001-fix.patch": patch}, {"0001-fix.patch": fix})
    result = fork.cli("absorbed", "--tag", "v1.0.1", "--format", "json")
    entry = result.json()["patches"][0]  # type: ignore[index]

    def patch_id(data: bytes) -> str:
        return builder.git.patch_ids(data)[0][0]

    def shown(commit: str) -> bytes:
        return builder.git.run(["show", "--format=commit %H", commit], purpose="show").stdout

    same = [c for c in copies if patch_id(shown(c)) == patch_id(patch)]  # git's own answer
    assert same and len(same) < len(copies)
    found = [e["commit"] for e in entry["evidence"] if e["kind"] == "patch-id"]
    assert sorted(found) == sorted(same)


def test_a_patch_on_top_of_an_earlier_one_is_judged_as_the_series_meets_it(
    builder: RepoBuilder,
) -> None:
    """Two fork patches append to one file, the second after the first's line (as
    libarchive forks' README notes do): alone on the tag the second meets lines the
    series never shows it. Its evidence comes from the tag with the first applied, so
    at the pin it is clean (verify says exact) instead of "no longer applies; refresh",
    and where upstream moved the file both are the same offset, which says so."""
    news = "".join(f"news {n}\n" for n in range(1, 21))
    builder.commit("import\n", {"NEWS": news})
    builder.tag("v1.0.0")
    builder.branch("fork")
    builder.commit("upstream moves on\n", {"other.txt": "x\n"})
    builder.tag("v1.1.0")
    builder.commit("upstream adds a head\n", {"NEWS": "head a\nhead b\nhead c\n" + news})
    builder.tag("v1.2.0")
    builder.checkout("fork")
    builder.commit("note one\n", {"NEWS": news + "one\n"})
    builder.tag("fork-one")
    builder.checkout("main")
    one = make_patch(builder, "v1.0.0", {"NEWS": news + "one\n"}, "note one")
    two = make_patch(builder, "fork-one", {"NEWS": news + "one\ntwo\n"}, "note two")
    patches = {"0001-one.patch": one, "0002-two.patch": two}
    fork = _fork(builder, "v1.0.0", patches, {name: "none" for name in patches})
    assert fork.cli("verify").code == 0
    with fork.repo.git.temp_index("v1.0.0") as index:  # alone, the second does not apply
        alone = index.run(["apply", "--cached", "--check", str(fork.root / "patches" / "0002-two.patch")],
                          purpose="test", check=False)  # fmt: skip
    assert not alone.ok

    def evidence(tag: str) -> dict[str, list[tuple[str, str]]]:
        result = fork.cli("absorbed", "--tag", tag, "--format", "json")
        assert result.code == 0, result.err
        return {
            p["patch"]: [(e["kind"], e["detail"]) for e in p["evidence"]]
            for p in result.json()["patches"]  # type: ignore[index]
        }

    assert evidence("v1.0.0") == {"0001-one.patch": [], "0002-two.patch": []}
    assert evidence("v1.1.0") == {"0001-one.patch": [], "0002-two.patch": []}
    moved = evidence("v1.2.0")
    assert moved["0001-one.patch"] == [
        (
            "offset",
            "NEWS: hunk 1 applies only at offset +3 (line 21) on v1.2.0; run 'forktool refresh'",
        )
    ]
    assert moved["0002-two.patch"] == [
        (
            "offset",
            "after the series' earlier patches: NEWS: hunk 1 applies only at offset +3 "
            "(line 22) on v1.2.0; run 'forktool refresh'",
        )
    ]


def test_a_patch_mapped_to_a_backport_meets_its_origin_on_the_main_line(
    builder: RepoBuilder,
) -> None:
    """The fork maps its patch to the release branch's backport (as ``export`` does for
    a pick of a pick), and the next main-line release holds the original the backport
    says it was picked from: ancestry keeps the patch, and the pick's own line is the
    witness (revisit), as libarchive's patch/3.7 91e81431 meets master's 42565b88 in
    v3.8.0. An origin that is not in the repository is no witness and no error."""
    builder.commit("import\n", {"app.py": APP})
    builder.tag("v1.0.0")
    builder.branch("release-1.0")
    fixed = _edit(APP, "line 9\n", "line nine\n")
    fix = builder.commit("fix line 9\n", {"app.py": fixed})
    builder.tag("v1.1.0")
    builder.checkout("release-1.0")
    backport = builder.cherry_pick(fix, x=True)
    unknown = "ab" * 20
    other = builder.commit(
        f"fix line 16\n\n(cherry picked from commit {unknown})\n",
        {"app.py": _edit(fixed, "line 16\n", "line sixteen\n")},
    )
    builder.tag("v1.0.1")
    builder.checkout("main")
    patch = make_patch(builder, "v1.0.0", {"app.py": fixed}, "fix line 9")
    second = make_patch(
        builder, "v1.0.0", {"app.py": _edit(APP, "line 16\n", "line sixteen\n")}, "12"
    )
    fork = _fork(
        builder,
        "v1.0.0",
        {"0001-fix.patch": patch, "0002-twelve.patch": second},
        {"0001-fix.patch": backport, "0002-twelve.patch": other},
    )
    result = fork.cli("absorbed", "--tag", "v1.1.0", "--format", "json")
    assert result.code == 0, result.err
    first, twelve = result.json()["patches"]  # type: ignore[misc]
    assert (first["verdict"], first["ancestor"]) == ("revisit", False)
    assert first["evidence"][0] == {
        "kind": "cherry-pick",
        "commit": fix,
        "detail": f"{backport[:12]} was cherry-picked from {fix[:12]}, which v1.1.0 contains",
    }
    assert twelve["verdict"] == "keep"
    assert [e["kind"] for e in twelve["evidence"]] == []
    on_branch = fork.cli("absorbed", "--tag", "v1.0.1", "--format", "json")
    assert [p["verdict"] for p in on_branch.json()["patches"]] == ["retire", "retire"]  # type: ignore[index, union-attr]


def test_lines_between_diffs_never_reach_patch_id_as_commits(builder: RepoBuilder) -> None:
    """git patch-id reads a ``From <sha>`` line (the next mail of a file of several
    format-patch mails, as gnutls28's and qemu's Debian patches are) and what it reads
    before any commit line (after qemu's ``Submodule x a..b:`` line) as commits of their
    own. Neither may crash absorbed nor lend one patch another's patch-id: the first
    patch, whose change upstream made only on a side branch, stays ``keep`` with no
    witness, although the second patch's tail is exactly v1.1.0's commit."""
    other = "".join(f"b line {n}\n" for n in range(1, 21))
    builder.commit("import\n", {"app.py": APP, "b.txt": other})
    builder.tag("v1.0.0")
    builder.branch("side")
    builder.commit("line 30 upstream\n", {"app.py": APP + "line 30\n"})
    builder.tag("v1.1.0")
    tail = builder.git.run(["diff", "v1.0.0", "v1.1.0"], purpose="test").stdout
    builder.checkout("side")
    fix = builder.commit(
        "fix line 5 on a side branch\n", {"app.py": _edit(APP, "line 5\n", "line five\n")}
    )
    builder.checkout("main")
    first = make_patch(builder, "v1.0.0", {"app.py": _edit(APP, "line 5\n", "line five\n")}, "five")
    b_mail = make_patch(
        builder, "v1.0.0", {"b.txt": other.replace("b line 3\n", "b line three\n")}, "b"
    )
    b_diff = b_mail[b_mail.index(b"diff --git") :].split(b"\n-- \n")[0] + b"\n"
    second = b_diff + b"Submodule sub 1111111..2222222:\n" + tail
    patches = {"0001-five.patch": first, "0002-tail.patch": second}
    fork = _fork(builder, "v1.0.0", patches, {"0001-five.patch": fix, "0002-tail.patch": "none"})
    result = fork.cli("absorbed", "--tag", "v1.1.0", "--format", "json")
    assert result.code == 0, result.err
    five = result.json()["patches"][0]  # type: ignore[index]
    assert (five["verdict"], [e["kind"] for e in five["evidence"]]) == ("keep", [])
    # Two mails in one file: the second mail's From line sits between the diffs.
    mails = first + b_mail
    fork.write(
        {"0001-five.patch": mails, "0002-tail.patch": second},
        commits={"0001-five.patch": fix, "0002-tail.patch": "none"},
    )
    result = fork.cli("absorbed", "--tag", "v1.1.0", "--format", "json")
    assert result.code == 0, result.err
    assert result.json()["patches"][0]["verdict"] == "keep"  # type: ignore[index]


def test_a_file_of_several_mails_maps_every_mails_commit_or_none(builder: RepoBuilder) -> None:
    """gnutls28's and dovecot's Debian patches hold a CVE fix as the upstream commits
    that made it, one format-patch mail each. The first mail's commit alone retired
    the patch at a release that holds it and not the others (the second fix dropped):
    map suggest names every mail's commit, so absorbed keeps the patch until all are
    in; a statement in the first mail speaks for that mail only."""
    other = "".join(f"b line {n}\n" for n in range(1, 21))
    builder.commit("import\n", {"app.py": APP, "b.txt": other})
    builder.tag("v1.0.0")
    fixed = _edit(APP, "line 3\n", "line three\n")
    first = builder.commit("fix part one\n", {"app.py": fixed})
    builder.tag("v1.1.0")
    b_fixed = other.replace("b line 9\n", "b line nine\n")
    second = builder.commit("fix part two\n", {"b.txt": b_fixed})
    builder.tag("v1.2.0")
    both = builder.git.run(["format-patch", "--stdout", "v1.0.0..v1.2.0"], purpose="test").stdout
    fork = _fork(builder, "v1.0.0", {"0001-cve.patch": both}, {"0001-cve.patch": "pending"})
    suggest = fork.cli("map", "suggest", "--format", "json")
    assert suggest.code == 0, suggest.err
    [found] = suggest.json()["suggestions"]  # type: ignore[index]
    assert found["commits"] == [first, second]
    assert found["source"].endswith("(and the From lines of 1 more mails)")
    assert fork.cli("map", "suggest", "--write").code == 0
    kept = fork.cli("absorbed", "--tag", "v1.1.0", "--format", "json").json()["patches"][0]  # type: ignore[index]
    assert (kept["verdict"], kept["ancestor"]) == ("keep", False)
    retired = fork.cli("absorbed", "--tag", "v1.2.0", "--format", "json").json()["patches"][0]  # type: ignore[index]
    assert retired["verdict"] == "retire"
    # A map made before (the first mail's commit only) is told, with the line to write.
    fork.write({"0001-cve.patch": both}, commits={"0001-cve.patch": first})
    loaded = load_fork(load_config(fork.root / "forktool.yaml"), strict=False)
    [told] = [f for f in loaded.findings if f.severity == "warning"]
    assert told.message == (
        "'0001-cve.patch' holds 2 format-patch mails, but its map line names only some of "
        f"their commits (not {second[:12]}): a release holding those alone would retire it "
        "without the others' fixes"
    )
    assert told.hint is not None and f"0001-cve.patch {first},{second}" in told.hint
    # A cherry-pick line in the first mail names that mail's commit only: not the map.
    picked = both.replace(b"\n---\n", f"\n\n(cherry picked from commit {first})\n---\n".encode(), 1)
    fork.write({"0001-cve.patch": picked}, commits={"0001-cve.patch": "pending"})
    [found] = fork.cli("map", "suggest", "--format", "json").json()["suggestions"]  # type: ignore[index]
    assert found["commits"] == [first, second]
