"""The tarball-import pin: the release tarball's tree as a commit on the tag; the series
applies on that tree, while ancestry and retirement are decided by the tag."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from testing.helpers import CliResult, make_patch, run_cli

from forktool.builder import RepoBuilder
from forktool.engine.release.tarball import with_import_commit


def lines(prefix: str, count: int = 30) -> str:
    return "".join(f"{prefix}{i}\n" for i in range(1, count + 1))


LTMAIN = lines("ltmain ")  # generated: in the release tarball, never in git
CONFIGURE = "#!/bin/sh\n" + lines("configure ")


class TarballFork:
    """Upstream tagged ``curl-1_0_0`` (the pin) and ``curl-1_0_1`` (with the fix of
    lib/a.c); a fork on the pin whose series patches lib/a.c and the tarball-only
    ltmain.sh; the release tarball of the pin in ``tarball``."""

    def __init__(self, builder: RepoBuilder, scratch: Path) -> None:
        self.builder = builder
        builder.commit("upstream: import\n", {"lib/a.c": lines("a"), "Makefile.am": "all:\n"})
        self.tag_commit = builder.tag("curl-1_0_0")
        builder.branch("fork")
        fixed = {"lib/a.c": lines("a").replace("a3\n", "A3\n")}
        self.fix = builder.commit("upstream: fix a\n", fixed)
        builder.tag("curl-1_0_1")
        builder.checkout("fork")
        self.tarball = builder.release_tarball(
            "curl-1_0_0",
            scratch / "curl_1.0.0.orig.tar.gz",
            top="curl-1.0.0",
            extra={"ltmain.sh": LTMAIN, "configure": CONFIGURE},
            executable=("configure",),
        )
        self.patches = {
            "0001-fix-a.patch": make_patch(builder, "curl-1_0_0", fixed, "fix a"),
            "0002-ltmain.patch": _ltmain_patch(),
        }
        root = self.root
        assert run_cli("-C", root, "init", "--pin", "curl-1_0_0").code == 0
        (root / "patches" / "notes").mkdir(parents=True, exist_ok=True)
        for name, data in self.patches.items():
            (root / "patches" / name).write_bytes(data)
        (root / "series").write_text("".join(n + "\n" for n in self.patches))
        (root / "upstream.map").write_text(f"0001-fix-a.patch {self.fix}\n0002-ltmain.patch none\n")

    @property
    def root(self) -> Path:
        return self.builder.path

    def cli(self, *args: str | Path) -> object:
        return run_cli("-C", self.root, *args)


def _ltmain_patch() -> bytes:
    new = LTMAIN.replace("ltmain 5\n", "ltmain five\n")
    old_lines, new_lines = LTMAIN.splitlines(), new.splitlines()
    hunk = [f" {line}" for line in old_lines[1:4]]
    hunk += [f"-{old_lines[4]}", f"+{new_lines[4]}"]
    hunk += [f" {line}" for line in old_lines[5:8]]
    text = (
        "Description: work around the as-needed bug\nForwarded: not-needed\n---\n"
        "--- a/ltmain.sh\n+++ b/ltmain.sh\n@@ -2,7 +2,7 @@\n" + "\n".join(hunk) + "\n"
    )
    return text.encode()


@pytest.fixture
def fork(builder: RepoBuilder, tmp_path: Path) -> TarballFork:
    scratch = tmp_path / "downloads"
    scratch.mkdir()
    return TarballFork(builder, scratch)


def test_a_patch_to_a_tarball_only_file_fails_on_the_tag_and_applies_on_the_import(
    fork: TarballFork,
) -> None:
    before = run_cli("-C", fork.root, "verify", "--format", "json")
    assert before.code == 1
    statuses = {p["patch"]: p["status"] for p in before.json()["patches"]}  # type: ignore[union-attr]
    assert statuses["0002-ltmain.patch"] == "fails"

    imported = run_cli("-C", fork.root, "pin", "import-tarball", fork.tarball, "--format", "json")
    assert imported.code == 0, imported.err
    commit = imported.json()["commit"]
    assert imported.json()["recorded"] is True
    assert f"  import_commit: {commit}\n" in (fork.root / "forktool.yaml").read_text()
    assert fork.builder.git.parents(str(commit)) == [fork.tag_commit]

    after = run_cli("-C", fork.root, "verify", "--format", "json")
    assert after.code == 0, after.out
    assert after.json()["base"] == "curl-1_0_0+tarball"
    assert after.json()["base_commit"] == commit
    assert after.json()["round_trip"] is True
    check = run_cli("-C", fork.root, "check", "--only", "apply", "--only", "pin")
    assert check.code == 0, check.out
    status = run_cli("-C", fork.root, "status", "--format", "json")
    assert status.code == 0, status.err
    assert {p["apply"] for p in status.json()["patches"]} == {"exact"}  # type: ignore[union-attr]
    assert status.json()["tree"] == {"name": "curl-1_0_0+tarball", "commit": commit}


def test_the_same_tarball_gives_the_same_import_commit_and_its_contents_the_same_tree(
    fork: TarballFork, tmp_path: Path
) -> None:
    """The same tarball (wherever it lies) gives the same commit; a repack of the same
    files (other mtimes, member order, compression) the same tree: modes are
    normalised and the top directory stripped. The commit names each tarball's sha256."""
    first = run_cli("-C", fork.root, "pin", "import-tarball", fork.tarball, "--format", "json")
    assert first.code == 0, first.err
    other = tmp_path / "elsewhere"
    other.mkdir()
    copy = other / fork.tarball.name
    copy.write_bytes(fork.tarball.read_bytes())
    same = run_cli("-C", fork.root, "pin", "import-tarball", copy, "--format", "json")
    assert same.code == 0, same.err
    assert same.json()["commit"] == first.json()["commit"]
    assert same.json()["recorded"] is False  # already pinned: nothing written

    repacked = fork.builder.release_tarball(
        "curl-1_0_0",
        other / "curl_1.0.0.orig.tar.xz",
        top="curl-1.0.0",
        extra={"ltmain.sh": LTMAIN, "configure": CONFIGURE},
        executable=("configure",),
        mtime=1_800_000_000,
        reverse=True,
    )
    second = run_cli("-C", fork.root, "pin", "import-tarball", repacked, "--format", "json")
    assert second.code == 0, second.err
    first_commit, second_commit = str(first.json()["commit"]), str(second.json()["commit"])
    assert second_commit != first_commit
    git = fork.builder.git
    assert git.tree_id(second_commit) == git.tree_id(first_commit)
    message = git.commit_messages([first_commit])[first_commit]
    import hashlib

    digest = hashlib.sha256(fork.tarball.read_bytes()).hexdigest()
    assert f"Tarball: curl_1.0.0.orig.tar.gz sha256:{digest}" in message
    modes = {path: mode for mode, _, path in git.ls_tree(first_commit)}
    assert modes["configure"] == "100755"
    assert modes["ltmain.sh"] == "100644"
    assert "curl-1.0.0" not in modes


def test_a_component_tarball_goes_into_its_subdirectory(fork: TarballFork, tmp_path: Path) -> None:
    docs = tmp_path / "curl_1.0.0.orig-docs.tar.xz"
    with tarfile.open(docs, "w:xz") as out:
        import io

        for name, data in (("docs-1.0.0/", b""), ("docs-1.0.0/index.html", b"<p>docs</p>\n")):
            info = tarfile.TarInfo(name.rstrip("/"))
            if name.endswith("/"):
                info.type = tarfile.DIRTYPE
                out.addfile(info)
            else:
                info.size = len(data)
                out.addfile(info, io.BytesIO(data))
    result = run_cli(
        "-C", fork.root, "pin", "import-tarball", fork.tarball, docs, "--format", "json"
    )
    assert result.code == 0, result.err
    assert result.json()["tarballs"] == ["curl_1.0.0.orig.tar.gz", docs.name]
    blob = fork.builder.git.blob(str(result.json()["commit"]), "docs/index.html")
    assert blob == b"<p>docs</p>\n"


def test_retirement_and_first_releases_are_decided_by_the_tag(fork: TarballFork) -> None:
    assert run_cli("-C", fork.root, "pin", "import-tarball", fork.tarball).code == 0
    absorbed = run_cli("-C", fork.root, "absorbed", "--tag", "curl-1_0_1", "--format", "json")
    assert absorbed.code == 0, absorbed.err
    by_patch = {p["patch"]: p for p in absorbed.json()["patches"]}  # type: ignore[union-attr]
    assert by_patch["0001-fix-a.patch"]["verdict"] == "retire"
    assert by_patch["0001-fix-a.patch"]["first_release"] == "curl-1_0_1"
    assert by_patch["0002-ltmain.patch"]["verdict"] == "fork-only"


def test_an_import_commit_that_is_not_on_the_tag_is_refused(fork: TarballFork) -> None:
    other = fork.tag_commit  # the tag itself: not a commit on the tag
    config = fork.root / "forktool.yaml"
    config.write_text(with_import_commit(config.read_text(), other))
    result = run_cli("-C", fork.root, "verify")
    assert result.code == 2
    assert result.error_lines[0].startswith(
        f"error: pin.import_commit {other[:12]} is not an import on curl-1_0_0: its parents are"
    )
    assert "forktool pin import-tarball FILE" in result.error_lines[1]
    check = run_cli("-C", fork.root, "check", "--only", "pin")
    assert check.code == 1
    pins = run_cli("-C", fork.root, "pin", "check", "--format", "json")
    assert pins.code == 1
    [finding] = [f for f in pins.json()["findings"] if "import_commit" in f["message"]]  # type: ignore[union-attr]
    assert finding["line"] == 6  # pin.import_commit's line in forktool.yaml


def test_a_tarball_with_a_path_outside_the_tree_is_refused_and_nothing_changes(
    fork: TarballFork, tmp_path: Path
) -> None:
    bad = tmp_path / "evil.orig.tar"
    with tarfile.open(bad, "w") as out:
        info = tarfile.TarInfo("../escape")
        info.size = 1
        import io

        out.addfile(info, io.BytesIO(b"x"))
    before = (fork.root / "forktool.yaml").read_bytes()
    result = run_cli("-C", fork.root, "pin", "import-tarball", bad)
    assert result.code == 2
    assert "'..' segment" in result.error_lines[0]
    assert (fork.root / "forktool.yaml").read_bytes() == before
    assert fork.builder.git.find_commit("refs/forktool/imports/curl-1_0_0") is None


def test_import_commit_line_is_inserted_replaced_and_removed_in_place() -> None:
    text = "# mine\npin:\n    tag: v1   # the pin\n    commit: " + "a" * 40 + "\nlayout: merged\n"
    added = with_import_commit(text, "b" * 40)
    assert added == text.replace("\nlayout", f"\n    import_commit: {'b' * 40}\nlayout")
    assert with_import_commit(added, "c" * 40) == added.replace("b" * 40, "c" * 40)
    assert with_import_commit(added, None) == text


def test_align_reports_what_the_tarball_adds_as_its_own_category(fork: TarballFork) -> None:
    imported = run_cli("-C", fork.root, "pin", "import-tarball", fork.tarball, "--format", "json")
    commit = str(imported.json()["commit"])
    fork.builder.merge(commit, "Merge the release tarball of curl-1_0_0\n")
    fork.builder.commit("fork: forktool files\n")
    result = run_cli("-C", fork.root, "align", "--format", "json")
    assert result.code == 0, result.out
    data = result.json()
    assert data["tarball"] == {
        "commit": commit,
        "added": ["configure", "ltmain.sh"],
        "modified": [],
        "deleted": [],
    }
    changes = {c["path"]: c for c in data["changes"]}  # type: ignore[union-attr]
    assert changes["ltmain.sh"]["tarball"] is True
    assert changes["ltmain.sh"]["declared"] is True
    assert data["undeclared"] == []
    text = run_cli("-C", fork.root, "align")
    assert "    adds        2  configure, ltmain.sh\n" in text.out

    # A tarball file edited in place at HEAD is the fork's own divergence again.
    fork.builder.commit("fork: edit ltmain.sh in place\n", {"ltmain.sh": LTMAIN + "extra\n"})
    edited = run_cli("-C", fork.root, "align", "--format", "json")
    assert edited.code == 1
    assert edited.json()["undeclared"] == ["ltmain.sh"]


def _sync(fork: TarballFork, tarball: Path) -> CliResult:
    return run_cli(
        "-C",
        fork.root,
        "sync",
        "curl-1_0_1",
        "--no-fetch",
        "--tarball",
        tarball,
        "--format",
        "json",
    )


def test_sync_to_a_new_tag_takes_its_tarball_and_moves_the_import_with_the_pin(
    fork: TarballFork, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Sync Bot")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "sync@fork.example")
    assert run_cli("-C", fork.root, "pin", "import-tarball", fork.tarball).code == 0
    fork.builder.commit("fork: forktool files on the release tarball\n")
    next_tarball = fork.builder.release_tarball(
        "curl-1_0_1",
        tmp_path / "curl_1.0.1.orig.tar.gz",
        top="curl-1.0.1",
        extra={"ltmain.sh": LTMAIN.replace("ltmain 25\n", "ltmain 25 (1.0.1)\n")},
    )

    refused = run_cli("-C", fork.root, "sync", "curl-1_0_1", "--no-fetch")
    assert refused.code == 2
    assert refused.error_lines == [
        "error: the fork pins the release tarball of curl-1_0_0 (pin.import_commit): a sync "
        "to curl-1_0_1 needs curl-1_0_1's release tarball",
        "hint: forktool sync curl-1_0_1 --tarball FILE... (the orig tarball and any "
        "component tarballs)",
    ]
    plan = run_cli("-C", fork.root, "upstream", "poll", "--no-fetch", "--format", "json")
    assert plan.code == 4  # a human fetches the next tarball
    assert any("sync with '--tarball FILE...'" in n for n in plan.json()["plan"]["notes"])  # type: ignore[index]
    planned = {e["patch"]: e["status"] for e in plan.json()["plan"]["refreshed"]}  # type: ignore[index]
    assert planned == {"0002-ltmain.patch": "unchanged"}  # judged with the tarball's ltmain.sh

    synced = _sync(fork, next_tarball)
    assert synced.json()["stage"] == "done", synced.out
    assert [r["patch"] for r in synced.json()["retired"]] == ["0001-fix-a.patch"]  # type: ignore[union-attr,index]
    assert {e["patch"]: e["status"] for e in synced.json()["refreshed"]} == {  # type: ignore[union-attr]
        "0002-ltmain.patch": "unchanged"
    }
    branch = str(synced.json()["branch"])
    config = fork.builder.git.out(
        ["show", f"{branch}:forktool.yaml"], purpose="read the synced config"
    )
    imported = fork.builder.rev("refs/forktool/imports/curl-1_0_1")
    assert f"  tag: curl-1_0_1\n  commit: {fork.builder.rev('curl-1_0_1')}\n" in config + "\n"
    assert f"  import_commit: {imported}" in config
    assert fork.builder.git.parents(imported) == [fork.builder.rev("curl-1_0_1")]
    check = next(c for c in synced.json()["check"]["checks"] if c["id"] == "apply")  # type: ignore[index]
    assert check["ok"] is True


def test_import_tarball_json_keeps_the_documented_shape(fork: TarballFork) -> None:
    from testing.contract_shapes import assert_contract

    result = run_cli("-C", fork.root, "pin", "import-tarball", fork.tarball, "--format", "json")
    assert result.code == 0, result.err
    assert_contract("pin import-tarball", result.json())


def test_forecast_judges_tarball_only_files_as_the_next_tarball_will_have_them(
    fork: TarballFork,
) -> None:
    def cells() -> tuple[dict[str, str], list[object]]:
        result = run_cli("-C", fork.root, "forecast", "--no-fetch", "--format", "json")
        assert result.code == 0, result.err
        data = result.json()
        rows = {r["patch"]: r["cells"][0]["apply"] for r in data["patches"]}  # type: ignore[union-attr,index]
        return rows, [t.get("tarball_files") for t in data["targets"]]  # type: ignore[union-attr]

    assert cells() == ({"0001-fix-a.patch": "absorbed", "0002-ltmain.patch": "conflict"}, [None])
    assert run_cli("-C", fork.root, "pin", "import-tarball", fork.tarball).code == 0
    assert cells() == ({"0001-fix-a.patch": "absorbed", "0002-ltmain.patch": "exact"}, [2])


def test_import_branch_and_check_history_stand_on_the_tarball_tree(fork: TarballFork) -> None:
    imported = run_cli("-C", fork.root, "pin", "import-tarball", fork.tarball, "--format", "json")
    commit = str(imported.json()["commit"])
    result = run_cli("-C", fork.root, "import", "--branch", "patches", "--format", "json")
    assert result.code == 0, result.err
    assert result.json()["base_commit"] == commit
    first = str(result.json()["commits"][0]["commit"])  # type: ignore[index]
    assert fork.builder.git.parents(first) == [commit]
    history = run_cli("-C", fork.root, "check-history", "patches", "--format", "json")
    assert history.json()["base_commit"] == commit
    assert len(history.json()["commits"]) == 2  # type: ignore[arg-type]


def test_sync_of_a_branch_that_merged_the_import_merges_the_next_tarball(
    fork: TarballFork, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git-buildpackage's shape: the packaging branch merges each tarball import, so the
    sync merges TAG's import (its tarball files arrive), not the bare tag."""
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Sync Bot")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "sync@fork.example")
    imported = run_cli("-C", fork.root, "pin", "import-tarball", fork.tarball, "--format", "json")
    fork.builder.merge(str(imported.json()["commit"]), "Merge the release tarball\n")
    fork.builder.commit("fork: forktool files\n")
    new_ltmain = LTMAIN.replace("ltmain 25\n", "ltmain 25 (1.0.1)\n")
    next_tarball = fork.builder.release_tarball(
        "curl-1_0_1",
        tmp_path / "curl_1.0.1.orig.tar.gz",
        top="curl-1.0.1",
        extra={"ltmain.sh": new_ltmain, "configure": CONFIGURE},
        executable=("configure",),
    )
    synced = _sync(fork, next_tarball)
    assert synced.code == 0, synced.out
    data = synced.json()
    assert not [n for n in data["notes"] if "edited in place" in n]  # type: ignore[union-attr]
    git = fork.builder.git
    tip = git.require_commit(str(data["branch"]))
    new_import = fork.builder.rev("refs/forktool/imports/curl-1_0_1")
    assert git.parents(tip)[1] == new_import
    assert git.blob(tip, "ltmain.sh") == new_ltmain.encode()
    assert {c["id"]: c["ok"] for c in data["check"]["checks"]}["align"] is True  # type: ignore[index]


_NAMES = st.text(
    alphabet=st.sampled_from(list('ab_-. "\\\t\u00e9\u4e2d')), min_size=1, max_size=8
).filter(
    # '..' or '.git' between backslashes is refused on purpose (model/paths.py)
    lambda n: n.strip(".") != "" and not {"..", ".git"} & set(n.lower().split("\\"))
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.dictionaries(
        st.lists(_NAMES, min_size=1, max_size=3).map("/".join),
        st.tuples(st.binary(max_size=40), st.booleans()),
        min_size=1,
        max_size=6,
    )
)
def test_any_tarball_tree_imports_exactly(
    builder: RepoBuilder, tmp_path: Path, files: dict[str, tuple[bytes, bool]]
) -> None:
    """Whatever names and contents a tarball holds (quotes, backslashes, tabs, non-ASCII),
    the import commit's tree holds exactly those files with normalised modes."""
    import io

    paths = sorted(files)
    if any(other.startswith(p + "/") for p in paths for other in paths):
        return  # a file and a directory of one name cannot both be in a tree
    if not builder.git.find_commit("HEAD"):
        builder.commit("upstream\n", {"README": "r\n"})
        builder.tag("v1")
        (builder.path / "forktool.yaml").write_text(
            f"pin:\n  tag: v1\n  commit: {builder.rev('v1')}\n"
        )
    tarball = tmp_path / "pkg_1.orig.tar"
    with tarfile.open(tarball, "w") as out:
        for path in paths:
            data, executable = files[path]
            info = tarfile.TarInfo(f"pkg-1/{path}")
            info.size, info.mode = len(data), 0o775 if executable else 0o664
            out.addfile(info, io.BytesIO(data))
    result = run_cli("-C", builder.path, "pin", "import-tarball", tarball, "--format", "json")
    assert result.code == 0, result.err
    commit = str(result.json()["commit"])
    tree = {path: mode for mode, _, path in builder.git.ls_tree(commit)}
    assert tree == {p: "100755" if files[p][1] else "100644" for p in paths}
    for path in paths:
        assert builder.git.blob(commit, path) == files[path][0]


def test_refresh_onto_a_tag_with_its_tarball_regenerates_against_the_tarball(
    fork: TarballFork, tmp_path: Path
) -> None:
    assert run_cli("-C", fork.root, "pin", "import-tarball", fork.tarball).code == 0
    before = (fork.root / "forktool.yaml").read_bytes()
    (fork.root / "series").write_text("0002-ltmain.patch\n")
    (fork.root / "upstream.map").write_text("0002-ltmain.patch none\n")
    (fork.root / "patches" / "0001-fix-a.patch").unlink()
    shifted = "extra 1\nextra 2\n" + LTMAIN
    next_tarball = fork.builder.release_tarball(
        "curl-1_0_1", tmp_path / "curl_1.0.1.orig.tar.gz", top="c", extra={"ltmain.sh": shifted}
    )
    bare = run_cli("-C", fork.root, "refresh", "--onto", "curl-1_0_1", "--format", "json")
    assert bare.code == 1  # no ltmain.sh on the bare tag
    result = run_cli(
        "-C",
        fork.root,
        "refresh",
        "--onto",
        "curl-1_0_1",
        "--tarball",
        next_tarball,
        "--format",
        "json",
    )
    assert result.code == 0, result.out
    assert result.json()["onto"] == "curl-1_0_1+tarball"
    assert [e["status"] for e in result.json()["patches"]] == ["rebased"]  # type: ignore[union-attr]
    assert "@@ -4,7 +4,7 @@" in (fork.root / "patches" / "0002-ltmain.patch").read_text()
    assert (fork.root / "forktool.yaml").read_bytes() == before  # the pin does not change


def test_what_is_not_a_whole_tarball_is_refused_with_one_error_line(
    fork: TarballFork, tmp_path: Path
) -> None:
    garbage = tmp_path / "curl_1.0.0.orig.tar.gz"
    garbage.write_bytes(b"not a tarball\n")
    truncated = tmp_path / "cut" / fork.tarball.name
    truncated.parent.mkdir()
    truncated.write_bytes(fork.tarball.read_bytes()[:200])
    for bad in (garbage, truncated):
        result = run_cli("-C", fork.root, "pin", "import-tarball", bad)
        assert result.code == 2
        assert result.error_lines[0].startswith(f"error: {bad}: not a tarball forktool can read")
        assert "Traceback" not in result.err
    two = run_cli("-C", fork.root, "pin", "import-tarball", fork.tarball, garbage)
    assert two.code == 2
    assert two.error_lines[0].startswith("error: give exactly one main tarball")
    assert fork.builder.git.find_commit("refs/forktool/imports/curl-1_0_0") is None


def test_refresh_with_no_onto_regenerates_on_the_pins_tarball_tree(fork: TarballFork) -> None:
    """Without --onto, refresh stands on the tree verify judged: the import commit of a
    tarball fork (the bare tag has no ltmain.sh at all)."""
    assert run_cli("-C", fork.root, "pin", "import-tarball", fork.tarball).code == 0
    before = (fork.root / "forktool.yaml").read_bytes()
    drifted = _ltmain_patch().replace(b"@@ -2,7 +2,7 @@", b"@@ -4,7 +4,7 @@")
    (fork.root / "patches" / "0002-ltmain.patch").write_bytes(drifted)
    verdict = run_cli("-C", fork.root, "verify", "--format", "json")
    assert verdict.code == 1
    offset = next(p for p in verdict.json()["patches"] if p["patch"] == "0002-ltmain.patch")  # type: ignore[union-attr]
    assert offset["status"] == "offset"
    assert str(offset["message"]).endswith("on curl-1_0_0+tarball; run 'forktool refresh'")
    result = run_cli("-C", fork.root, "refresh", "--format", "json")
    assert result.code == 0, result.out
    assert result.json()["onto"] == "curl-1_0_0+tarball"
    statuses = {e["patch"]: e["status"] for e in result.json()["patches"]}  # type: ignore[union-attr]
    assert statuses["0002-ltmain.patch"] == "rebased"
    assert b"@@ -2,7 +2,7 @@" in (fork.root / "patches" / "0002-ltmain.patch").read_bytes()
    assert run_cli("-C", fork.root, "verify").code == 0
    assert (fork.root / "forktool.yaml").read_bytes() == before


def _synced_on_next_tarball(fork: TarballFork, tmp_path: Path, ltmain: str) -> Path:
    """The pin's tarball imported and committed; curl-1_0_1's tarball, with ``ltmain``
    as its ltmain.sh, written beside it."""
    assert run_cli("-C", fork.root, "pin", "import-tarball", fork.tarball).code == 0
    fork.builder.commit("fork: forktool files on the release tarball\n")
    return fork.builder.release_tarball(
        "curl-1_0_1",
        tmp_path / "curl_1.0.1.orig.tar.gz",
        top="curl-1.0.1",
        extra={"ltmain.sh": ltmain},
    )


def test_the_sync_plan_merges_from_the_pre_image_on_the_tarball_as_the_sync_does(
    fork: TarballFork, tmp_path: Path
) -> None:
    """A patch to a file only the tarball has moves by a 3-way merge from its pre-image
    on the pin's tarball tree: the dry run plans it there too, not on the bare tag
    (where the patch does not apply, so it would have no pre-image)."""
    moved = LTMAIN.replace("ltmain 3\n", "ltmain 3 (1.0.1)\n")  # in the hunk's context
    next_tarball = _synced_on_next_tarball(fork, tmp_path, moved)
    args = ("sync", "curl-1_0_1", "--no-fetch", "--tarball", next_tarball, "--format", "json")
    plan = run_cli("-C", fork.root, *args, "--dry-run")
    assert plan.code == 0, plan.err
    planned = {e["patch"]: (e["status"], e["message"]) for e in plan.json()["refreshed"]}  # type: ignore[union-attr]
    synced = run_cli("-C", fork.root, *args)
    assert synced.json()["stage"] == "done", synced.out
    done = {e["patch"]: (e["status"], e["message"]) for e in synced.json()["refreshed"]}  # type: ignore[union-attr]
    assert {name: status for name, (status, _) in planned.items()} == {
        name: status for name, (status, _) in done.items()
    }
    for status, message in (planned["0002-ltmain.patch"], done["0002-ltmain.patch"]):
        assert status == "merged"
        assert "a 3-way merge from its pre-image on curl-1_0_0+tarball" in message


def test_a_tarball_sync_names_the_tag_in_its_hints_never_the_tree(
    fork: TarballFork, tmp_path: Path
) -> None:
    """The tarball's tree is reported as TAG+tarball, but the commands a hint gives take
    the tag (and the sync its tarball again)."""
    clashing = LTMAIN.replace("ltmain 5\n", "ltmain 5 (1.0.1)\n")  # the line the patch changes
    next_tarball = _synced_on_next_tarball(fork, tmp_path, clashing)
    stopped = _sync(fork, next_tarball)
    assert stopped.code == 1, stopped.out
    resolve = Path(str(stopped.json()["message"]).split(" in ", 1)[1].split(", then")[0])
    (resolve / "ltmain.sh").write_text(clashing)  # upstream's lines: the change is dropped
    nothing = run_cli("-C", fork.root, "sync", "--continue")
    assert nothing.code == 2
    assert nothing.error_lines == [
        "error: the resolution of 0002-ltmain.patch changes nothing: curl-1_0_1+tarball "
        "already has the change",
        "hint: run 'forktool sync --abort', then retire the patch (forktool retire "
        "0002-ltmain.patch --tag curl-1_0_1 --force --reason '...') or drop it, and run "
        "'forktool sync curl-1_0_1 --tarball FILE...' again",
    ]
    assert run_cli("-C", fork.root, "sync", "--abort").code == 0
