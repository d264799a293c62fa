"""Debian-shaped patch series, adopted as their maintainers keep them.

The fixture is a quilt directory in the shapes real bookworm packages have: git
format-patch backports whose ``From <sha>`` line names the upstream commit (curl),
one made on upstream's branch after other changes so it applies at an offset
(libarchive), one whose ``From <sha>`` is only on a PR branch, DEP-3 Debian-only
patches with and without ``Forwarded: not-needed``, hunk headers edited by hand
(fontconfig, sqlite3, socat), a 0-byte patch (procps' ``ps_checks``), no ``.pc``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from testing.helpers import CliResult, make_patch, run_cli

from forktool.builder import RepoBuilder
from forktool.engine.apply.precheck import EMPTY_NOTE
from forktool.git import run_gnu_patch

SERIES = (
    "0001-util-fix-overflow.patch",
    "0002-main-handle-empty-input.patch",
    "0003-main-fix-crash.patch",
    "debian-local-paths.patch",
    "debian-no-forward.patch",
    "hand-edited-hunks.patch",
    "ps_checks.patch",
)


def lines(prefix: str, count: int = 60) -> str:
    return "".join(f"{prefix} {i}\n" for i in range(1, count + 1))


def _replace(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


class DebianPackage:
    """Upstream ``main`` with release ``v1``; after it, a comment inserted at the top of
    util.c, then two fixes (later released as ``v2``), and a PR branch with a third."""

    def __init__(self, repo: RepoBuilder) -> None:
        self.repo = repo
        util, main = lines("util"), lines("main")
        repo.commit(
            "upstream: import\n",
            {"src/util.c": util, "src/main.c": main, "README": lines("readme", 30)},
        )
        repo.tag("v1")
        util = "/* one */\n/* two */\n/* three */\n" + util
        repo.commit("util: add a header comment\n", {"src/util.c": util})
        self.fix_util = repo.commit(
            "util: fix overflow\n", {"src/util.c": _replace(util, "util 40\n", "UTIL 40\n")}
        )
        self.fix_main = repo.commit(
            "main: fix crash\n", {"src/main.c": _replace(main, "main 10\n", "MAIN 10\n")}
        )
        repo.tag("v2")
        repo.git.run(["checkout", "-q", "-b", "pr-7", "v1"], purpose="a PR branch")
        self.pr_only = repo.commit(
            "main: handle empty input\n", {"src/main.c": _replace(main, "main 50\n", "MAIN 50\n")}
        )
        repo.git.run(["checkout", "-q", "-b", "debian", "v1"], purpose="the packaging branch")
        repo.git.run(
            ["update-ref", "refs/remotes/upstream/main", "main"], purpose="upstream's branch"
        )
        self.quilt = repo.path / "debian" / "patches"
        self.quilt.mkdir(parents=True)
        self.patches = self._patches()
        for name, data in self.patches.items():
            (self.quilt / name).write_bytes(data)
        (self.quilt / "series").write_text("".join(f"{name}\n" for name in SERIES))

    def _format(self, commit: str) -> bytes:
        return self.repo.git.run(
            ["format-patch", "--stdout", "-1", commit], purpose="a Debian backport"
        ).stdout

    def _patches(self) -> dict[str, bytes]:
        wrong = self._format(self.fix_main).replace(
            b"Subject: [PATCH] main: fix crash", b"Subject: [PATCH] main: avoid a crash"
        )
        # A fossil export's author has no email (sqlite3's 42-CVE-2025-6965.patch).
        wrong = re.sub(rb"\nFrom: [^\n]*\n", b"\nFrom: drh <>\n", wrong, count=1)
        readme = lines("readme", 30)
        local = make_patch(
            self.repo, "v1", {"README": _replace(readme, "readme 3\n", "Debian 3\n")}, "x"
        )
        forward = make_patch(
            self.repo, "v1", {"README": _replace(readme, "readme 20\n", "Debian 20\n")}, "x"
        )
        return {
            SERIES[0]: self._format(self.fix_util) + b"-- \n2.39.2\n\n",  # git's signature
            SERIES[1]: self._format(self.pr_only),
            SERIES[2]: wrong,
            SERIES[3]: b"Description: Debian's own paths\nAuthor: Dana <dana@debian.org>\n"
            b"Forwarded: not-needed\n---\n" + _diff_part(local),
            SERIES[4]: b"Description: Debian's own wording\nAuthor: Dana <dana@debian.org>\n"
            b"Last-Update: 2023-01-01\n---\n" + _diff_part(forward),
            SERIES[5]: HAND_EDITED,
            SERIES[6]: b"",
        }

    @property
    def root(self) -> Path:
        return self.repo.path

    def cli(self, *args: str | Path) -> CliResult:
        return run_cli("-C", self.root, *args)

    def adopt(self) -> CliResult:
        result = self.cli("init", "--pin", "v1", "--from-quilt", "debian/patches")
        assert result.code == 0, result.err
        return result

    def configure(self, old: str, new: str) -> None:
        path = self.root / "forktool.yaml"
        path.write_text(_replace(path.read_text(), old, new))

    def keep_only(self, *names: str) -> None:
        for path in self.quilt.iterdir():
            if path.name not in (*names, "series"):
                path.unlink()
        (self.quilt / "series").write_text("".join(f"{n}\n" for n in names))
        path = self.root / "upstream.map"
        kept = [line for line in path.read_text().splitlines() if line.split(" ")[0] in names]
        path.write_text("".join(f"{line}\n" for line in kept))

    def files(self) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted(self.quilt.iterdir())}


def _diff_part(patch: bytes) -> bytes:
    return patch[patch.index(b"diff --git ") :]


# Hunk 1 adds two lines, yet hunk 2's header says +30 where the file has it at +32:
# someone dropped a line from hunk 1 and fixed its counts by hand, not the next header.
HAND_EDITED = (
    b"Description: quieter main\n"
    b"Forwarded: https://bugs.example.org/12\n"
    b"---\n"
    b"--- a/src/main.c\n"
    b"+++ b/src/main.c\n"
    b"@@ -20,6 +20,8 @@\n"
    b" main 20\n main 21\n main 22\n+quiet 1\n+quiet 2\n main 23\n main 24\n main 25\n"
    b"@@ -30,7 +30,7 @@\n"
    b" main 30\n main 31\n main 32\n-main 33\n+MAIN 33\n main 34\n main 35\n main 36\n"
)


# A file created empty, as `git diff` writes one: `new file mode`, the empty blob, no hunk.
EMPTY_MARKER = (
    b"Description: an empty marker\n"
    b"---\n"
    b"diff --git a/tests/marker.txt b/tests/marker.txt\n"
    b"new file mode 100644\n"
    b"index 0000000..e69de29\n"
)
# Another, with a change to util.c made where it has three more lines at the top.
SHIFTED = (
    b"Description: louder util, and an empty file\n"
    b"---\n"
    b"diff --git a/src/util.c b/src/util.c\n"
    b"--- a/src/util.c\n"
    b"+++ b/src/util.c\n"
    b"@@ -10,7 +10,7 @@\n"
    b" util 7\n util 8\n util 9\n-util 10\n+UTIL 10\n util 11\n util 12\n util 13\n"
    b"diff --git a/tests/other.txt b/tests/other.txt\n"
    b"new file mode 100644\n"
    b"index 0000000..e69de29\n"
)


@pytest.fixture
def package(builder: RepoBuilder) -> DebianPackage:
    return DebianPackage(builder)


def statuses(result: CliResult) -> dict[str, tuple[str, str]]:
    return {p["patch"]: (p["status"], p["message"]) for p in result.json()["patches"]}  # type: ignore[union-attr]


def test_init_from_quilt_declares_the_maintainers_form_and_dpkg_rule(
    package: DebianPackage,
) -> None:
    before = package.files()
    package.adopt()
    config = (package.root / "forktool.yaml").read_text()
    assert "\npatch_form: maintainers\napply_rule: dpkg\n" in config
    assert package.files() == before
    assert not (package.root / ".pc").exists()


def test_gnu_patch_fuzz_0_applies_the_whole_series(package: DebianPackage, tmp_path: Path) -> None:
    """The reference: what dpkg-source does (patch -F 0), on the pinned tree."""
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in ("src/util.c", "src/main.c", "README"):
        (tree / name).parent.mkdir(exist_ok=True)
        (tree / name).write_bytes(package.repo.git.run(["show", f"v1:{name}"], purpose="x").stdout)
    said = {}
    for name in SERIES:
        code, out = run_gnu_patch(["-p1", "--fuzz=0", "-N", "-t"], tree, package.quilt / name)
        assert code == 0, (name, out)
        said[name] = out
    assert "Hunk #1 succeeded at 37 (offset -3 lines)." in said[SERIES[0]]
    assert "offset" not in said[SERIES[5]] and "fuzz" not in said[SERIES[5]]


def test_dpkg_rule_reports_and_accepts_offsets_hand_edits_and_the_empty_patch(
    package: DebianPackage,
) -> None:
    package.adopt()
    result = package.cli("verify", "--format", "json")
    assert result.code == 0, result.out
    assert result.json()["rule"] == "dpkg"
    found = statuses(result)
    assert found[SERIES[0]] == (
        "offset",
        "src/util.c: hunk 1 applies only at offset -3 (line 37) on v1; "
        "accepted (dpkg rule: no fuzz, offsets reported)",
    )
    # git places hunk 2 by its +30 and finds it at 32; GNU patch -F 0 applies it too.
    assert found[SERIES[5]] == (
        "offset",
        "src/main.c: hunk 2 applies only at offset +2 (line 32) on v1; hunk headers edited "
        "by hand (src/main.c: hunk 2 header says -30 +30, but the hunks before it shift "
        "lines by +2); accepted (dpkg rule: no fuzz, offsets reported)",
    )
    assert found[SERIES[6]] == ("exact", EMPTY_NOTE)
    assert all(found[name] == ("exact", "") for name in SERIES[1:5])
    text = package.cli("verify")
    assert text.code == 0
    assert "offset -3" in text.out
    assert "OK: 5 patch(es) apply exactly, 2 only at an offset (accepted under the dpkg rule)," in (
        " ".join(text.out.split())
    )


def test_dpkg_rule_says_dpkg_source_drops_a_file_a_patch_creates_empty(
    package: DebianPackage, tmp_path: Path
) -> None:
    """A git diff creating an empty file (``new file mode``, no hunk: libxml2's
    CVE-2025-8732.patch in bookworm) applies exactly, and git creates the file; but
    dpkg-source applies with ``patch -E``, which removes an empty file, so the
    package's tree lacks it. Under the dpkg rule the verdict says so, after an offset
    too; under the exact rule it is a plain exact patch."""
    for name, data in (("empty-marker.patch", EMPTY_MARKER), ("empty-shifted.patch", SHIFTED)):
        (package.quilt / name).write_bytes(data)
    with (package.quilt / "series").open("a") as series:
        series.write("empty-marker.patch\nempty-shifted.patch\n")
    # What dpkg-source does with it: GNU patch creates the file, -E removes it again.
    tree = tmp_path / "tree"
    tree.mkdir()
    for flags, exists in (([], True), (["-E"], False)):
        (tree / "tests" / "marker.txt").unlink(missing_ok=True)
        flags = ["-p1", "-t", "-N", "--fuzz=0", *flags]
        code, _ = run_gnu_patch(flags, tree, package.quilt / "empty-marker.patch")
        assert code == 0 and (tree / "tests" / "marker.txt").exists() is exists
    package.adopt()
    dropped = (
        "created empty: dpkg-source applies the series with 'patch -E', which removes an "
        "empty file: after this patch the package's tree lacks it"
    )
    found = statuses(package.cli("verify", "--format", "json"))
    assert found["empty-marker.patch"] == ("exact", f"tests/marker.txt {dropped}")
    assert found["empty-shifted.patch"] == (
        "offset",
        "src/util.c: hunk 1 applies only at offset -3 (line 7) on v1; accepted (dpkg rule: "
        f"no fuzz, offsets reported); tests/other.txt {dropped}",
    )
    package.configure("apply_rule: dpkg\n", "apply_rule: exact\n")
    found = statuses(package.cli("verify", "--format", "json", "--keep-going"))
    assert found["empty-marker.patch"] == ("exact", "")
    assert found["empty-shifted.patch"][1].endswith("on v1; run 'forktool refresh'")


def test_exact_rule_keeps_calling_hand_edited_headers_malformed(package: DebianPackage) -> None:
    package.adopt()
    package.configure("apply_rule: dpkg\n", "apply_rule: exact\n")
    result = package.cli("verify", "--format", "json")
    assert result.code == 1
    found = statuses(result)
    assert found[SERIES[0]][0] == "offset"
    assert found[SERIES[0]][1].endswith("; run 'forktool refresh'")
    assert found[SERIES[5]][0] == "malformed"
    assert "edited by hand: regenerate the patch" in found[SERIES[5]][1]


def test_check_passes_without_a_byte_of_a_patch_changed(package: DebianPackage) -> None:
    before = package.files()
    package.adopt()
    result = package.cli("check", "--skip", "align", "--format", "json")
    assert result.code == 0, result.out
    checks = {c["id"]: c for c in result.json()["checks"]}  # type: ignore[union-attr]
    apply_notes = [f["message"] for f in checks["apply"]["findings"]]
    assert any("offset -3" in note for note in apply_notes)
    assert any(EMPTY_NOTE in note for note in apply_notes)
    assert {f["severity"] for f in checks["apply"]["findings"]} == {"info"}
    assert checks["format"]["findings"] == []
    assert package.cli("fmt", "--check").code == 0
    fmt = package.cli("fmt")
    assert fmt.code == 0, fmt.out
    assert package.files() == before


def test_canonical_form_still_demands_the_canonical_layout(package: DebianPackage) -> None:
    package.adopt()
    package.configure("patch_form: maintainers\n", "patch_form: canonical\n")
    result = package.cli("check", "--only", "format", "--format", "json")
    assert result.code == 1
    (check,) = result.json()["checks"]  # type: ignore[misc]
    # format-patch's own layout (diffstat, abbreviated index lines) and an offset diff
    assert {Path(f["path"]).name for f in check["findings"]} >= {SERIES[0], SERIES[1]}


def test_maintainers_form_regenerates_only_the_diff_a_tighter_rule_refuses(
    package: DebianPackage,
) -> None:
    package.adopt()
    package.configure("apply_rule: dpkg\n", "apply_rule: exact\n")
    package.keep_only(*(n for n in SERIES if n != SERIES[5]))
    before = package.files()
    result = package.cli("fmt")
    assert result.code == 0, result.out
    after = package.files()
    changed = {name for name in before if before[name] != after[name]}
    assert changed == {SERIES[0]}
    old, new = before[SERIES[0]], after[SERIES[0]]
    head = old[: old.index(b"\ndiff --git ") + 1]
    assert new.startswith(head)  # From <sha>, mail header, diffstat: byte for byte
    assert b"@@ -37,7 +37,7 @@" in new and b"@@ -40,7 +40,7 @@" in old
    assert new.endswith(old[old.rindex(b"\n-- \n") :])  # the signature too
    assert package.cli("verify").code == 0


def test_fmt_in_canonical_form_keeps_the_upstream_commit_id(package: DebianPackage) -> None:
    """Regression: fmt rewrote git's ``From <sha>`` first line to zeros."""
    package.adopt()
    package.configure("patch_form: maintainers\n", "patch_form: canonical\n")
    package.keep_only(SERIES[0], SERIES[1])
    result = package.cli("fmt")
    assert result.code == 0, result.out
    for name, commit in ((SERIES[0], package.fix_util), (SERIES[1], package.pr_only)):
        first = (package.quilt / name).read_bytes().split(b"\n", 1)[0]
        assert first == f"From {commit} Mon Sep 17 00:00:00 2001".encode()
    assert package.cli("fmt", "--check").code == 0


def test_canonical_fmt_erases_no_fact(package: DebianPackage) -> None:
    """Regenerating a mail in the canonical form writes git's own header: a DEP-3 field a
    maintainer put among the mail's fields (nginx's ``Origin:`` and ``Forwarded:`` after
    ``Subject:``) moves to the end of the message instead of being lost; a file of
    several mails (gnutls28's CVE fixes, one upstream commit each) is refused, since one
    commit would lose every later mail's commit id, author and message."""
    package.adopt()
    package.configure("patch_form: maintainers\n", "patch_form: canonical\n")
    package.keep_only(SERIES[0])
    path = package.quilt / SERIES[0]
    origin = f"Origin: upstream, https://example.org/commit/{package.fix_util}"
    data = path.read_bytes()
    subject = data.index(b"\nSubject: ")
    end = data.index(b"\n", subject + 1)
    path.write_bytes(data[:end] + f"\n{origin}\nForwarded: not-needed".encode() + data[end:])
    result = package.cli("fmt")
    assert result.code == 0, result.out + result.err
    text = path.read_text()  # the message's last lines, right before the diff
    assert f"\n\n{origin}\nForwarded: not-needed\n\ndiff --git " in text
    assert package.cli("fmt", "--check").code == 0
    mails = (
        data
        + package.repo.git.run(
            ["format-patch", "--stdout", "-1", package.fix_main], purpose="a second mail"
        ).stdout
    )
    path.write_bytes(mails)
    refused = package.cli("fmt")
    assert refused.code != 0
    assert "holds 2 format-patch mails, a commit each" in refused.out + refused.err
    assert path.read_bytes() == mails  # nothing was written


def test_refresh_keeps_the_upstream_commit_id(package: DebianPackage) -> None:
    package.adopt()
    package.configure("patch_form: maintainers\n", "patch_form: canonical\n")
    package.keep_only(SERIES[1], SERIES[3])
    result = package.cli("refresh", "--onto", "v2")
    assert result.code == 0, result.out
    first = (package.quilt / SERIES[1]).read_bytes().split(b"\n", 1)[0]
    assert first == f"From {package.pr_only} Mon Sep 17 00:00:00 2001".encode()


def test_map_suggest_offers_a_from_line_only_for_upstreams_commit_with_its_subject(
    package: DebianPackage,
) -> None:
    result = package.adopt()
    mapped = (package.root / "upstream.map").read_text()
    assert f"{SERIES[0]} {package.fix_util}\n" in mapped
    assert f"{SERIES[1]} pending\n" in mapped  # only on a PR branch
    assert f"{SERIES[2]} pending\n" in mapped  # upstream's commit, another subject
    assert result.code == 0
    suggest = package.cli("map", "suggest", "--format", "json")
    found = {s["patch"]: s for s in suggest.json()["suggestions"] if s["commits"]}  # type: ignore[union-attr]
    assert set(found) == {SERIES[0]}
    assert found[SERIES[0]]["commits"] == [package.fix_util]
    assert found[SERIES[0]]["source"] == f"From {package.fix_util} Mon Sep 17 00:00:00 2001"


def test_a_from_line_stands_in_for_a_stated_commit_that_is_not_here(
    package: DebianPackage,
) -> None:
    """A stable repository's commit says it was picked from a main-line commit the
    stable repository does not hold (systemd-stable's picks of systemd's main): the
    patch made from it states that absent commit, and its ``From <sha>`` line names
    the stable commit, which is upstream's here. The one here is offered; a stated
    commit that is here still wins over the From line."""
    package.adopt()
    absent = "ab" * 20
    path = package.quilt / SERIES[0]
    text = path.read_bytes()
    cut = text.index(b"\n---\n")
    path.write_bytes(text[:cut] + f"\n\n(cherry picked from commit {absent})".encode() + text[cut:])
    suggest = package.cli("map", "suggest", "--format", "json")
    found = {s["patch"]: s for s in suggest.json()["suggestions"] if s["commits"]}  # type: ignore[union-attr]
    assert found[SERIES[0]]["commits"] == [package.fix_util]
    assert found[SERIES[0]]["source"] == f"From {package.fix_util} Mon Sep 17 00:00:00 2001"
    assert found[SERIES[0]]["present"] is True
    here = package.pr_only  # a commit that is here, stated: the statement wins
    path.write_bytes(text[:cut] + f"\n\n(cherry picked from commit {here})".encode() + text[cut:])
    suggest = package.cli("map", "suggest", "--format", "json")
    found = {s["patch"]: s for s in suggest.json()["suggestions"] if s["commits"]}  # type: ignore[union-attr]
    assert found[SERIES[0]]["commits"] == [here]


def test_from_line_in_a_release_tag_is_offered_when_the_branch_is_not_here(
    package: DebianPackage,
) -> None:
    package.adopt()
    package.repo.git.run(["update-ref", "-d", "refs/remotes/upstream/main"], purpose="x")
    suggest = package.cli("map", "suggest", "--format", "json")
    found = {s["patch"] for s in suggest.json()["suggestions"] if s["commits"]}  # type: ignore[union-attr]
    assert found == {SERIES[0]}  # in v2
    package.repo.git.run(["tag", "-d", "v2"], purpose="x")
    suggest = package.cli("map", "suggest", "--format", "json")
    assert [s for s in suggest.json()["suggestions"] if s["commits"]] == []  # type: ignore[union-attr]


def test_config_refuses_an_unknown_form_or_rule(package: DebianPackage) -> None:
    package.adopt()
    package.configure("apply_rule: dpkg\n", "apply_rule: fuzzy\n")
    result = package.cli("verify")
    assert result.code == 2
    assert re.search(
        r"forktool.yaml:\d+: apply_rule 'fuzzy' must be one of: exact, dpkg", result.err
    )
    package.configure("apply_rule: fuzzy\n", "apply_rule: dpkg\n")
    package.configure("patch_form: maintainers\n", "patch_form: debian\n")
    result = package.cli("verify")
    assert result.code == 2
    assert "patch_form 'debian' must be one of: canonical, maintainers" in result.err


def test_json_of_verify_names_the_rule(package: DebianPackage) -> None:
    package.adopt()
    package.configure("apply_rule: dpkg\n", "apply_rule: exact\n")
    data = json.loads(package.cli("verify", "--format", "json").out)
    assert data["rule"] == "exact"


def test_pending_patches_with_no_pr_are_one_line_on_check_and_sync(
    package: DebianPackage,
) -> None:
    package.adopt()
    result = package.cli("check", "--only", "files", "--format", "json")
    (check,) = result.json()["checks"]  # type: ignore[misc]
    messages = [f["message"] for f in check["findings"]]
    silent = [SERIES[1], SERIES[2], SERIES[4], SERIES[6]]  # no PR named: one line for all
    assert messages == [
        f"'{SERIES[5]}' is pending (PR https://bugs.example.org/12): kept, never retired until "
        "its upstream commit is written in",
        f"4 patch(es) pending with no PR named: {', '.join(silent)}: kept, never retired until "
        "an upstream commit is written in",
    ]
    plan = package.cli("sync", "v2", "--no-fetch", "--dry-run")
    said = plan.out.splitlines()
    assert sum("pending with no PR named" in line for line in said) == 1
    assert not any(line.strip().startswith(f"{SERIES[4]}:") for line in said)


def test_a_committed_debian_directory_gets_one_covering_ledger_line(
    package: DebianPackage,
) -> None:
    package.adopt()
    for name in ("control", "rules", "changelog", "source/format"):
        (package.root / "debian" / name).parent.mkdir(parents=True, exist_ok=True)
        (package.root / "debian" / name).write_text(f"{name}\n")
    files = {
        str(p.relative_to(package.root)): p.read_bytes()
        for p in package.root.rglob("*")
        if p.is_file() and ".git" not in p.parts
    }
    package.repo.commit("debian/ and the fork's files\n", files)
    result = package.cli("check", "--only", "align", "--format", "json")
    (check,) = result.json()["checks"]  # type: ignore[misc]
    hints = {f["path"]: f.get("hint") for f in check["findings"]}
    assert "debian/rules" in hints
    assert all(
        hint is not None and hint.startswith("declare all 4 in one line: add debian/** permanent")
        for path, hint in hints.items()
        if path.startswith("debian/")
    )
    ledger = package.root / "alignment.ledger"
    text = ledger.read_text() + "add debian/** permanent Debian packaging\n"
    package.repo.commit("ledger\n", {"alignment.ledger": text})
    assert package.cli("check", "--only", "align").code == 0


def test_forecast_page_gives_revisit_its_own_colour() -> None:
    from forktool.engine.upstream.forecast import Cell, ForecastResult, PatchRow
    from forktool.engine.upstream.targets import Target
    from forktool.model.revision import CommitId, Revision
    from forktool.report.forecast import forecast_html

    cells = (
        Cell("v2", "keep", "exact", None, "kept", ""),
        Cell("v2", "revisit", "exact", None, "the witnesses disagree", ""),
    )
    result = ForecastResult(
        "v1",
        "a" * 40,
        (Target(Revision("v2", CommitId("b" * 40))),),
        (PatchRow("keep.patch", cells[:1]), PatchRow("revisit.patch", cells[1:])),
    )
    page = forecast_html(result)
    colours = re.findall(r'<td class="cell [^"]*" tabindex="0" style="background:([^"]+)"', page)
    assert len(colours) == 2 and colours[0] != colours[1]
    assert 'verdict-revisit" tabindex' in page


@pytest.mark.parametrize("form", ["maintainers", "canonical"])
def test_refresh_and_fmt_keep_an_empty_patch_a_no_op(package: DebianPackage, form: str) -> None:
    """Regression: refresh aborted the whole run (exit 2) on procps' 0-byte ps_checks."""
    package.adopt()
    package.configure("patch_form: maintainers\n", f"patch_form: {form}\n")
    package.keep_only(SERIES[3], SERIES[6], SERIES[4])
    package.cli("fmt")
    result = package.cli("refresh", "--onto", "v2", "--format", "json")
    assert result.code == 0, result.out
    assert (package.quilt / SERIES[6]).read_bytes() == b""
    assert package.cli("fmt", "--check").code == 0
    assert package.cli("verify", "--base", "v2").code == 0


@pytest.mark.parametrize("engine", ["git", "patch"])
def test_apply_to_a_directory_follows_the_forks_rule(
    package: DebianPackage, tmp_path: Path, engine: str
) -> None:
    """An image applies the series as dpkg-source would: offsets accepted, then verified."""
    package.adopt()

    def pristine(name: str) -> Path:
        tree = tmp_path / name
        for path in ("src/util.c", "src/main.c", "README"):
            (tree / path).parent.mkdir(parents=True, exist_ok=True)
            data = package.repo.git.run(["show", f"v1:{path}"], purpose="the pinned tree").stdout
            (tree / path).write_bytes(data)
        return tree

    tree = pristine("dpkg")
    applied = package.cli("apply", "--target", tree, "--engine", engine, "--format", "json")
    assert applied.code == 0, applied.out
    found = statuses(applied)
    assert found[SERIES[0]][0] == "offset" and "accepted (dpkg rule" in found[SERIES[0]][1]
    assert b"UTIL 40" in (tree / "src/util.c").read_bytes()
    assert package.cli("apply", "--target", tree, "--engine", engine, "--verify").code == 0
    package.configure("apply_rule: dpkg\n", "apply_rule: exact\n")
    package.keep_only(*(n for n in SERIES if n != SERIES[5]))
    strict = pristine("exact")
    refused = package.cli("apply", "--target", strict, "--engine", engine, "--format", "json")
    assert refused.code == 1
    assert statuses(refused)[SERIES[0]][0] == "offset"
    assert b"UTIL 40" not in (strict / "src/util.c").read_bytes()


def test_forecast_counts_an_offset_as_a_break_only_under_the_exact_rule(
    package: DebianPackage,
) -> None:
    package.adopt()
    package.keep_only(SERIES[0], SERIES[3])
    package.repo.git.run(["tag", "v1.1", "v1"], purpose="a release with nothing new")
    dpkg = package.cli("forecast", "--no-fetch", "--tags", "v1.1", "--format", "json")
    assert dpkg.code == 0, dpkg.err
    (summary,) = dpkg.json()["summary"]  # type: ignore[misc]
    assert summary["breaks"] == [] and summary["carry_over"] == 2
    package.configure("apply_rule: dpkg\n", "apply_rule: exact\n")
    exact = package.cli("forecast", "--no-fetch", "--tags", "v1.1", "--format", "json")
    (summary,) = exact.json()["summary"]  # type: ignore[misc]
    assert summary["breaks"] == [SERIES[0]] and summary["carry_over"] == 1


def test_refresh_keeps_a_patch_the_dpkg_rule_accepts_byte_for_byte(package: DebianPackage) -> None:
    package.adopt()
    package.keep_only(SERIES[0], SERIES[3])
    before = package.files()
    result = package.cli("refresh", "--onto", "v1", "--format", "json")
    assert result.code == 0, result.out
    entries = {e["patch"]: e for e in result.json()["patches"]}  # type: ignore[union-attr]
    assert entries[SERIES[0]]["bytes_changed"] is False
    assert entries[SERIES[0]]["message"].endswith("; kept byte for byte")
    assert package.files() == before


def test_absorbed_tries_hand_edited_headers_under_the_dpkg_rule(package: DebianPackage) -> None:
    package.adopt()
    result = package.cli("absorbed", "--tag", "v2", "--format", "json")
    assert result.code == 0, result.err
    entry = next(p for p in result.json()["patches"] if p["patch"] == SERIES[5])  # type: ignore[union-attr]
    details = " ".join(e["detail"] for e in entry["evidence"])
    assert "regenerate the patch" not in details
    assert [e["kind"] for e in entry["evidence"]] == ["offset"]


def test_an_empty_patch_before_an_offset_keeps_every_verdict_in_place(
    package: DebianPackage,
) -> None:
    """git prints nothing for an empty patch: the one call's output must not shift."""
    package.adopt()
    package.keep_only(SERIES[6], SERIES[3], SERIES[0], SERIES[5])
    result = package.cli("verify", "--format", "json")
    assert result.code == 0, result.out
    found = statuses(result)
    assert found[SERIES[6]] == ("exact", EMPTY_NOTE)
    assert found[SERIES[3]] == ("exact", "")
    assert found[SERIES[0]][0] == "offset" and "offset -3" in found[SERIES[0]][1]
    assert found[SERIES[5]][0] == "offset" and "edited by hand" in found[SERIES[5]][1]
    absorbed = package.cli("absorbed", "--tag", "v1", "--format", "json")
    assert absorbed.code == 0, absorbed.err


def test_import_follows_the_forks_rule(package: DebianPackage, tmp_path: Path) -> None:
    """Under the dpkg rule a patch that lands at an offset is committed where it lands:
    the branch holds the tree dpkg-source's patch -F 0 makes; under the exact rule the
    same series is refused, naming the rule."""
    package.adopt()
    kept = [name for name in SERIES if name != SERIES[2]]  # no author to commit it as
    package.keep_only(*kept)
    result = package.cli("import", "--branch", "pq", "--format", "json")
    assert result.code == 0, result.err
    data = result.json()
    assert data["offset"] == [SERIES[0], SERIES[5]]
    assert [c["patch"] for c in data["commits"]] == kept
    tree = tmp_path / "tree"
    for name in ("src/util.c", "src/main.c", "README"):
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_bytes(package.repo.git.run(["show", f"v1:{name}"], purpose="x").stdout)
    for name in kept:
        assert run_gnu_patch(["-p1", "--fuzz=0", "-N", "-t"], tree, package.quilt / name)[0] == 0
    for name in ("src/util.c", "src/main.c", "README"):
        shown = package.repo.git.run(["show", f"pq:{name}"], purpose="the imported branch")
        assert shown.stdout == (tree / name).read_bytes(), name
    text = package.cli("import", "--branch", "pq", "--force")
    assert f"applied at an offset (the dpkg rule): {SERIES[0]}, {SERIES[5]}" in text.out
    package.configure("apply_rule: dpkg\n", "apply_rule: exact\n")
    refused = package.cli("import", "--branch", "pq2")
    assert refused.code == 2
    assert "under the fork's rule (exact)" in refused.err


def test_a_fork_file_git_ignores_is_said_by_init_and_check(package: DebianPackage) -> None:
    """Debian's libpng has ``*.map`` in its .gitignore: the upstream.map init writes
    would be left out of every commit, and CI's clone would have none."""
    (package.root / ".gitignore").write_text("*.map\n")
    adopted = package.cli(
        "init", "--pin", "v1", "--from-quilt", "debian/patches", "--format", "json"
    )
    assert adopted.code == 0, adopted.err
    assert "git ignores upstream.map (a .gitignore rule)" in adopted.err
    assert adopted.json()["warnings"][-1].endswith("git add -f upstream.map")  # type: ignore[index]
    checked = package.cli("check", "--only", "files", "--format", "json")
    (files,) = checked.json()["checks"]  # type: ignore[misc]
    found = [(f["severity"], f["path"], f["message"]) for f in files["findings"]]
    assert (
        "warning",
        "upstream.map",
        "upstream.map is ignored by git (a .gitignore rule): a commit leaves it out, and a fresh "
        "clone has none",
    ) in found
    package.repo.git.run(["add", "-f", "upstream.map"], purpose="track it anyway")
    again = package.cli("check", "--only", "files", "--format", "json").json()["checks"][0]  # type: ignore[index]
    assert not [f for f in again["findings"] if "ignored by git" in f["message"]]


def test_adopting_a_series_that_lists_no_patch_warns(package: DebianPackage) -> None:
    """Debian's mpfr4 keeps a series of one comment: init warns, as every command that
    needs a patch refuses the fork."""
    for path in package.quilt.iterdir():
        if path.name != "series":
            path.unlink()
    (package.quilt / "series").write_text("# empty\n")
    adopted = package.cli("init", "--pin", "v1", "--from-quilt", "debian/patches")
    assert adopted.code == 0, adopted.err
    assert "debian/patches/series lists no patch: verify, check, import and apply" in adopted.err


def test_import_names_a_patch_without_an_author_once_and_says_what_to_add(
    package: DebianPackage,
) -> None:
    """A patch whose mail header names no author cannot become a commit: import says so
    naming the patch once, and the hint says what to add (fmt keeps a maintainer's
    header byte for byte, so it is no way out)."""
    path = package.quilt / SERIES[2]
    path.write_bytes(path.read_bytes().replace(b"\nFrom: drh <>\n", b"\nFrom: drh\n", 1))
    package.adopt()
    refused = package.cli("import", "--branch", "pq")
    assert refused.code == 2
    errors = refused.error_lines
    assert errors[0] == (
        f"error: debian/patches/{SERIES[2]}: the mail header needs a 'From: Name <email>' and "
        "a 'Date:' line to be regenerated"
    )
    assert errors[1].startswith("hint: give it a 'From: Name <email>' and a 'Date:' line")


def test_an_author_git_accepts_is_one_import_and_fmt_accept(package: DebianPackage) -> None:
    """sqlite3's fossil exports name ``drh <>`` (an empty email) and ``dan <Dan Kennedy>``
    (no address): git commits and format-patches both, so import makes the commit and
    export gives the file back; canonical fmt regenerates the header with the same author."""
    path = package.quilt / SERIES[2]
    package.adopt()
    assert package.cli("import", "--branch", "pq").code == 0
    authors = package.repo.git.out(["log", "--format=%an <%ae>", "v1..pq"], purpose="t")
    assert "drh <>" in authors.splitlines()
    package.configure("patch_form: maintainers\n", "patch_form: canonical\n")
    path.write_bytes(
        path.read_bytes().replace(b"\nFrom: drh <>\n", b"\nFrom: dan <Dan Kennedy>\n", 1)
    )
    result = package.cli("fmt")
    assert result.code == 0, result.out + result.err
    assert b"\nFrom: dan <Dan Kennedy>\n" in path.read_bytes()


def test_import_then_export_keeps_the_maintainers_bytes_and_the_disabled_patches(
    package: DebianPackage,
) -> None:
    """``patch_form: maintainers``: export gives back each file as the maintainers wrote
    it (git's signature, DEP-3 headers, quilt's Index: line and timestamps), and a patch
    the series switches off (``#name``) keeps its line and its file: the import branch
    cannot carry it, and export once deleted it."""
    package.adopt()
    quilted = (
        b"Description: Debian's own paths\nAuthor: Dana <dana@debian.org>\n---\n"
        b"Index: pkg/README\n" + b"=" * 67 + b"\n"
        b"--- pkg.orig/README\t2023-01-01 10:00:00.000000000 +0000\n"
        b"+++ pkg/README\t2023-01-02 10:00:00.000000000 +0000\n"
        + _diff_part(package.patches[SERIES[3]]).split(b"\n@@", 1)[1].join([b"@@", b""])
    )
    (package.quilt / SERIES[3]).write_bytes(quilted)
    package.keep_only(SERIES[0], SERIES[3], SERIES[4])
    (package.quilt / "debian-off.patch").write_bytes(package.patches[SERIES[1]])
    series = package.quilt / "series"
    series.write_text(f"{SERIES[0]}\n#debian-off.patch\n{SERIES[3]}\n{SERIES[4]}\n")
    assert package.cli("check", "--only", "apply").code == 0
    before = package.files()
    assert package.cli("import", "--branch", "work").code == 0
    exported = package.cli("export", "--from", "work", "--format", "json")
    assert exported.code == 0, exported.err
    after = package.files()
    assert {k: v for k, v in after.items() if k != "series"} == {
        k: v for k, v in before.items() if k != "series"
    }
    assert series.read_text() == f"{SERIES[0]}\n{SERIES[3]}\n{SERIES[4]}\n#debian-off.patch\n"
