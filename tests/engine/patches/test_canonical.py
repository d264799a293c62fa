"""Canonical patches: fmt, export, import, check-history, refresh."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from testing.helpers import MiniFork, make_patch, mini_fork, run_cli, snapshot_tree

from forktool.builder import RepoBuilder
from forktool.demo.example import FORMAT_PATCH_ARGS as EXAMPLE_ARGS
from forktool.engine.patches.canonical import FORMAT_PATCH_ARGS
from forktool.git import Git

P1 = "0001-config-do-not-crash-on-an-empty-config-file.patch"
P2 = "0002-engine-retry-on-timeout.patch"
P3 = "0003-engine-decode-input-as-UTF-8.patch"
P4 = "0004-fork-identify-the-fork-s-builds.patch"
COMMITTER = {
    "GIT_COMMITTER_NAME": "Re Baser",
    "GIT_COMMITTER_EMAIL": "rebaser@example.com",
    "GIT_COMMITTER_DATE": "@1800000000 +0000",
}


def lines(prefix: str, count: int = 30) -> str:
    return "".join(f"{prefix}{i}\n" for i in range(1, count + 1))


def fork_files(root: Path) -> dict[str, bytes]:
    """The fork's own files (patches, notes, series, map), for byte comparisons."""
    return {
        k: v
        for k, v in snapshot_tree(root).items()
        if k.startswith("patches") or k in ("series", "upstream.map")
    }


def status_porcelain(repo: RepoBuilder) -> str:
    return repo.git.run(["status", "--porcelain"], purpose="status").out


def test_example_imports_its_canonical_args_from_the_one_definition() -> None:
    assert EXAMPLE_ARGS is FORMAT_PATCH_ARGS
    assert FORMAT_PATCH_ARGS[:8] == (
        "format-patch",
        "-k",
        "--full-index",
        "--no-renames",
        "--zero-commit",
        "--no-signature",
        "--no-stat",
        "--no-numbered",
    )


# -- fmt ----------------------------------------------------------------------------


def test_fmt_check_passes_on_the_example_series_and_changes_nothing(
    example_fork: RepoBuilder,
) -> None:
    before = snapshot_tree(example_fork.path)
    result = run_cli("-C", example_fork.path, "fmt", "--check", "--format", "json")
    assert result.code == 0, result.err
    data = result.json()
    assert data["ok"] is True and data["canonical"] is True
    assert [p["status"] for p in data["patches"]] == ["canonical"] * 4  # type: ignore[index]
    assert snapshot_tree(example_fork.path) == before
    assert status_porcelain(example_fork) == ""


def test_fmt_check_fails_on_a_changed_index_abbreviation(example_fork: RepoBuilder) -> None:
    path = example_fork.path / "patches" / P2
    full = (
        b"index 6ef6211b0be36ed3238a5a0a442648d3153008af..8c5cf94edcfbc1f8cc159f57e5889ee615786e19"
    )
    original = path.read_bytes()
    assert full in original
    path.write_bytes(original.replace(full, b"index 6ef6211..8c5cf94"))
    result = run_cli("-C", example_fork.path, "fmt", "--check", "--format", "json")
    assert result.code == 1
    patches = result.json()["patches"]
    assert [p["status"] for p in patches] == ["canonical", "cosmetic", "canonical", "canonical"]  # type: ignore[index]
    diff = patches[1]["diff"]  # type: ignore[index]
    assert "-index 6ef6211..8c5cf94 100644\n" in diff
    assert f"+{full.decode()} 100644\n" in diff
    text = run_cli("-C", example_fork.path, "fmt", "--check")
    assert text.code == 1
    assert f"FAILED: not canonical: {P2}; run 'forktool fmt'" in text.out
    assert path.read_bytes() == original.replace(full, b"index 6ef6211..8c5cf94")


def test_fmt_check_fails_on_a_stray_signature(example_fork: RepoBuilder) -> None:
    path = example_fork.path / "patches" / P1
    path.write_bytes(path.read_bytes() + b"-- \n2.39.5\n\n")
    result = run_cli("-C", example_fork.path, "fmt", "--check", "--format", "json")
    assert result.code == 1
    patch = result.json()["patches"][0]  # type: ignore[index]
    assert patch["status"] == "cosmetic"
    assert patch["diff"].endswith("--- \n-2.39.5\n-\n")


def test_fmt_rewrites_cosmetic_differences_so_check_passes_after_it(
    example_fork: RepoBuilder,
) -> None:
    path = example_fork.path / "patches" / P1
    canonical = path.read_bytes()
    path.write_bytes(canonical + b"-- \n2.39.5\n\n")
    preview = run_cli("-C", example_fork.path, "fmt", "--dry-run", "--format", "json")
    assert preview.code == 0, preview.err
    assert preview.json()["dry_run"] is True
    assert preview.json()["patches"][0]["status"] == "cosmetic"  # type: ignore[index]
    assert path.read_bytes() == canonical + b"-- \n2.39.5\n\n"
    text = run_cli("-C", example_fork.path, "fmt", "--dry-run")
    assert text.out.splitlines()[-1] == f"DRY RUN: would rewrite {P1}; nothing was written."
    plain = run_cli("-C", example_fork.path, "fmt")
    assert plain.code == 0, plain.err
    assert path.read_bytes() == canonical
    assert run_cli("-C", example_fork.path, "fmt", "--check").code == 0
    assert run_cli("-C", example_fork.path, "check", "--only", "format").code == 0
    assert status_porcelain(example_fork) == ""


def test_a_plain_diff_differing_only_by_its_pkg_orig_prefix_is_cosmetic(
    builder: RepoBuilder,
) -> None:
    fork = mini_fork(builder, {"pkg/app.py": lines("x")})
    canonical_diff = make_patch(
        builder, "v1", {"pkg/app.py": lines("x").replace("x5\n", "five\n")}, "x: five"
    )
    hunks = canonical_diff[canonical_diff.index(b"\n@@ ") + 1 :]
    plain = (
        b"# Description: spell x5\n\n--- pkg.orig/pkg/app.py\n+++ pkg/pkg/app.py\n" + hunks
    )  # the quilt form of the same change: no 'diff --git' or 'index' line, other prefixes
    fork.write({"fix.diff": plain})
    check = fork.cli("fmt", "--check", "--format", "json")
    assert check.code == 1
    assert check.json()["patches"][0]["status"] == "cosmetic"  # type: ignore[index]
    assert fork.cli("fmt").code == 0
    assert fork.cli("fmt", "--check").code == 0


@pytest.fixture
def neighbour(builder: RepoBuilder) -> MiniFork:
    """``v1`` has app.py; ``v2`` adds three lines at its top (a neighbouring tree)."""
    fork = mini_fork(builder, {"app.py": lines("line ")})
    builder.commit("upstream: header\n", {"app.py": "h1\nh2\nh3\n" + lines("line ")})
    builder.tag("v2")
    return fork


def test_fmt_check_fails_on_a_patch_made_against_a_neighbouring_tree(
    neighbour: MiniFork,
) -> None:
    repo = neighbour.repo
    edited = "h1\nh2\nh3\n" + lines("line ").replace("line 20\n", "line twenty\n")
    data = make_patch(repo, "v2", {"app.py": edited}, "app: spell twenty")
    neighbour.write({"0001-app.patch": data})
    check = neighbour.cli("fmt", "--check", "--format", "json")
    assert check.code == 1
    entry = check.json()["patches"][0]  # type: ignore[index]
    assert entry["status"] == "rewrite"
    assert "-@@ -20,7 +20,7 @@ line 16\n+@@ -17,7 +17,7 @@ line 16\n" in entry["diff"]
    assert neighbour.cli("verify").code == 1
    fixed = neighbour.cli("fmt")
    assert fixed.code == 0, fixed.err
    assert neighbour.cli("fmt", "--check").code == 0
    assert neighbour.cli("verify").code == 0


def test_fmt_keeps_a_plain_patch_header_and_regenerates_its_diff(builder: RepoBuilder) -> None:
    fork = mini_fork(builder, {"pkg/app.py": lines("x")})
    plain = (
        b"# Description: spell x5\n"
        b"# Upstream-PR: https://example.org/pr/1\n"
        b"\n"
        b"--- pkg.orig/pkg/app.py\t2024-01-01 00:00:00.000000000 +0000\n"
        b"+++ pkg/pkg/app.py\t2024-01-01 00:00:00.000000000 +0000\n"
        b"@@ -3,5 +3,5 @@\n x3\n x4\n-x5\n+five\n x6\n x7\n"
    )
    fork.write({"fix.diff": plain})
    assert fork.cli("fmt", "--check").code == 1
    assert fork.cli("fmt").code == 0
    data = (fork.root / "patches" / "fix.diff").read_bytes()
    assert data.startswith(
        b"# Description: spell x5\n# Upstream-PR: https://example.org/pr/1\n\n"
        b"diff --git a/pkg/app.py b/pkg/app.py\nindex "
    )
    assert data.endswith(b"@@ -2,7 +2,7 @@ x1\n x2\n x3\n x4\n-x5\n+five\n x6\n x7\n x8\n")
    assert fork.cli("fmt", "--check").code == 0
    assert fork.cli("verify").code == 0


def test_fmt_writes_nothing_when_a_patch_does_not_apply(builder: RepoBuilder) -> None:
    fork = mini_fork(builder, {"a.py": lines("a"), "b.py": lines("b")})
    good = make_patch(builder, "v1", {"a.py": lines("a").replace("a3\n", "A3\n")}, "a: three")
    bad = make_patch(builder, "v1", {"b.py": lines("b").replace("b3\n", "B3\n")}, "b: three")
    fork.write(
        {"0001-a.patch": good + b"-- \n2.39.5\n", "0002-b.patch": bad.replace(b" b4", b" bX")}
    )
    before = fork_files(fork.root)
    result = fork.cli("fmt", "--format", "json")
    assert result.code == 1
    data = result.json()
    assert [p["status"] for p in data["patches"]] == ["cosmetic", "error"]  # type: ignore[index]
    assert "nothing was written" in str(data["message"])
    assert fork_files(fork.root) == before


def test_fmt_check_names_what_cannot_be_regenerated_and_counts_what_was_not_tried(
    builder: RepoBuilder,
) -> None:
    # Debian's glibc: its first patch cannot be regenerated, and 108 follow it; the
    # verdict line names the one and counts the rest, never "not canonical: <109 names>".
    fork = mini_fork(builder, {"a.py": lines("a"), "b.py": lines("b"), "c.py": lines("c")})
    bad = make_patch(builder, "v1", {"a.py": lines("a").replace("a3\n", "A3\n")}, "a: three")
    later = {
        f"000{n}-{x}.patch": make_patch(
            builder, "v1", {f"{x}.py": lines(x).replace(f"{x}3\n", "X\n")}, f"{x}: three"
        )
        for n, x in ((2, "b"), (3, "c"))
    }
    fork.write({"0001-a.patch": bad.replace(b" a4", b" aX"), **later})
    result = fork.cli("fmt", "--check")
    assert result.code == 1
    assert result.out.splitlines()[-1] == (
        "FAILED: cannot be regenerated: 0001-a.patch; 2 not tried (an earlier patch does not "
        "apply); run 'forktool verify' for why"
    )


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    subject=st.text(
        st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=90
    ).filter(lambda s: s.strip() == s and s and not s.startswith("[")),
    body=st.lists(
        st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=70).map(str.rstrip),
        max_size=4,
    ),
    name=st.sampled_from(["Dana Okoye", "A. U. Thor", "Zoë Ünïcode", "O'Brien, Pat"]),
)
def test_a_regenerated_patch_is_a_fixed_point(
    tmp_path_factory: pytest.TempPathFactory, subject: str, body: list[str], name: str
) -> None:
    repo = RepoBuilder.init(tmp_path_factory.mktemp("fixed") / "repo")
    fork = mini_fork(repo, {"app.py": lines("line ")})
    text = "\n".join(body).strip("\n")
    message = subject + "\n" + (f"\n{text}\n" if text.strip() else "")
    repo.git.run(["checkout", "-q", "--detach", "v1"], purpose="detach")
    repo.commit(
        message,
        {"app.py": lines("line ").replace("line 9\n", "nine\n")},
        author=f"{name} <dana@example.org>",
    )
    exported = repo.git.run([*FORMAT_PATCH_ARGS, "-1", "--stdout"], purpose="export").stdout
    repo.git.run(["checkout", "-q", "main"], purpose="back")
    fork.write({"0001-x.patch": exported})
    first = fork.cli("fmt")
    assert first.code == 0, first.err
    assert fork.cli("fmt", "--check").code == 0


# -- import and export ------------------------------------------------------------------


def test_import_then_export_is_byte_identical_and_leaves_the_checkout_alone(
    example_fork: RepoBuilder,
) -> None:
    head = example_fork.rev("HEAD")
    index = (example_fork.path / ".git" / "index").read_bytes()
    before = fork_files(example_fork.path)
    imported = run_cli("-C", example_fork.path, "import", "--branch", "patches", "--format", "json")
    assert imported.code == 0, imported.err
    data = imported.json()
    commits = data["commits"]
    assert [c["patch"] for c in commits] == [P1, P2, P3, P4]  # type: ignore[index]
    assert example_fork.rev("refs/heads/patches") == data["tip"]
    assert example_fork.rev("HEAD") == head
    assert (example_fork.path / ".git" / "index").read_bytes() == index
    assert status_porcelain(example_fork) == ""
    message = example_fork.git.out(
        ["log", "-1", "--format=%an <%ae>%n%ad%n%B", "--date=raw", commits[1]["commit"]],
        purpose="read",
    )  # type: ignore[index]
    assert message.startswith(
        "Dana Okoye <dana@fork.example>\n1704171600 +0000\nengine: retry on timeout\n"
    )
    assert "Upstream-Merge: 7c7c98291d2b95c93d4eeba42be81d110c881fd7" in message
    exported = run_cli("-C", example_fork.path, "export", "--from", "patches", "--format", "json")
    assert exported.code == 0, exported.err
    assert exported.json()["written"] == []
    assert fork_files(example_fork.path) == before
    assert " = " in str(exported.json()["range_diff"])
    again = run_cli("-C", example_fork.path, "import", "--branch", "again")
    assert again.code == 0
    assert example_fork.rev("refs/heads/again") == data["tip"]  # same series, same commit ids


def test_import_refuses_an_existing_branch_unless_forced_and_never_a_checked_out_one(
    example_fork: RepoBuilder,
) -> None:
    example_fork.branch("taken", "v1.1.0")
    refused = run_cli("-C", example_fork.path, "import", "--branch", "taken")
    assert refused.code == 2
    assert refused.error_lines[0].startswith("error: branch 'taken' already exists")
    assert example_fork.rev("refs/heads/taken") == example_fork.rev("v1.1.0")
    forced = run_cli("-C", example_fork.path, "import", "--branch", "taken", "--force")
    assert forced.code == 0, forced.err
    assert example_fork.rev("refs/heads/taken") != example_fork.rev("v1.1.0")
    main = run_cli("-C", example_fork.path, "import", "--branch", "main", "--force")
    assert main.code == 2
    assert "is checked out" in main.error_lines[0]
    bad = run_cli("-C", example_fork.path, "import", "--branch", "no..dots")
    assert bad.code == 2
    assert bad.error_lines[0] == "error: 'no..dots' is not a valid branch name"


def _rebase(repo: RepoBuilder, branch: str, onto: str, tmp: Path) -> str:
    """``git rebase --force-rebase`` in a scratch worktree: new committer, same content."""
    wt = tmp / "rebase-wt"
    repo.git.run(["worktree", "add", "-q", str(wt), branch], purpose="worktree")
    Git(wt).run(["rebase", "-q", "--force-rebase", onto], purpose="rebase", env=COMMITTER)
    repo.git.run(["worktree", "remove", "--force", str(wt)], purpose="remove worktree")
    return repo.rev(f"refs/heads/{branch}")


def test_export_twice_and_after_a_rebase_gives_identical_bytes(
    example_fork: RepoBuilder, tmp_path: Path
) -> None:
    assert run_cli("-C", example_fork.path, "import", "--branch", "p").code == 0
    old_tip = example_fork.rev("refs/heads/p")
    first = run_cli("-C", example_fork.path, "export", "--from", "p")
    assert first.code == 0
    once = fork_files(example_fork.path)
    assert run_cli("-C", example_fork.path, "export", "--from", "p").code == 0
    assert fork_files(example_fork.path) == once
    new_tip = _rebase(example_fork, "p", "v1.1.0", tmp_path)
    assert new_tip != old_tip
    after = run_cli("-C", example_fork.path, "export", "--from", "p", "--format", "json")
    assert after.code == 0, after.err
    assert after.json()["written"] == []
    assert fork_files(example_fork.path) == once
    assert status_porcelain(example_fork) == ""


def test_export_deletes_stale_patch_files_keeps_notes_and_rewrites_series_and_map(
    example_fork: RepoBuilder,
) -> None:
    assert run_cli("-C", example_fork.path, "import", "--branch", "p").code == 0
    example_fork.branch("two", "p~2")
    result = run_cli("-C", example_fork.path, "export", "--from", "two", "--format", "json")
    assert result.code == 0, result.err
    data = result.json()
    assert data["removed"] == [f"patches/{P3}", f"patches/{P4}"]
    assert data["written"] == [f"patches/{P3}", f"patches/{P4}", "series", "upstream.map"]
    assert data["orphaned_notes"] == [
        "patches/notes/0003-engine-decode-input-as-UTF-8.md",
        "patches/notes/0004-fork-identify-the-fork-s-builds.md",
    ]
    assert not (example_fork.path / "patches" / P3).exists()
    assert not (example_fork.path / "patches" / P4).exists()
    assert (example_fork.path / "patches/notes/0003-engine-decode-input-as-UTF-8.md").is_file()
    assert (example_fork.path / "patches/notes/0004-fork-identify-the-fork-s-builds.md").is_file()
    assert (example_fork.path / "series").read_text() == (
        f"# The example fork's patch series (applied in order, -p1).\n{P1}\n{P2}\n"
    )
    assert (example_fork.path / "upstream.map").read_text().splitlines()[1:] == [
        f"{P1} 5b0817d52277e23f33db6615a89bbe5b8aef0028 https://git.example.org/pulse/pulls/41",
        f"{P2} 7c7c98291d2b95c93d4eeba42be81d110c881fd7 https://git.example.org/pulse/pulls/57",
    ]
    assert run_cli("-C", example_fork.path, "verify").code == 0
    assert run_cli("-C", example_fork.path, "fmt", "--check").code == 0


# -- check-history --------------------------------------------------------------------


@pytest.fixture
def messy(builder: RepoBuilder) -> MiniFork:
    """A patch branch ``p`` on ``v1`` with one of each violation."""
    fork = mini_fork(builder, {"src/a.py": lines("a"), "run.sh": "echo\n"})
    builder.git.run(["checkout", "-q", "-b", "p", "v1"], purpose="branch")
    ok = "\n\nUpstream-Merge: none\n"
    builder.commit("good" + ok, {"src/a.py": lines("a").replace("a1\n", "A1\n")})
    builder.commit("no trailer\n", {"src/a.py": lines("a").replace("a2\n", "A2\n")})
    builder.commit("bad trailer\n\nUpstream-Merge: abc123\n", {"src/a.py": lines("a")})
    builder.commit("empty" + ok)
    builder.commit("outside" + ok, {"docs/x.md": "x\n"})
    builder.commit("binary" + ok, {"src/blob.bin": b"\x00\x01\x02"})
    (builder.path / "run.sh").chmod(0o755)
    builder.commit("mode" + ok)
    builder.git.run(["checkout", "-q", "-b", "side", "HEAD~1"], purpose="side")
    builder.commit("side" + ok, {"src/side.py": "s\n"})
    builder.checkout("p")
    builder.merge("side", "merge" + ok)
    builder.commit("fork file" + ok, {"series": "x.patch\n"})
    builder.checkout("main")
    fork.write({})
    return fork


def test_check_history_lists_every_violation(messy: MiniFork) -> None:
    result = messy.cli("check-history", "p", "--prefix", "src/", "--gnu-patch", "--format", "json")
    assert result.code == 1, result.err
    found = sorted((v["subject"], v["check"]) for v in result.json()["violations"])  # type: ignore[union-attr]
    assert found == [
        ("bad trailer", "trailer"),
        ("binary", "gnu-patch"),
        ("empty", "empty"),
        ("fork file", "fork-file"),
        ("fork file", "prefix"),
        ("merge", "merge"),
        ("mode", "gnu-patch"),
        ("mode", "prefix"),
        ("no trailer", "trailer"),
        ("outside", "prefix"),
    ]
    messages = sorted(
        (v["subject"], v["message"])
        for v in result.json()["violations"]  # type: ignore[union-attr]
        if v["subject"] in ("bad trailer", "no trailer", "mode", "binary")
    )
    assert messages == [
        ("bad trailer", "Upstream-Merge must be 40-hex commits or 'none', not 'abc123'"),
        ("binary", "src/blob.bin is a binary file, which GNU patch cannot apply"),
        ("mode", "run.sh changes mode 100644 -> 100755, which GNU patch cannot apply"),
        ("mode", "run.sh is outside src"),
        ("no trailer", "no Upstream-Merge: trailer"),
    ]
    lenient = messy.cli("check-history", "p", "--format", "json")
    checks = sorted({v["check"] for v in lenient.json()["violations"]})  # type: ignore[union-attr]
    assert checks == ["empty", "fork-file", "merge", "trailer"]


def test_check_history_passes_an_imported_series_and_fails_closed_on_no_commits(
    example_fork: RepoBuilder,
) -> None:
    assert run_cli("-C", example_fork.path, "import", "--branch", "p").code == 0
    good = run_cli("-C", example_fork.path, "check-history", "p", "--gnu-patch")
    assert good.code == 0, good.out
    empty = run_cli("-C", example_fork.path, "check-history", "v1.1.0", "--format", "json")
    assert empty.code == 1
    assert empty.json()["message"] == "there are no commits between the pin and v1.1.0"
    unrelated = run_cli("-C", example_fork.path, "check-history", "v1.0.0")
    assert unrelated.code == 2
    assert unrelated.error_lines[0].startswith("error: v1.0.0 does not contain the pinned commit")


def test_export_refuses_a_history_that_breaks_the_contract(messy: MiniFork) -> None:
    before = snapshot_tree(messy.root)
    result = messy.cli("export", "--from", "p")
    assert result.code == 2
    assert result.error_lines[0].startswith("error: ")
    assert "(and " in result.error_lines[0]
    assert (
        result.error_lines[1]
        == "hint: run 'forktool check-history p' for every violation; nothing was written"
    )
    assert snapshot_tree(messy.root) == before


# -- refresh --------------------------------------------------------------------------


@pytest.fixture
def moving(builder: RepoBuilder) -> MiniFork:
    """v1, and v2 where c.py is untouched, a.py gains 3 lines on top, b.py line 10 changes."""
    files = {"a.py": lines("a"), "b.py": lines("b"), "c.py": lines("c")}
    fork = mini_fork(builder, files)
    c = make_patch(builder, "v1", {"c.py": lines("c").replace("c5\n", "C5\n")}, "c: five")
    a = make_patch(builder, "v1", {"a.py": lines("a").replace("a20\n", "A20\n")}, "a: twenty")
    b = make_patch(builder, "v1", {"b.py": lines("b").replace("b10\n", "fork10\n")}, "b: ten")
    builder.commit(
        "upstream: move on\n",
        {"a.py": "n1\nn2\nn3\n" + lines("a"), "b.py": lines("b").replace("b10\n", "up10\n")},
    )
    builder.tag("v2")
    fork.write({"0001-c.patch": c, "0002-a.patch": a, "0003-b.patch": b})
    return fork


def test_refresh_reports_unchanged_rebased_and_conflict_and_writes_nothing(
    moving: MiniFork,
) -> None:
    before = snapshot_tree(moving.root)
    result = moving.cli("refresh", "--onto", "v2", "--format", "json")
    assert result.code == 1
    data = result.json()
    assert [p["status"] for p in data["patches"]] == ["unchanged", "rebased", "conflict"]  # type: ignore[index]
    assert data["patches"][1]["message"] == (  # type: ignore[index]
        "a.py: hunk 1 applies only at offset +3 (line 20) on v2; would be regenerated"
    )
    assert (
        data["patches"][2]["message"]
        == "b.py: hunk 1 does not apply at line 7 on v2: its lines are not there; "
        "a 3-way merge conflicts too (in b.py)"
    )  # type: ignore[index]
    assert data["written"] == []
    assert snapshot_tree(moving.root) == before


def test_refresh_writes_every_patch_when_all_apply(moving: MiniFork) -> None:
    moving.write({k: v for k, v in moving.patches.items() if k != "0003-b.patch"})
    (moving.root / "patches" / "0003-b.patch").unlink()
    result = moving.cli("refresh", "--onto", "v2", "--format", "json")
    assert result.code == 0, result.err
    data = result.json()
    assert [(p["status"], p["bytes_changed"]) for p in data["patches"]] == [  # type: ignore[index]
        ("unchanged", False),  # c.py is the same in v2: same bytes
        ("rebased", True),
    ]
    assert "1:  " in str(data["range_diff"]) and "2:  " in str(data["range_diff"])
    assert moving.cli("verify", "--base", "v2").code == 0
    assert moving.cli("verify").code == 1  # the pin still names v1: pin bump comes next
    again = moving.cli("refresh", "--onto", "v2", "--format", "json")
    assert [p["status"] for p in again.json()["patches"]] == ["unchanged", "unchanged"]  # type: ignore[index]
    assert again.json()["written"] == []


def test_refresh_on_the_pin_says_verify_next_not_pin_bump(builder: RepoBuilder) -> None:
    fork = mini_fork(builder, {"a.py": lines("a")})
    shifted = "n1\nn2\nn3\n" + lines("a")
    builder.commit("upstream: three lines on top\n", {"a.py": shifted})
    builder.tag("v2")
    a = make_patch(builder, "v2", {"a.py": shifted.replace("a20\n", "A20\n")}, "a: twenty")
    for onto, step in (("v1", "verify"), ("v2", "pin bump v2")):
        fork.write({"0001-a.patch": a})
        result = fork.cli("refresh", "--onto", onto)
        assert result.code == 0, result.err
        assert result.out.splitlines()[-1] == f"next: forktool {step}"
    fork.write({"0001-a.patch": a})
    drifted = fork.cli("verify", "--format", "json")
    assert drifted.code == 1
    hint = str(drifted.json()["patches"][0]["message"])  # type: ignore[index]
    assert hint.endswith("on v1; run 'forktool refresh'")
    follow = fork.cli("refresh")  # the hint as given: no --onto regenerates on the pin
    assert follow.code == 0, follow.err
    assert follow.out.splitlines()[-1] == "next: forktool verify"
    assert fork.cli("verify").code == 0


def test_refresh_worktree_then_continue_takes_the_resolution(
    moving: MiniFork, tmp_path: Path
) -> None:
    repo = moving.repo
    index = (repo.path / ".git" / "index").read_bytes()
    wt = tmp_path / "resolve"
    opened = moving.cli("refresh", "--onto", "v2", "--worktree", wt, "--format", "json")
    assert opened.code == 1
    data = opened.json()
    assert data["in_progress"] is True and data["worktree"] == str(wt.resolve())
    assert [p["status"] for p in data["patches"]] == ["unchanged", "rebased", "conflict"]  # type: ignore[index]
    conflicted = (wt / "b.py").read_text()
    assert "<<<<<<< " in conflicted and ">>>>>>> " in conflicted
    # Only the conflicting patch's files are checked out; the earlier patches are in HEAD.
    assert sorted(p.name for p in wt.iterdir() if p.name != ".git") == ["b.py"]
    a_py = Git(wt).out(["show", "HEAD:a.py"], purpose="a.py")
    assert a_py.startswith("n1\nn2\nn3\na1\n") and "A20\n" in a_py
    assert (repo.path / ".git/forktool/refresh/state.json").is_file()
    refused = moving.cli("refresh", "--continue")
    assert refused.code == 2
    assert "a conflict marker is still there" in refused.error_lines[0]
    again = moving.cli("refresh", "--onto", "v2")
    assert again.code == 2
    assert again.error_lines[0] == "error: a refresh is already in progress"
    (wt / "b.py").write_text(lines("b").replace("b10\n", "up10 fork10\n"))
    done = moving.cli("refresh", "--continue", "--format", "json")
    assert done.code == 0, done.err
    result = done.json()
    assert [p["status"] for p in result["patches"]] == ["unchanged", "rebased", "resolved"]  # type: ignore[index]
    assert result["written"] == ["patches/0002-a.patch", "patches/0003-b.patch"]
    assert b"+up10 fork10\n" in (moving.root / "patches/0003-b.patch").read_bytes()
    assert b"Subject: b: ten\n" in (moving.root / "patches/0003-b.patch").read_bytes()
    assert not wt.exists()
    assert not (repo.path / ".git/forktool/refresh").exists()
    assert repo.git.out(["worktree", "list", "--porcelain"], purpose="list").count("worktree ") == 1
    assert (repo.path / ".git" / "index").read_bytes() == index
    assert moving.cli("verify", "--base", "v2").code == 0


def test_refresh_continue_moves_the_worktree_to_the_next_conflict(
    moving: MiniFork, tmp_path: Path
) -> None:
    repo = moving.repo
    d = make_patch(repo, "v1", {"b.py": lines("b").replace("b11\n", "fork11\n")}, "b: eleven")
    moving.write({**moving.patches, "0004-b.patch": d})
    wt = tmp_path / "resolve"
    assert moving.cli("refresh", "--onto", "v2", "--worktree", wt).code == 1
    (wt / "b.py").write_text(lines("b").replace("b10\n", "up10 fork10\n"))
    second = moving.cli("refresh", "--continue", "--format", "json")
    assert second.code == 1
    statuses = [p["status"] for p in second.json()["patches"]]  # type: ignore[index]
    assert statuses == ["unchanged", "rebased", "resolved", "conflict"]
    assert "<<<<<<< " in (wt / "b.py").read_text()
    (wt / "b.py").write_text(
        lines("b").replace("b10\n", "up10 fork10\n").replace("b11\n", "fork11\n")
    )
    final = moving.cli("refresh", "--continue", "--format", "json")
    assert final.code == 0, final.err
    assert [p["status"] for p in final.json()["patches"]] == [  # type: ignore[index]
        "unchanged",
        "rebased",
        "resolved",
        "resolved",
    ]
    assert moving.cli("verify", "--base", "v2").code == 0


def test_refresh_abort_removes_the_worktree_and_writes_nothing(
    moving: MiniFork, tmp_path: Path
) -> None:
    before = fork_files(moving.root)
    wt = tmp_path / "resolve"
    assert moving.cli("refresh", "--onto", "v2", "--worktree", wt).code == 1
    aborted = moving.cli("refresh", "--abort")
    assert aborted.code == 0, aborted.err
    assert not wt.exists()
    assert not (moving.root / ".git/forktool").exists()  # no empty directory either
    assert fork_files(moving.root) == before
    nothing = moving.cli("refresh", "--abort")
    assert nothing.code == 2
    assert nothing.error_lines[0] == "error: no refresh is in progress"


def test_refresh_usage_errors(moving: MiniFork) -> None:
    both = moving.cli("refresh", "--onto", "v2", "--abort")
    assert both.code == 2
    assert both.error_lines[0] == "error: --onto TAG and --abort are mutually exclusive"
    unknown = moving.cli("refresh", "--onto", "v9")
    assert unknown.code == 2
    assert unknown.error_lines[0] == "error: unknown tag 'v9'"


def test_demo_refresh_step_rebases_0002_in_a_scratch_clone(
    example_fork: RepoBuilder, demo_upstream: object, tmp_path: Path
) -> None:
    from forktool.demo.session import Demo
    from forktool.demo.steps.series import step_refresh
    from forktool.output import Output

    original = fork_files(example_fork.path)
    demo = Demo(tmp_path, Output(quiet=True), demo_upstream, example_fork, [])  # type: ignore[arg-type]
    step_refresh(demo)
    assert demo.failures == []
    assert fork_files(example_fork.path) == original
    scratch = tmp_path / "fork-refresh"
    assert (scratch / "series").read_text().splitlines()[1:] == [P2, P4]
    assert (scratch / "patches" / P2).read_bytes() != original[f"patches/{P2}"]
    assert b"@@ -99,10 +99,15 @@ class Engine:" in (scratch / "patches" / P2).read_bytes()


def test_refresh_goes_on_past_a_conflict_without_it(moving: MiniFork) -> None:
    """A conflict does not stop the series: the patches after it are tried on the tree
    without it (as git rebase goes on after a skip), never left ``not-tried``."""
    moving.write(moving.patches, series="0001-c.patch\n0003-b.patch\n0002-a.patch\n")
    result = moving.cli("refresh", "--onto", "v2", "--format", "json")
    assert result.code == 1
    statuses = [(p["patch"], p["status"]) for p in result.json()["patches"]]  # type: ignore[index]
    assert statuses == [
        ("0001-c.patch", "unchanged"),
        ("0003-b.patch", "conflict"),
        ("0002-a.patch", "rebased"),
    ]
    assert result.json()["written"] == []


@pytest.mark.parametrize(
    "pasted",
    [
        # a change to another file, valid on the parent
        "diff --git a/b.py b/b.py\n--- a/b.py\n+++ b/b.py\n@@ -1,3 +1,3 @@\n b1\n-b2\n+PWNED\n b3\n",
        # a new file
        "diff --git a/evil.sh b/evil.sh\nnew file mode 100755\n--- /dev/null\n+++ b/evil.sh\n"
        "@@ -0,0 +1 @@\n+curl x | sh\n",
    ],
)
def test_export_refuses_a_commit_whose_message_carries_a_diff(
    builder: RepoBuilder, pasted: str
) -> None:
    fork = mini_fork(builder, {"a.py": lines("a"), "b.py": lines("b")})
    builder.git.run(["checkout", "-q", "-b", "p", "v1"], purpose="branch")
    builder.commit("a: one\n", {"a.py": lines("a").replace("a1\n", "A1\n")})
    bad = builder.commit(
        "a: two\n\nAs discussed on the list:\n\n" + pasted,
        {"a.py": lines("a").replace("a1\n", "A1\n").replace("a9\n", "A9\n")},
    )
    builder.checkout("main")
    fork.write({})
    before = snapshot_tree(fork.root)
    result = fork.cli("export", "--from", "p")
    assert result.code == 2, result.out
    assert result.error_lines == [
        f"error: {bad[:12]} a: two: its exported patch, replayed on its parent, gives another "
        "tree than the commit",
        "hint: an exported patch must reproduce its commit exactly (a diff pasted into the "
        "commit message is applied with the patch: indent it or drop it); nothing was written",
    ]
    assert snapshot_tree(fork.root) == before


@pytest.fixture
def renaming(builder: RepoBuilder) -> MiniFork:
    """One patch changing b.py, c.py and d.py; v2 changes b.py's line and renames d.py."""
    files = {"b.py": lines("b"), "c.py": lines("c"), "d.py": lines("d")}
    fork = mini_fork(builder, files)
    patch = make_patch(
        builder,
        "v1",
        {
            "b.py": lines("b").replace("b10\n", "fork10\n"),
            "c.py": lines("c").replace("c5\n", "fork5\n"),
            "d.py": lines("d").replace("d5\n", "fork5\n"),
        },
        "fork: three files",
    )
    builder.commit(
        "upstream: rename d.py\n",
        {"b.py": lines("b").replace("b10\n", "up10\n"), "d.py": None, "e.py": lines("d")},
    )
    builder.tag("v2")
    fork.write({"0001-three.patch": patch})
    return fork


def test_refresh_continue_refuses_a_resolution_that_drops_files(
    renaming: MiniFork, tmp_path: Path
) -> None:
    wt = tmp_path / "resolve"
    opened = renaming.cli("refresh", "--onto", "v2", "--worktree", wt, "--format", "json")
    assert opened.code == 1, opened.err
    [conflict] = opened.json()["patches"]  # type: ignore[misc]
    assert conflict["message"].startswith("b.py: hunk 1 does not apply")
    assert (
        "applied with conflict markers; d.py was renamed upstream to e.py: carry its "
        in (conflict["message"])
    )
    # The user resolves b.py, and leaves c.py and d.py as v2 has them.
    (wt / "b.py").write_text(lines("b").replace("b10\n", "up10 fork10\n"))
    (wt / "c.py").write_text(lines("c"))
    for name in ("d.py", "d.py.rej", "e.py", "c.py.rej", "b.py.rej"):
        (wt / name).unlink(missing_ok=True)
    before = fork_files(renaming.root)
    refused = renaming.cli("refresh", "--continue")
    assert refused.code == 2
    assert refused.error_lines == [
        "error: the resolution of 0001-three.patch drops 2 of the 3 file(s) it changed: "
        "c.py, d.py (renamed upstream to e.py)",
        "hint: carry the change into each file (a renamed file under its new name) and run "
        "'forktool refresh --continue' again; to drop them on purpose: forktool refresh "
        "--continue --drop-file=c.py --drop-file=d.py",
    ]
    one = renaming.cli("refresh", "--continue", "--drop-file", "c.py")
    assert one.code == 2
    assert one.error_lines[0].endswith(
        "drops 1 of the 3 file(s) it changed: d.py (renamed upstream to e.py)"
    )
    typo = renaming.cli("refresh", "--continue", "--drop-file", "b.py")
    assert typo.code == 2
    assert typo.error_lines[0] == (
        "error: --drop-file b.py: the resolution of 0001-three.patch does not drop it "
        "(it drops c.py, d.py)"
    )
    assert fork_files(renaming.root) == before
    # The change carried into the renamed file; c.py dropped on purpose.
    (wt / "e.py").write_text(lines("d").replace("d5\n", "fork5\n"))
    done = renaming.cli("refresh", "--continue", "--drop-file", "c.py", "--drop-file", "d.py")
    assert done.code == 0, done.err
    patch = (renaming.root / "patches/0001-three.patch").read_bytes()
    assert b"+++ b/e.py" in patch and b"c.py" not in patch


def test_fmt_brings_a_diff_hidden_in_the_message_into_the_patch(builder: RepoBuilder) -> None:
    # git apply takes every diff in the file: the pasted one ships either way. fmt's
    # canonical form shows it as part of the patch, and its replay proof holds.
    fork = mini_fork(builder, {"a.py": lines("a"), "b.py": lines("b")})
    pasted = (
        "diff --git a/b.py b/b.py\n--- a/b.py\n+++ b/b.py\n@@ -1,3 +1,3 @@\n b1\n-b2\n+PWNED\n b3\n"
    )
    patch = make_patch(
        builder, "v1", {"a.py": lines("a").replace("a1\n", "A1\n")}, "a: one\n\nSee:\n\n" + pasted
    )
    fork.write({"0001-a.patch": patch})
    result = fork.cli("fmt")
    assert result.code == 0, result.err
    data = (fork.root / "patches/0001-a.patch").read_bytes()
    assert data.count(b"diff --git a/b.py b/b.py\n") == 1  # once, as the patch's own diff
    assert b"index " in data.split(b"diff --git a/b.py b/b.py\n")[1].split(b"\n")[0]
    assert fork.cli("verify").code == 0
