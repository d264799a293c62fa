"""Adopting forktool on forks that already exist: real fork branches, FORK.md files
without the record section, overlay scaffolds, quilt directories, patch headers."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import MiniFork, make_patch, mini_fork, run_cli, snapshot_tree

from forktool.builder import RepoBuilder
from forktool.model.record import BEGIN, END


def lines(prefix: str, count: int = 30) -> str:
    return "".join(f"{prefix}{i}\n" for i in range(1, count + 1))


PR = "https://git.example.org/app/pulls/12"


class RealFork:
    """Upstream ``main`` with a release ``v1`` and two fixes after it; a fork branch
    ``fork`` on v1 written by people who never heard of forktool."""

    def __init__(
        self, repo: RepoBuilder, extra: tuple[tuple[str, dict[str, str]], ...] = ()
    ) -> None:
        self.repo = repo
        self.fork = mini_fork(repo, {"a.py": lines("a"), "b.py": lines("b"), "c.py": lines("c")})
        self.fix_a = repo.commit("a: fix one\n", {"a.py": lines("a").replace("a5\n", "A5\n")})
        self.fix_b = repo.commit("b: fix two\n", {"b.py": lines("b").replace("b5\n", "B5\n")})
        repo.git.run(["checkout", "-q", "-b", "fork", "v1"], purpose="fork branch")
        self.picked = repo.cherry_pick(self.fix_a)  # "(cherry picked from commit ...)"
        self.pr_only = repo.commit(
            "b: fix two, as proposed upstream\n\nUpstream-PR: " + PR + "\n",
            {"b.py": lines("b").replace("b5\n", "B5\n")},
        )
        self.bare = repo.commit(
            "c: our own tweak\n\nNo trailers at all.\n",
            {"c.py": lines("c").replace("c9\n", "C9\n")},
        )
        for message, files in extra:
            repo.commit(message, files)
        repo.checkout("main")
        self.fork.write({})

    @property
    def root(self) -> Path:
        return self.repo.path


@pytest.fixture
def real(builder: RepoBuilder) -> RealFork:
    return RealFork(builder)


# -- export of a real fork branch ---------------------------------------------------


def test_export_derives_each_map_entry_from_what_the_commit_says(real: RealFork) -> None:
    result = real.fork.cli("export", "--from", "fork", "--format", "json")
    assert result.code == 0, result.err
    patches = result.json()["patches"]
    assert [
        (p["patch"], p["upstream_commits"], p["pending"], p["fork_only"], p["upstream_pr"])
        for p in patches  # type: ignore[union-attr]
    ] == [
        ("0001-a-fix-one.patch", [real.fix_a], False, False, None),
        ("0002-b-fix-two-as-proposed-upstream.patch", [], True, False, PR),
        ("0003-c-our-own-tweak.patch", [], False, True, None),
    ]
    assert [p["source"] for p in patches] == [  # type: ignore[union-attr]
        f"(cherry picked from commit {real.fix_a})",
        f"Upstream-PR: {PR}",
        None,
    ]
    assert (real.root / "upstream.map").read_text().splitlines()[1:] == [
        f"0001-a-fix-one.patch {real.fix_a}",
        f"0002-b-fix-two-as-proposed-upstream.patch pending {PR}",
        "0003-c-our-own-tweak.patch none",
    ]
    check = real.fork.cli("check", "--only", "files", "--only", "apply", "--only", "format")
    assert check.code == 0, check.out
    status = real.fork.cli("status", "--format", "json")
    assert [
        (p["pending"], p["upstream_pr"])
        for p in status.json()["patches"]  # type: ignore[union-attr]
    ] == [(False, None), (True, PR), (False, None)]


def test_export_text_says_where_each_entry_came_from(real: RealFork) -> None:
    result = real.fork.cli("export", "--from", "fork")
    assert result.code == 0, result.err
    flat = " ".join(result.out.split())
    assert "derived from" in flat
    assert "no upstream reference in the message" in flat
    assert "(cherry picked from commit" in flat


def test_export_under_the_history_policy_says_which_values_are_accepted(real: RealFork) -> None:
    real.fork.write({}, extra_config="history:\n  required_trailers: [Upstream-Merge]\n")
    before = snapshot_tree(real.root)
    result = real.fork.cli("export", "--from", "fork")
    assert result.code == 2
    assert result.error_lines[0].endswith("no Upstream-Merge: trailer (and 2 more)")
    assert result.error_lines[1] == (
        "hint: the history: policy in forktool.yaml is on: each commit's last paragraph needs "
        "'Upstream-Merge: <40-hex>[,<40-hex>...]' or 'Upstream-Merge: none'; remove "
        "'history:' to derive each map entry from what the commit says; nothing was written"
    )
    assert snapshot_tree(real.root) == before


def test_export_names_why_a_commit_cannot_be_replayed(builder: RepoBuilder) -> None:
    twice = "a: twice merged\n\nUpstream-Merge: none\nUpstream-Merge: none\n"
    real = RealFork(builder, ((twice, {"a.py": lines("a").replace("a20\n", "A20\n")}),))
    before = snapshot_tree(real.root)
    result = real.fork.cli("export", "--from", "fork")
    assert result.code == 2
    assert (
        "a: twice merged: could not be replayed on the pin: malformed: " in (result.error_lines[0])
    )
    assert "second Upstream-Merge trailer (first on line" in result.error_lines[0]
    assert snapshot_tree(real.root) == before


def test_export_does_not_call_the_notes_readme_an_orphan(real: RealFork) -> None:
    notes = real.root / "patches" / "notes"
    notes.mkdir(parents=True)
    (notes / "README.md").write_text("Per-patch context notes.\n")
    (notes / "gone.md").write_text("a note whose patch is gone\n")
    result = real.fork.cli("export", "--from", "fork", "--format", "json")
    assert result.code == 0, result.err
    assert result.json()["orphaned_notes"] == ["patches/notes/gone.md"]
    text = real.fork.cli("export", "--from", "fork")
    assert "README.md" not in text.err


# -- FORK.md without the record section ---------------------------------------------

NOTES = "# Our fork\n\nWe carry a few fixes.\n"


def _forkmd_fork(builder: RepoBuilder) -> MiniFork:
    fork = mini_fork(builder, {"a.py": lines("a")})
    patch = make_patch(builder, "v1", {"a.py": lines("a").replace("a3\n", "A3\n")}, "a: three")
    fork.write({"0001-a-three.patch": patch})
    (fork.root / "FORK.md").write_text(NOTES)
    return fork


def test_check_notes_a_missing_record_section_and_fails_on_broken_markers(
    builder: RepoBuilder,
) -> None:
    fork = _forkmd_fork(builder)
    result = fork.cli("check", "--only", "record", "--format", "json")
    assert result.code == 0, result.out
    finding = result.json()["checks"][0]["findings"][0]  # type: ignore[index]
    assert finding["severity"] == "info"
    assert finding["message"].startswith("has no retirement record section yet")
    text = fork.cli("check", "--only", "record")
    assert "notice: [record] FORK.md: has no retirement record section yet" in text.out
    for broken, why in (
        (NOTES + BEGIN + "\n", f"one record marker without the other ('{END}' is missing)"),
        (NOTES + f"{BEGIN}\n{END}\n{BEGIN}\n{END}\n", "appear more than once (2 begin, 2 end)"),
    ):
        (fork.root / "FORK.md").write_text(broken)
        failed = fork.cli("check", "--only", "record", "--format", "json")
        assert failed.code == 1
        message = failed.json()["checks"][0]["findings"][0]["message"]  # type: ignore[index]
        assert why in message


def test_init_on_an_existing_fork_appends_only_the_record_section(builder: RepoBuilder) -> None:
    fork = _forkmd_fork(builder)
    before = snapshot_tree(fork.root)
    result = fork.cli("init", "--pin", "v1", "--format", "json")
    assert result.code == 0, result.err
    assert result.json()["appended"] == ["FORK.md"]
    assert result.json()["written"] == []
    after = snapshot_tree(fork.root)
    assert {k for k in after if after[k] != before.get(k)} == {"FORK.md"}
    text = (fork.root / "FORK.md").read_text()
    assert text.startswith(NOTES + "\n## Retirement record\n")
    assert text.endswith(
        f"{BEGIN}\n| date | action | patch | upstream PR | commits | first "
        f"release | tag | witnesses / reason |\n|---|---|---|---|---|---|---|---|\n{END}\n"
    )
    assert fork.cli("check", "--only", "record").code == 0
    again = fork.cli("init", "--pin", "v1")
    assert again.code == 0
    assert (fork.root / "FORK.md").read_text() == text
    other = fork.cli("init", "--pin", "v2")
    assert other.code == 2
    assert other.error_lines[0] == "error: forktool.yaml exists and pins v1; init never changes it"


def test_retire_appends_the_record_section_when_it_is_missing(builder: RepoBuilder) -> None:
    fork = mini_fork(builder, {"a.py": lines("a")})
    fix = builder.commit("a: fix\n", {"a.py": lines("a").replace("a3\n", "A3\n")})
    builder.tag("v2")
    patch = make_patch(builder, "v1", {"a.py": lines("a").replace("a3\n", "A3\n")}, "a: three")
    fork.write({"0001-a-three.patch": patch}, commits={"0001-a-three.patch": fix})
    (fork.root / "FORK.md").write_text(NOTES)
    result = run_cli("-C", fork.root, "retire", "--tag", "v2", "--format", "json")
    assert result.code == 0, result.err
    text = (fork.root / "FORK.md").read_text()
    assert text.startswith(NOTES + "\n## Retirement record\n")
    assert "| retired | 0001-a-three.patch |" in text
    assert fork.cli("check", "--only", "record").code == 0


# -- overlay scaffold ---------------------------------------------------------------


def test_overlay_init_then_check_passes_on_its_own_scaffold(
    builder: RepoBuilder, tmp_path: Path
) -> None:
    upstream = mini_fork(builder, {"a.py": lines("a")})
    patch = make_patch(builder, "v1", {"a.py": lines("a").replace("a3\n", "A3\n")}, "a: three")
    overlay = RepoBuilder.init(tmp_path / "overlay")
    overlay.git.run(
        ["fetch", "-q", str(upstream.root), "refs/tags/v1:refs/tags/v1"], purpose="tags"
    )
    assert run_cli("-C", overlay.path, "init", "--pin", "v1", "--layout", "overlay").code == 0
    (overlay.path / "patches" / "0001-a-three.patch").write_bytes(patch)
    (overlay.path / "series").write_text("0001-a-three.patch\n")
    with (overlay.path / "upstream.map").open("a") as handle:
        handle.write("0001-a-three.patch none\n")
    early = run_cli("-C", overlay.path, "check", "--format", "json")
    assert early.code == 0, early.out
    findings = [f for c in early.json()["checks"] for f in c["findings"]]  # type: ignore[union-attr]
    assert [f["severity"] for f in findings] == ["info"]
    assert "prune" not in early.out
    overlay.commit("fork: forktool files\n")
    result = run_cli("-C", overlay.path, "check", "--format", "json")
    assert result.code == 0, result.out
    align = run_cli("-C", overlay.path, "align", "--format", "json")
    assert align.json()["undeclared"] == []


def test_merged_ledger_entries_for_uncommitted_files_are_not_called_stale(
    builder: RepoBuilder,
) -> None:
    fork = _forkmd_fork(builder)
    (fork.root / "alignment.ledger").write_text("add docs/** permanent our docs\n")
    (fork.root / "docs").mkdir()
    (fork.root / "docs" / "x.md").write_text("x\n")
    builder.commit("fork: files\n", {"docs/x.md": None})  # commit everything but docs/
    (fork.root / "docs").mkdir(exist_ok=True)
    (fork.root / "docs" / "x.md").write_text("x\n")
    result = fork.cli("align", "--format", "json")
    assert result.code == 0, result.out
    assert result.json()["stale"] == []
    assert [f["message"] for f in result.json()["findings"]] == [  # type: ignore[union-attr]
        "'add docs/**' matches only files not committed yet"
    ]
