"""Adopting forktool on forks that already exist: real fork branches, FORK.md files
without the record section, overlay scaffolds, quilt directories, patch headers."""

from __future__ import annotations

from pathlib import Path

import pytest
from testing.helpers import MiniFork, make_patch, mini_fork, run_cli, snapshot_tree

from forktool.builder import RepoBuilder
from forktool.escape import md_text
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
    assert fork.cli("pin", "bump", "v2").code == 0  # retire needs a pin with the fix
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


# -- headers become the map: map suggest and init --from-quilt ------------------------

UNFETCHED = "0123456789abcdef0123456789abcdef01234567"


class HeaderFork:
    """Upstream fixes after ``v1`` and a fork whose patches name them in their own
    ecosystem's headers: Debian DEP-3, Yocto, openSUSE, Linux stable, none at all."""

    def __init__(self, repo: RepoBuilder) -> None:
        files = {f"{n}.py": lines(n) for n in "abcdef"}
        self.fork = mini_fork(repo, files)
        self.fix_a = repo.commit("a: fix\n", {"a.py": lines("a").replace("a5\n", "A5\n")})
        self.fix_b = repo.commit("b: fix\n", {"b.py": lines("b").replace("b5\n", "B5\n")})
        self.fix_d = repo.commit("d: fix\n", {"d.py": lines("d").replace("d5\n", "D5\n")})

        def diff(name: str, subject: str) -> bytes:
            data = make_patch(repo, "v1", {name: lines(name[0]).replace("5\n", "x\n", 1)}, subject)
            return data

        def body(data: bytes) -> bytes:
            return data[data.index(b"diff --git ") :]

        self.patches = {
            "debian-a.patch": (
                b"Description: a: fix\n"
                b"Author: Dana <dana@example.org>\n"
                b"Origin: upstream, https://git.example.org/app/commit/"
                + self.fix_a.encode()
                + b"\nBug: https://bugs.example.org/7\n\n"
                + body(diff("a.py", "a"))
            ),
            "yocto-b.patch": diff(
                "b.py",
                "b: fix\n\nUpstream-Status: Backport [https://git.example.org/app/commit/"
                + self.fix_b[:12]
                + "]\n\nSigned-off-by: Dana <dana@example.org>",
            ),
            "suse-c.patch": (
                b"From: Dana <dana@example.org>\n"
                b"Subject: c: fix\n"
                b"Git-commit: " + UNFETCHED.encode() + b"\n"
                b"Patch-mainline: v2\n"
                b"References: bsc#1\n\n" + body(diff("c.py", "c"))
            ),
            "stable-d.patch": diff(
                "d.py", f"d: fix\n\ncommit {self.fix_d} upstream.\n\nBackported to v1."
            ),
            "submitted-e.patch": diff(
                "e.py", "e: fix\n\nUpstream-Status: Submitted [https://lists.example.org/m/9]"
            ),
            "local-f.patch": diff("f.py", "f: ours\n\nUpstream-Status: Inappropriate [local]"),
        }
        self.repo = repo

    @property
    def root(self) -> Path:
        return self.repo.path


@pytest.fixture
def headers(builder: RepoBuilder) -> HeaderFork:
    return HeaderFork(builder)


def test_map_suggest_reads_each_ecosystems_headers(headers: HeaderFork) -> None:
    fork = headers.fork
    fork.write(headers.patches)
    result = fork.cli("map", "suggest", "--format", "json")
    assert result.code == 0, result.err
    found = {
        s["patch"]: (s["commits"], s["pr"], s["source"], s["present"], s["kind"])
        for s in result.json()["suggestions"]  # type: ignore[union-attr]
    }
    url = "https://git.example.org/app/commit/"
    assert found == {
        "debian-a.patch": (
            [headers.fix_a],
            "https://bugs.example.org/7",
            f"Origin: upstream, {url}{headers.fix_a}",
            True,
            "commits",
        ),
        "yocto-b.patch": (
            [headers.fix_b],
            None,
            f"Upstream-Status: Backport [{url}{headers.fix_b[:12]}]",
            True,
            "commits",
        ),
        "suse-c.patch": ([UNFETCHED], None, f"Git-commit: {UNFETCHED}", False, "commits"),
        "stable-d.patch": (
            [headers.fix_d],
            None,
            f"commit {headers.fix_d} upstream.",
            True,
            "commits",
        ),
        "submitted-e.patch": (
            [],
            "https://lists.example.org/m/9",
            "Upstream-Status: Submitted [https://lists.example.org/m/9]",
            False,
            "pending",
        ),
        "local-f.patch": ([], None, "Upstream-Status: Inappropriate [local]", False, "none"),
    }
    assert list(result.json()) == ["suggestions", "write", "written", "map"]
    first = result.json()["suggestions"][0]  # type: ignore[index]
    assert set(first) >= {"patch", "commits", "pr", "source", "present"}


def test_map_suggest_write_fills_only_missing_none_and_pending(headers: HeaderFork) -> None:
    fork = headers.fork
    fork.write(headers.patches)
    mine = headers.fix_b  # a commit the user wrote: never replaced
    (fork.root / "upstream.map").write_text(
        "# the map\n"
        "debian-a.patch none\n"
        f"stable-d.patch {mine} my note\n"
        "submitted-e.patch pending\n"
        "local-f.patch none\n"
    )
    dry = fork.cli("map", "suggest")
    assert dry.code == 0
    assert "entr(y/ies) to fill: run 'forktool map suggest --write'" in dry.out
    result = fork.cli("map", "suggest", "--write", "--format", "json")
    assert result.code == 0, result.err
    assert (fork.root / "upstream.map").read_text() == (
        "# the map\n"
        f"debian-a.patch {headers.fix_a} https://bugs.example.org/7\n"
        f"stable-d.patch {mine} my note\n"
        "submitted-e.patch pending https://lists.example.org/m/9\n"
        "local-f.patch none\n"
        f"yocto-b.patch {headers.fix_b}\n"
        f"suse-c.patch {UNFETCHED}\n"
    )
    assert [c["patch"] for c in result.json()["written"]] == [  # type: ignore[union-attr]
        "debian-a.patch",
        "yocto-b.patch",
        "suse-c.patch",
        "submitted-e.patch",
    ]
    actions = {s["patch"]: s["action"] for s in result.json()["suggestions"]}  # type: ignore[union-attr]
    assert actions["stable-d.patch"] == "kept"
    assert actions["local-f.patch"] == "unchanged"
    text = fork.cli("map", "suggest", "--write")
    assert text.code == 0
    assert text.out.splitlines()[-1] == "OK: upstream.map already says all of this"


def test_map_suggest_never_guesses_an_abbreviation(headers: HeaderFork) -> None:
    fork = headers.fork
    patch = make_patch(
        headers.repo,
        "v1",
        {"a.py": lines("a").replace("a7\n", "A7\n")},
        "a: seven\n\n[ Upstream commit deadbeef12 ]",
    )
    fork.write({"0001-a.patch": patch})
    result = fork.cli("map", "suggest", "--format", "json")
    (suggestion,) = result.json()["suggestions"]  # type: ignore[misc]
    assert suggestion["commits"] == []
    assert suggestion["kind"] == "pending"
    assert suggestion["unresolved"] == ["deadbeef12"]
    text = fork.cli("map", "suggest")
    assert "'deadbeef12' names no single commit in this repository" in " ".join(text.err.split())


def test_init_from_quilt_adopts_the_directory_and_maps_its_headers(headers: HeaderFork) -> None:
    root = headers.root
    quilt = root / "debian" / "patches"
    quilt.mkdir(parents=True)
    for name, data in headers.patches.items():
        (quilt / name).write_bytes(data)
    (quilt / "series").write_text(
        "# quilt series\n" + "".join(f"{n} -p1\n" for n in headers.patches)
    )
    (root / "FORK.md").write_text(NOTES)
    before = {p.name: p.read_bytes() for p in quilt.iterdir()}
    result = run_cli("-C", root, "init", "--pin", "v1", "--from-quilt", "debian/patches")
    assert result.code == 0, result.err
    assert {p.name: p.read_bytes() for p in quilt.iterdir()} == before
    config = (root / "forktool.yaml").read_text()
    assert "series: debian/patches/series\npatches: debian/patches\n" in config
    mapped = (root / "upstream.map").read_text().splitlines()
    assert [line for line in mapped if not line.startswith("#")] == [
        f"debian-a.patch {headers.fix_a} https://bugs.example.org/7",
        f"yocto-b.patch {headers.fix_b}",
        f"suse-c.patch {UNFETCHED}",
        f"stable-d.patch {headers.fix_d}",
        "submitted-e.patch pending https://lists.example.org/m/9",
        "local-f.patch none",
    ]
    assert (root / "FORK.md").read_text().startswith(NOTES + "\n## Retirement record\n")
    assert not (root / "series").exists()
    verify = run_cli("-C", root, "verify")
    assert verify.code == 0, verify.out
    check = run_cli("-C", root, "check", "--only", "files", "--only", "record")
    assert check.code == 0, check.out


def test_init_from_quilt_refuses_other_quilt_options_and_writes_nothing(
    headers: HeaderFork,
) -> None:
    root = headers.root
    quilt = root / "debian" / "patches"
    quilt.mkdir(parents=True)
    (quilt / "x.patch").write_bytes(headers.patches["debian-a.patch"])
    (quilt / "series").write_text("x.patch -p0\n")
    before = snapshot_tree(root)
    result = run_cli("-C", root, "init", "--pin", "v1", "--from-quilt", "debian/patches")
    assert result.code == 2
    assert result.error_lines == [
        "error: debian/patches/series:1: unsupported option '-p0' for 'x.patch' "
        "(only -p1 is allowed)",
        "hint: forktool applies every patch with -p1 and nothing else: regenerate a -p0/-p2 "
        "patch with -p1 paths (quilt refresh -p ab), and drop -R/--fuzz options",
    ]
    assert snapshot_tree(root) == before


# -- import then export: a round trip on any fork that passes check -------------------


def _work_tree(root: Path) -> dict[str, bytes]:
    return {k: v for k, v in snapshot_tree(root).items() if not k.startswith(".git")}


def _body(data: bytes) -> bytes:
    return data[data.index(b"diff --git ") :]


def test_import_then_export_gives_back_every_file_byte_for_byte(builder: RepoBuilder) -> None:
    fork = mini_fork(builder, {f"{n}.py": lines(n) for n in "abcd"})
    fix = builder.commit("a: fix\n", {"a.py": lines("a").replace("a2\n", "A2\n")})
    builder.checkout("v1")
    builder.checkout("main")
    mail = make_patch(
        builder,
        "v1",
        {"a.py": lines("a").replace("a2\n", "A2\n")},
        f"a: fix\n\nUpstream-PR: {PR}\nUpstream-Merge: {fix}",
    )
    # As 'git format-patch' of the upstream commit writes it: its 'From <sha>' names it.
    mail = mail.replace(b"From " + b"0" * 40, b"From " + fix.encode(), 1)
    plain = b"# Upstream-Merge: " + fix.encode() + b"\n# Upstream-PR: " + PR.encode() + b"\n\n"
    plain += _body(make_patch(builder, "v1", {"b.py": lines("b").replace("b2\n", "B2\n")}, "b"))
    dep3 = b"Description: c: waiting upstream\nAuthor: Dana <dana@example.org>\n---\n"
    dep3 += _body(make_patch(builder, "v1", {"c.py": lines("c").replace("c2\n", "C2\n")}, "c"))
    bare = _body(make_patch(builder, "v1", {"d.py": lines("d").replace("d2\n", "D2\n")}, "d"))
    names = ["0001-a-fix.patch", "fix-b.diff", "dep3-c.patch", "bare-d.diff"]
    fork.write(
        dict(zip(names, [mail, plain, dep3, bare], strict=True)),
        series="# our series\n0001-a-fix.patch\nfix-b.diff\ndep3-c.patch -p1\nbare-d.diff\n",
    )
    (fork.root / "upstream.map").write_text(
        "# our map\n"
        f"0001-a-fix.patch {fix} {PR}\n"
        f"fix-b.diff {fix} {PR}\n"
        "dep3-c.patch pending https://git.example.org/app/pulls/13 reviewed twice\n"
        "bare-d.diff none\n"
    )
    notes = fork.root / "patches" / "notes"
    notes.mkdir()
    (notes / "README.md").write_text("notes\n")
    (notes / "fix-b.md").write_text("why b\n")
    (fork.root / "FORK.md").write_text(NOTES)
    gate = fork.cli("check", "--skip", "align", "--skip", "pins")
    assert gate.code == 0, gate.out
    before = _work_tree(fork.root)
    imported = fork.cli("import", "--branch", "work", "--format", "json")
    assert imported.code == 0, imported.err
    pin_date = builder.git.out(["log", "-1", "--format=%ad", "--date=raw", "v1"], purpose="date")
    dates = builder.git.out(
        ["log", "--format=%ad", "--date=raw", "v1..work"], purpose="dates"
    ).splitlines()
    assert dates[:3] == [pin_date.strip()] * 3  # the plain diffs: the pin's date, stated
    history = fork.cli("check-history", "work")
    assert history.code == 1  # the pending patch has no Upstream-Merge: the policy says so
    assert "dep3-c.patch" not in history.out and "no Upstream-Merge: trailer" in history.out
    # The branch alone carries everything: take the patch files away, then export.
    for name in names:
        (fork.root / "patches" / name).unlink()
    (fork.root / "series").write_text("# our series\n")
    (fork.root / "upstream.map").write_text("# our map\n")
    exported = fork.cli("export", "--from", "work", "--format", "json")
    assert exported.code == 0, exported.err
    assert _work_tree(fork.root) == before
    again = fork.cli("export", "--from", "work", "--format", "json")
    assert again.json()["written"] == []


# -- pending: shown with its PR everywhere, never retired ---------------------------


def test_a_pending_patch_shows_its_pr_everywhere_and_is_never_retired(
    builder: RepoBuilder,
) -> None:
    fork = mini_fork(builder, {"a.py": lines("a"), "b.py": lines("b")})
    builder.commit("upstream: more\n", {"b.py": lines("b") + "b31\n"})
    builder.tag("v2")
    patch = make_patch(builder, "v1", {"a.py": lines("a").replace("a3\n", "A3\n")}, "a: three")
    fork.write({"0001-a-three.patch": patch})
    (fork.root / "upstream.map").write_text(f"0001-a-three.patch pending {PR}\n")
    (fork.root / "FORK.md").write_text(NOTES)
    builder.commit("fork: files\n")
    status = fork.cli("status")
    assert " ".join(status.out.split()).count(PR) == 1
    assert "pending" in status.out
    absorbed = fork.cli("absorbed", "--tag", "v2", "--format", "json")
    (entry,) = absorbed.json()["patches"]  # type: ignore[misc]
    assert (entry["verdict"], entry["upstream_pr"], entry["ancestor"]) == ("pending", PR, None)
    text = fork.cli("absorbed", "--tag", "v2")
    assert f"0001-a-three.patch: pending: waiting for PR {PR}" in text.out
    before = snapshot_tree(fork.root)
    refused = fork.cli("retire", "0001-a-three.patch", "--tag", "v2")
    assert refused.code == 1
    assert f"refused: 0001-a-three.patch: verdict 'pending' at v2 (waiting for PR {PR}" in (
        " ".join(refused.out.split())
    )
    assert snapshot_tree(fork.root) == before
    plan = fork.cli("sync", "v2", "--dry-run", "--no-fetch", "--format", "markdown")
    assert plan.code == 0, plan.err
    assert "## Waiting for upstream (pending: kept, never retired)" in plan.out
    assert f"- `0001-a-three.patch`: PR {md_text(PR)}" in plan.out  # text: no autolink
    poll = fork.cli("upstream", "poll", "--no-fetch")
    assert f"0001-a-three.patch: pending, PR {PR}" in " ".join(poll.out.split())
    check = fork.cli("check", "--only", "files")
    assert check.code == 0
    assert (
        f"notice: [files] upstream.map:1: '0001-a-three.patch' is pending (PR {PR}): kept, "
        "never retired until its upstream commit is written in"
    ) in " ".join(check.out.split())


# -- the README quickstart, followed literally ---------------------------------------

ROOT = Path(__file__).resolve().parents[3]


def _quickstart_lines() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Quickstart for a real fork") :]
    block = section[section.index("```sh\n") + 6 : section.index("```\n", section.index("```sh"))]
    commands = [line.split("  #")[0].strip() for line in block.splitlines()]
    return [line for line in commands if line and not line.startswith("#")]


def test_the_readme_quickstart_passes_check(tmp_path: Path, demo_upstream: object) -> None:
    upstream = demo_upstream.path  # type: ignore[attr-defined]
    repo = RepoBuilder.clone(upstream, tmp_path / "my-fork")
    repo.git.run(["remote", "remove", "origin"], purpose="a fork without the remote yet")
    repo.git.run(["config", "user.name", "Dev"], purpose="identity")
    repo.git.run(["config", "user.email", "dev@example.org"], purpose="identity")
    # The fork's fixes, kept as commits by people who never heard of forktool.
    repo.git.run(["switch", "-q", "-c", "my-fixes", "v1.1.0"], purpose="fixes branch")
    repo.cherry_pick("5b0817d52277e23f33db6615a89bbe5b8aef0028")
    for name, drop in (
        ("0002-engine-retry-on-timeout.patch", ("Upstream-Merge:", "Exit-Criterion:")),
        ("0004-fork-identify-the-fork-s-builds.patch", ("Upstream-", "Exit-Criterion:")),
    ):
        text = (ROOT / "patches" / name).read_text()
        kept = "".join(line for line in text.splitlines(True) if not line.startswith(drop))
        repo.git.run(["am", "-q"], purpose="apply", input=kept.encode())
    repo.git.run(["switch", "-q", "main"], purpose="back")
    tags = {
        "v0.25.1": "v1.1.0",
        "v0.26.0": "v1.2.0",
        "https://example.org/project.git": str(upstream),
    }
    codes = {}
    for line in _quickstart_lines():
        for old, new in tags.items():
            line = line.replace(old, new)
        words = line.split()
        if words[0] in ("pip", "cd"):
            continue
        if words[0] == "git":
            parts = line.split(" && ") if "&&" in line else [line]
            for part in parts:
                argv = part.split()[1:]
                if argv[:2] == ["commit", "-m"]:
                    argv = ["commit", "-q", "-m", part.split('"')[1]]
                repo.git.run(argv, purpose=part)
            continue
        result = run_cli("-C", repo.path, *words[1:])
        codes[words[1]] = result.code
        assert result.code != 2, (line, result.err)
        if words[1] == "check":
            assert result.code == 0, result.out
    assert codes["export"] == codes["status"] == codes["check"] == codes["sync"] == 0
    assert run_cli("-C", repo.path, "check").code == 0


def test_sync_appends_the_record_section_when_it_is_missing(builder: RepoBuilder) -> None:
    fork = mini_fork(builder, {"a.py": lines("a"), "b.py": lines("b")})
    fix = builder.commit("a: fix\n", {"a.py": lines("a").replace("a3\n", "A3\n")})
    builder.tag("v2")
    builder.checkout("v1")
    builder.git.run(["switch", "-q", "-c", "fork"], purpose="fork branch")
    patch = make_patch(builder, "v1", {"a.py": lines("a").replace("a3\n", "A3\n")}, "a: three")
    keep = make_patch(builder, "v1", {"b.py": lines("b").replace("b3\n", "B3\n")}, "b: three")
    fork.write(
        {"0001-a-three.patch": patch, "0002-b-three.patch": keep},
        commits={"0001-a-three.patch": fix},
    )
    (fork.root / "FORK.md").write_text(NOTES)
    builder.commit("fork: files\n")
    for key, value in (("user.name", "Sync"), ("user.email", "sync@example.org")):
        builder.git.run(["config", key, value], purpose="identity")
    result = fork.cli("sync", "v2", "--no-fetch", "--format", "json")
    assert result.code == 0, result.out + result.err
    record = builder.git.out(["show", "forktool/sync-v2:FORK.md"], purpose="read the record")
    assert record.startswith(NOTES + "\n## Retirement record\n")
    assert "| retired | 0001-a-three.patch |" in record


def test_export_refuses_a_commit_it_cannot_find_and_never_guesses(builder: RepoBuilder) -> None:
    gone = "1" * 40
    real = RealFork(
        builder,
        (
            ("b: stable\n\n[ Upstream commit deadbeef12 ]\n", {"b.py": lines("b") + "y\n"}),
            (f"a: picked\n\n(cherry picked from commit {gone})\n", {"a.py": lines("a") + "x\n"}),
        ),
    )
    before = snapshot_tree(real.root)
    result = real.fork.cli("export", "--from", "fork")
    assert result.code == 2
    assert result.error_lines[0].endswith(
        f"'(cherry picked from commit {gone})' names {gone}, which is not a commit in this "
        "repository"
    )
    assert snapshot_tree(real.root) == before
    builder.git.run(["branch", "-f", "fork", "fork~1"], purpose="drop the unknown pick")
    kept = real.fork.cli("export", "--from", "fork", "--format", "json")
    assert kept.code == 0, kept.err
    last = kept.json()["patches"][-1]  # type: ignore[index]
    assert (last["upstream_commits"], last["pending"], last["source"]) == (
        [],
        True,
        "[ Upstream commit deadbeef12 ]",
    )


def test_export_refuses_a_carried_patch_name_that_escapes_patches(builder: RepoBuilder) -> None:
    hostile = (
        "a: hostile\n\nForktool-Patch: ../../evil.patch\nForktool-Map: ../../evil.patch none\n"
    )
    real = RealFork(builder, ((hostile, {"a.py": lines("a") + "x\n"}),))
    before = snapshot_tree(real.root)
    result = real.fork.cli("export", "--from", "fork")
    assert result.code == 2
    assert (
        "its 'Forktool-Patch: ../../evil.patch' line is not a series line"
        in (result.error_lines[0])
    )
    assert snapshot_tree(real.root) == before
    assert not (real.root.parent / "evil.patch").exists()


def test_init_from_quilt_refuses_the_fork_root_itself(headers: HeaderFork) -> None:
    (headers.root / "series").write_text("")
    result = run_cli("-C", headers.root, "init", "--pin", "v1", "--from-quilt", ".")
    assert result.code == 2
    assert result.error_lines[0].startswith("error: .: adopt a subdirectory with a plain name")
    assert not (headers.root / "forktool.yaml").exists()


def test_map_suggest_json_keeps_the_documented_shape(headers: HeaderFork) -> None:
    from testing.contract_shapes import assert_contract

    headers.fork.write(headers.patches)
    result = headers.fork.cli("map", "suggest", "--format", "json")
    assert result.code == 0, result.err
    assert result.json()["suggestions"]
    assert_contract("map suggest", result.json())


def test_init_on_a_bare_version_tag_writes_release_tags_that_match_it(
    builder: RepoBuilder,
) -> None:
    """Projects like click tag '8.3.1', not 'v8.3.1': the scaffold must find their releases."""
    builder.commit("upstream: import\n", {"a.py": lines("a")})
    builder.tag("8.3.1")
    builder.branch("fork")
    fixed = {"a.py": lines("a").replace("a3\n", "A3\n")}
    fix = builder.commit("upstream: fix\n", fixed)
    builder.tag("8.3.2")
    builder.checkout("fork")
    patch = make_patch(builder, "8.3.1", fixed, "fix")
    root = builder.path
    assert run_cli("-C", root, "init", "--pin", "8.3.1").code == 0
    assert "release_tags: '[0-9]*'\n" in (root / "forktool.yaml").read_text()
    (root / "patches" / "0001-fix.patch").write_bytes(patch)
    (root / "series").write_text("0001-fix.patch\n")
    (root / "upstream.map").write_text(f"0001-fix.patch {fix}\n")
    result = run_cli("-C", root, "absorbed", "--tag", "8.3.2", "--format", "json")
    assert result.code == 0, result.err
    assert result.json()["patches"][0]["first_release"] == "8.3.2"  # type: ignore[index]


def test_a_release_tags_pattern_matching_nothing_hints_the_pinned_tags_shape(
    builder: RepoBuilder,
) -> None:
    fork = mini_fork(builder, {"a.py": lines("a")}, tag="jq-1.6")
    patch = make_patch(builder, "jq-1.6", {"a.py": lines("b")}, "b")
    fork.write({"0001-b.patch": patch})
    result = fork.cli("upstream", "poll", "--no-fetch")
    assert result.code == 2
    assert result.error_lines == [
        "error: release_tags 'v*' matches no tag, not even the pinned tag 'jq-1.6'",
        "hint: set release_tags in forktool.yaml to the pattern of upstream's release tags "
        "(the pinned tag suggests 'jq-*')",
    ]


def test_map_suggest_keeps_a_long_origin_url_whole_in_piped_output(builder: RepoBuilder) -> None:
    fork = mini_fork(builder, {"a.py": lines("a")})
    url = "https://salsa.debian.org/python-team/packages/python-click/-/commit/" + "ab" * 20
    patch = make_patch(
        builder,
        "v1",
        {"a.py": lines("a").replace("a7\n", "A7\n")},
        f"a: seven\n\nOrigin: upstream, {url}",
    )
    fork.write({"0001-a.patch": patch})
    result = fork.cli("map", "suggest")
    assert result.code == 0, result.err
    assert url in result.out.split()


def test_init_records_the_remotes_default_branch_when_it_is_not_main(tmp_path: Path) -> None:
    """jq develops on 'master': upstream resolve must not look for upstream/main."""
    upstream = RepoBuilder.init(tmp_path / "upstream")
    upstream.commit("upstream: import\n", {"a.py": lines("a")})
    upstream.tag("v1")
    upstream.git.run(["branch", "-m", "main", "master"], purpose="jq's branch name")
    fork = RepoBuilder.clone(upstream.path, tmp_path / "fork")
    result = run_cli("-C", fork.path, "init", "--pin", "v1", "--upstream-remote", "origin")
    assert result.code == 0, result.err
    assert (
        (fork.path / "forktool.yaml")
        .read_text()
        .startswith("upstream:\n  remote: origin\n  branch: master\npin:\n")
    )
    resolved = run_cli("-C", fork.path, "upstream", "resolve", "--no-fetch", "--format", "json")
    assert resolved.code == 0, resolved.err
    assert resolved.json()["branch"] == "master"


def test_map_suggest_maps_only_commits_and_only_whole_entries(headers: HeaderFork) -> None:
    fork = headers.fork
    repo = headers.repo
    repo.tag("v1-note", headers.fix_a, annotated=True, message="an annotated tag")
    ids = {
        "tree": repo.git.out(["rev-parse", f"{headers.fix_a}^{{tree}}"], purpose="tree").strip(),
        "blob": repo.git.out(["rev-parse", f"{headers.fix_a}:a.py"], purpose="blob").strip(),
        "tag": repo.git.out(["rev-parse", "refs/tags/v1-note"], purpose="tag").strip(),
    }

    def suse(name: str, *commits: str) -> bytes:
        named = "".join(f"Git-commit: {c}\n" for c in commits)
        data = make_patch(repo, "v1", {f"{name}.py": lines(name).replace("5\n", "x\n", 1)}, name)
        return (
            f"From: Dana <dana@example.org>\nSubject: {name}: fix\n{named}\n".encode()
            + data[data.index(b"diff --git ") :]
        )

    fork.write(
        {
            "tree.patch": suse("a", ids["tree"]),
            "blob.patch": suse("b", ids["blob"]),
            "tag.patch": suse("c", ids["tag"]),
            "half.patch": suse("d", headers.fix_d, ids["tree"]),
        }
    )
    (fork.root / "upstream.map").write_text("")
    result = fork.cli("map", "suggest", "--write", "--format", "json")
    assert result.code == 0, result.err
    found = {
        s["patch"]: (s["kind"], s["commits"], s["unresolved"])
        for s in result.json()["suggestions"]  # type: ignore[union-attr]
    }
    assert found == {
        "tree.patch": ("pending", [], [ids["tree"]]),
        "blob.patch": ("pending", [], [ids["blob"]]),
        "tag.patch": ("commits", [headers.fix_a], []),  # a tag's own id: its commit
        "half.patch": ("pending", [], [ids["tree"]]),  # never the one commit alone
    }
    written = (fork.root / "upstream.map").read_text()
    assert headers.fix_d not in written and ids["tree"] not in written
    assert set(written.split()) == {
        "tree.patch",
        "blob.patch",
        "tag.patch",
        "half.patch",
        "pending",
        headers.fix_a,
    }


def test_check_refuses_a_map_entry_that_names_no_commit(headers: HeaderFork) -> None:
    fork = headers.fork
    fork.write(headers.patches)
    tree = headers.repo.git.out(["rev-parse", "v1^{tree}"], purpose="tree").strip()
    (fork.root / "upstream.map").write_text(
        "".join(f"{name} none\n" for name in headers.patches if name != "yocto-b.patch")
        + f"yocto-b.patch {headers.fix_b},{tree}\n"
    )
    result = fork.cli("check", "--only", "files", "--format", "json")
    assert result.code == 1, result.out
    errors = [
        (f["message"], f["line"])
        for f in result.json()["checks"][0]["findings"]  # type: ignore[index]
        if f["severity"] == "error"
    ]
    assert errors == [(f"{tree} is a tree, not a commit", 6)]


@pytest.mark.parametrize("where", ["outside", "inside", "directory"])
def test_init_from_quilt_refuses_a_patch_reached_through_a_symlink(
    headers: HeaderFork, tmp_path: Path, where: str
) -> None:
    root = headers.root
    quilt = root / "debian" / "patches"
    quilt.mkdir(parents=True)
    data = headers.patches["debian-a.patch"]
    (quilt / "series").write_text("a.patch\n")
    if where == "outside":
        (tmp_path / "secret.patch").write_bytes(data)
        (quilt / "a.patch").symlink_to(tmp_path / "secret.patch")
        expected = "error: debian/patches/a.patch: is a symlink"
    elif where == "inside":
        (root / "real.patch").write_bytes(data)
        (quilt / "a.patch").symlink_to(root / "real.patch")
        expected = "error: debian/patches/a.patch: is a symlink"
    else:
        (tmp_path / "sub").mkdir()
        (tmp_path / "sub" / "a.patch").write_bytes(data)
        (quilt / "series").write_text("sub/a.patch\n")
        (quilt / "sub").symlink_to(tmp_path / "sub")
        expected = (
            "error: debian/patches/sub/a.patch: 'debian/patches/sub' is a symlinked directory"
        )
    before = snapshot_tree(root)
    result = run_cli("-C", root, "init", "--pin", "v1", "--from-quilt", "debian/patches")
    assert result.code == 2, result.out
    assert result.error_lines[0].startswith(expected), result.err
    assert snapshot_tree(root) == before


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--upstream-url", "--upload-pack=touch pwned", "starts with '-'"),
        ("--upstream-url", "ext::sh -c touch% pwned", "uses the ext:: transport"),
        ("--upstream-url", "https://x.org/a\n<!-- forktool:retirement-record:end -->", "control"),
        ("--upstream-remote", "--upload-pack=x", "is not a remote name"),
    ],
)
def test_init_refuses_an_upstream_that_runs_things(
    headers: HeaderFork, option: str, value: str, message: str
) -> None:
    root = headers.root
    before = snapshot_tree(root)
    result = run_cli("-C", root, "init", "--pin", "v1", option, value)
    assert result.code == 2
    assert result.error_lines[0].startswith(f"error: {option} {value!r} "), result.err
    assert message in result.error_lines[0]
    assert snapshot_tree(root) == before


def test_init_asks_upstream_for_its_default_branch_when_the_remote_was_added(
    tmp_path: Path,
) -> None:
    """'git remote add upstream URL' + fetch never sets refs/remotes/upstream/HEAD:
    init reads the branch from upstream itself (ls-remote --symref)."""
    upstream = RepoBuilder.init(tmp_path / "upstream")
    upstream.commit("upstream: import\n", {"a.py": lines("a")})
    upstream.tag("v1")
    upstream.git.run(["branch", "-m", "main", "master"], purpose="curl's branch name")
    fork = RepoBuilder.clone(upstream.path, tmp_path / "fork")
    fork.git.run(["remote", "rename", "origin", "upstream"], purpose="the README's remote")
    fork.git.run(
        ["remote", "set-head", "upstream", "--delete"], purpose="as 'remote add' leaves it"
    )
    assert fork.git.find_commit("refs/remotes/upstream/HEAD") is None
    result = run_cli("-C", fork.path, "init", "--pin", "v1")
    assert result.code == 0, result.err
    assert "  branch: master\n" in (fork.path / "forktool.yaml").read_text()


def test_a_new_commit_on_an_imported_branch_takes_the_next_free_number(
    builder: RepoBuilder, tmp_path: Path
) -> None:
    """format-patch numbers by place: next to the kept 0005 and 0007 a third commit would
    be a new 0003. It is 0008, and the kept files come back byte for byte."""
    fork = mini_fork(builder, {f"{n}.py": lines(n) for n in "abc"})
    five = make_patch(builder, "v1", {"a.py": lines("a").replace("a2\n", "A2\n")}, "a: two")
    seven = make_patch(builder, "v1", {"b.py": lines("b").replace("b2\n", "B2\n")}, "b: two")
    fork.write({"0005-a-two.patch": five, "0007-b-two.patch": seven})
    assert fork.cli("import", "--branch", "work").code == 0
    work = tmp_path / "work"
    builder.git.run(["worktree", "add", "-q", str(work), "work"], purpose="a worktree")
    RepoBuilder(work).commit("c: two\n", {"c.py": lines("c").replace("c2\n", "C2\n")})
    exported = fork.cli("export", "--from", "work", "--format", "json")
    assert exported.code == 0, exported.err
    assert [p["patch"] for p in exported.json()["patches"]] == [  # type: ignore[union-attr]
        "0005-a-two.patch",
        "0007-b-two.patch",
        "0008-c-two.patch",
    ]
    assert exported.json()["written"] == ["patches/0008-c-two.patch", "series", "upstream.map"]
    assert (fork.root / "patches" / "0005-a-two.patch").read_bytes() == five


def test_an_annotated_tags_own_id_in_a_trailer_maps_to_its_commit(builder: RepoBuilder) -> None:
    """``Upstream-Merge: <id>`` where the id is an annotated tag's own (what ``git
    rev-parse v2`` prints): the commit it points to, not ``pending``."""
    fork = mini_fork(builder, {"a.py": lines("a")})
    fix = builder.commit("a: fix\n", {"a.py": lines("a").replace("a2\n", "A2\n")})
    builder.tag("v2", fix)
    tag_object = builder.git.out(["rev-parse", "refs/tags/v2"], purpose="the tag object").strip()
    assert tag_object != fix
    patch = make_patch(
        builder, "v1", {"a.py": lines("a").replace("a2\n", "A2\n")},
        f"a: fix\n\nUpstream-Merge: {tag_object}",
    )  # fmt: skip
    fork.write({"0001-a-fix.patch": patch})
    suggest = fork.cli("map", "suggest", "--format", "json")
    assert suggest.code == 0, suggest.err
    (entry,) = suggest.json()["suggestions"]  # type: ignore[misc]
    assert (entry["kind"], entry["commits"]) == ("commits", [fix])


def test_check_warns_of_mapped_commits_it_cannot_see_and_still_passes(
    headers: HeaderFork,
) -> None:
    """A mapped commit this repository lacks: the gate needs no network, so it cannot
    tell whether a release has it. One warning names them all; never an error, and
    never a silent pass."""
    fork = headers.fork
    fork.write(headers.patches)
    unknown = ["0123456789abcdef0123456789abcdef01234567", "89abcdef" * 5]
    names = sorted(headers.patches)
    (fork.root / "upstream.map").write_text(
        f"{names[0]} {unknown[0]}\n{names[1]} {headers.fix_b},{unknown[1]}\n"
        + "".join(f"{name} none\n" for name in names[2:])
    )
    result = fork.cli("check", "--only", "files", "--format", "json")
    assert result.code == 0, result.out
    warnings = [
        (f["message"], f["line"], f["hint"])
        for f in result.json()["checks"][0]["findings"]  # type: ignore[index]
        if f["severity"] == "warning"
    ]
    assert warnings == [
        (
            f"2 mapped commit(s) not in this repository ({names[0]}: {unknown[0][:12]}; "
            f"{names[1]}: {unknown[1][:12]}): whether a release absorbed them cannot be "
            "told here",
            1,
            "fetch them: forktool absorbed --tag TAG --fetch (check itself never fetches); "
            "a commit upstream does not have is a mapping mistake",
        )
    ]
