"""Refresh by git's 3-way merge (``merged``), and a refresh that goes on past a conflict.

Upstream ``v1`` is pinned; ``v2`` drifts in every way a real release does: it edits a
context line of 0001's hunk (no apply, exact or at an offset, moves it; a merge does),
rewrites the line 0002 changes (a true conflict), leaves c.py alone (0003 unchanged),
rewrites the line 0004 changes (a second conflict), moves cpan/Mod.pm to dist/Mod.pm
(0005 must follow it there), and makes half of 0006's change itself (partly absorbed).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from testing.helpers import MiniFork, make_patch, mini_fork, run_cli, snapshot_tree

from forktool.builder import RepoBuilder
from forktool.model.record import empty_section

IDENTITY = {"GIT_AUTHOR_NAME": "Sync Bot", "GIT_AUTHOR_EMAIL": "sync@fork.example"}


def lines(prefix: str, count: int = 30) -> str:
    return "".join(f"{prefix}{i}\n" for i in range(1, count + 1))


V1 = {
    "a.py": lines("a"),
    "b.py": lines("b"),
    "c.py": lines("c"),
    "d.py": lines("d"),
    "cpan/Mod.pm": lines("m"),
    "e.py": lines("e"),
}


def edit(text: str, *pairs: tuple[str, str]) -> str:
    for old, new in pairs:
        assert old in text
        text = text.replace(old, new, 1)
    return text


FORK_EDITS = {
    "0001-a.patch": ("a.py", [("a10\n", "fork10\n")]),
    "0002-b.patch": ("b.py", [("b10\n", "fork10\n")]),
    "0003-c.patch": ("c.py", [("c10\n", "fork10\n")]),
    "0004-d.patch": ("d.py", [("d10\n", "fork10\n")]),
    "0005-mod.patch": ("cpan/Mod.pm", [("m10\n", "fork10\n")]),
    "0006-e.patch": ("e.py", [("e5\n", "typo5\n"), ("e20\n", "typo20\n")]),
}
V2 = {
    "a.py": edit(V1["a.py"], ("a8\n", "up8\n")),
    "b.py": edit(V1["b.py"], ("b10\n", "up10\n")),
    "d.py": edit(V1["d.py"], ("d10\n", "up10\n")),
    "cpan/Mod.pm": None,
    "dist/Mod.pm": V1["cpan/Mod.pm"],
    "e.py": edit(V1["e.py"], ("e5\n", "typo5\n")),
}


def fork_patches(repo: RepoBuilder) -> dict[str, bytes]:
    return {
        name: make_patch(repo, "v1", {path: edit(V1[path], *pairs)}, name[5:-6])
        for name, (path, pairs) in FORK_EDITS.items()
    }


@pytest.fixture
def drift(builder: RepoBuilder) -> MiniFork:
    fork = mini_fork(builder, dict(V1))
    patches = fork_patches(builder)
    builder.commit("upstream: drift\n", dict(V2))
    builder.tag("v2")
    fork.write(patches)
    return fork


def keep_only(fork: MiniFork, names: list[str], extra_config: str = "") -> None:
    """Rewrite the fork with only ``names`` (the other patch files deleted)."""
    for name in fork.patches:
        if name not in names:
            (fork.root / "patches" / name).unlink(missing_ok=True)
    fork.write({n: fork.patches[n] for n in names}, extra_config=extra_config)


def statuses(data: dict[str, object]) -> dict[str, str]:
    return {p["patch"]: p["status"] for p in data["patches"]}  # type: ignore[attr-defined]


def messages(data: dict[str, object]) -> dict[str, str]:
    return {p["patch"]: p["message"] for p in data["patches"]}  # type: ignore[attr-defined]


def test_refresh_merges_moves_renames_and_goes_on_past_every_conflict(drift: MiniFork) -> None:
    before = snapshot_tree(drift.root)
    result = drift.cli("refresh", "--onto", "v2", "--format", "json")
    assert result.code == 1
    data = result.json()
    assert statuses(data) == {
        "0001-a.patch": "merged",
        "0002-b.patch": "conflict",
        "0003-c.patch": "unchanged",
        "0004-d.patch": "conflict",
        "0005-mod.patch": "merged",
        "0006-e.patch": "merged",
    }
    said = messages(data)
    assert said["0001-a.patch"] == (
        "a.py: hunk 1 does not apply at line 7 on v2: its lines are not there; moved by a "
        "3-way merge from its pre-image on v1 (no conflict, proven exact); review it; "
        "would be regenerated"
    )
    assert (
        "it now changes dist/Mod.pm (was cpan/Mod.pm): upstream moved the file"
        in said["0005-mod.patch"]
    )
    assert (
        "upstream already has part of it: 2 of its 4 changed lines remain" in said["0006-e.patch"]
    )
    assert said["0002-b.patch"].endswith("; a 3-way merge conflicts too (in b.py)")
    assert data["message"] == (
        "2 patches conflict on v2 (0002-b.patch, 0004-d.patch): nothing was written; "
        "rerun with --worktree DIR to resolve them by hand, one after the other"
    )
    assert snapshot_tree(drift.root) == before


def test_merged_patches_are_written_exact_and_equal_the_expected_change(
    drift: MiniFork,
) -> None:
    repo = drift.repo
    # make_patch commits on a detached HEAD: the fork's files are written after it
    wanted = {
        "0001-a.patch": ("a.py", edit(V2["a.py"], ("a10\n", "fork10\n"))),
        "0005-mod.patch": ("dist/Mod.pm", edit(V1["cpan/Mod.pm"], ("m10\n", "fork10\n"))),
        "0006-e.patch": ("e.py", edit(V2["e.py"], ("e20\n", "typo20\n"))),
    }
    expected = {
        name: (path, make_patch(repo, "v2", {path: text}, name))
        for name, (path, text) in wanted.items()
    }
    keep_only(drift, ["0001-a.patch", "0003-c.patch", "0005-mod.patch", "0006-e.patch"])
    result = drift.cli("refresh", "--onto", "v2", "--format", "json")
    assert result.code == 0, result.out
    assert statuses(result.json())["0001-a.patch"] == "merged"
    assert drift.cli("verify", "--base", "v2").code == 0  # exact, and the round trip
    for name, (path, want) in expected.items():
        written = (drift.root / "patches" / name).read_bytes()
        assert _file_diff(written, path) == _file_diff(want, path), name


def _file_diff(data: bytes, path: str) -> bytes:
    """The part of a format-patch that changes ``path``."""
    start = data.index(f"diff --git a/{path} ".encode())
    end = data.find(b"\ndiff --git ", start)
    return data[start : end + 1 if end != -1 else len(data)]


def test_allow_merged_false_makes_a_merge_a_conflict(drift: MiniFork) -> None:
    keep_only(drift, ["0001-a.patch"], extra_config="refresh:\n  allow_merged: false\n")
    result = drift.cli("refresh", "--onto", "v2", "--format", "json")
    assert result.code == 1
    assert statuses(result.json()) == {"0001-a.patch": "conflict"}
    assert messages(result.json())["0001-a.patch"].endswith(
        "; a 3-way merge moves it with no conflict, but refresh.allow_merged is false: "
        "resolve it by hand"
    )


@pytest.mark.parametrize(
    ("section", "error"),
    [
        ("refresh:\n  allow_merged: maybe\n", "refresh.allow_merged"),
        ("refresh:\n  allow_fuzz: true\n", "allow_fuzz"),
    ],
)
def test_the_refresh_section_is_validated(drift: MiniFork, section: str, error: str) -> None:
    drift.write(drift.patches, extra_config=section)
    result = drift.cli("refresh", "--onto", "v2")
    assert result.code == 2
    assert error in result.error_lines[0]


def test_a_change_upstream_made_whole_under_moved_context_is_already_there(
    builder: RepoBuilder,
) -> None:
    """It does not reverse-apply (the context moved too), but the merge changes nothing."""
    fork = mini_fork(builder, {"a.py": lines("a")})
    patch = make_patch(builder, "v1", {"a.py": edit(lines("a"), ("a10\n", "fork10\n"))}, "a")
    builder.commit(
        "upstream\n", {"a.py": edit(lines("a"), ("a10\n", "fork10\n"), ("a7\n", "u7\n"))}
    )
    builder.tag("v2")
    fork.write({"0001-a.patch": patch})
    result = fork.cli("refresh", "--onto", "v2", "--format", "json")
    assert result.code == 1
    assert statuses(result.json()) == {"0001-a.patch": "conflict"}
    assert result.json()["message"] == (
        "0001-a.patch is already on v2 (a 3-way merge of it changes nothing): retire it first "
        "(forktool retire 0001-a.patch --tag v2 --force --reason '...') or drop it; "
        "nothing was written"
    )


def test_several_patches_already_there_are_told_in_one_sentence_per_kind(
    builder: RepoBuilder,
) -> None:
    """A release that absorbed many patches (a distribution's backports) gets one line
    per kind of patch, naming the first few, not one sentence per patch."""
    names = [f"000{n}-{x}.patch" for n, x in enumerate("abc", start=1)]
    files = {f"{x}.py": lines(x) for x in "abc"}
    fork = mini_fork(builder, files)
    changed = {f"{x}.py": edit(lines(x), (f"{x}10\n", "fork10\n")) for x in "abc"}
    patches = {
        name: make_patch(builder, "v1", {f"{x}.py": changed[f"{x}.py"]}, x)
        for name, x in zip(names, "abc", strict=True)
    }
    builder.commit("upstream takes them all\n", changed)
    builder.tag("v2")
    pr = "pending https://github.com/example/project/pull/"
    fork.write(patches, commits={names[0]: "none", names[1]: pr + "11", names[2]: pr + "12"})
    result = fork.cli("refresh", "--onto", "v2", "--format", "json")
    assert result.code == 1
    by_hand = "forktool retire PATCH... --tag v2 --force --reason '...'"
    assert result.json()["message"] == (
        f"3 patches are already on v2: 2 pending ({names[1]}, {names[2]}): record the commits "
        "that merged their PRs first (forktool upstream resolve --write), so ancestry retires "
        f"them, or retire them by hand ({by_hand}); 1 more ({names[0]}): retire it first "
        f"({by_hand}) or drop it; nothing was written"
    )
    fork.write(patches, commits={name: f"{pr}{n}" for n, name in enumerate(names)})
    message = fork.cli("refresh", "--onto", "v2", "--format", "json").json()["message"]
    assert str(message).startswith(
        f"3 patches are already on v2, all pending ({', '.join(names)}): "
    )
    # pending with no PR: nothing for upstream resolve to read; map the commit instead
    fork.write(patches, commits=dict.fromkeys(names, "pending"))
    message = fork.cli("refresh", "--onto", "v2", "--format", "json").json()["message"]
    assert "upstream resolve" not in str(message)
    assert str(message).startswith(f"3 patches are already on v2 ({', '.join(names)}): retire")


def test_conflicts_beside_a_patch_already_there_are_named_too(builder: RepoBuilder) -> None:
    """The summary names the patch already there and the real conflicts beside it:
    the table is not all a reader (or a job's log) looks at."""
    files = {f"{x}.py": lines(x) for x in "abc"}
    fork = mini_fork(builder, files)
    changed = {f"{x}.py": edit(lines(x), (f"{x}10\n", "fork10\n")) for x in "abc"}
    names = [f"000{n}-{x}.patch" for n, x in enumerate("abc", start=1)]
    patches = {
        name: make_patch(builder, "v1", {f"{x}.py": changed[f"{x}.py"]}, x)
        for name, x in zip(names, "abc", strict=True)
    }
    upstream = {"a.py": changed["a.py"]}  # takes 0001; rewrites the lines 0002 and 0003 change
    upstream |= {f"{x}.py": edit(lines(x), (f"{x}10\n", "up10\n")) for x in "bc"}
    builder.commit("upstream\n", upstream)
    builder.tag("v2")
    fork.write(patches)
    result = fork.cli("refresh", "--onto", "v2", "--format", "json")
    assert result.code == 1
    assert result.json()["message"] == (
        f"{names[0]} is already on v2 (it reverse-applies exactly): retire it first "
        f"(forktool retire {names[0]} --tag v2 --force --reason '...') or drop it; "
        f"2 more patches conflict on v2 ({names[1]}, {names[2]}): rerun with --worktree DIR "
        "to resolve them by hand once that one is retired; nothing was written"
    )


def test_the_worktree_takes_every_conflict_one_after_the_other(
    drift: MiniFork, tmp_path: Path
) -> None:
    wt = tmp_path / "resolve"
    first = drift.cli("refresh", "--onto", "v2", "--worktree", wt, "--format", "json")
    assert first.code == 1
    data = first.json()
    assert statuses(data)["0004-d.patch"] == "conflict"
    assert messages(data)["0003-c.patch"] == "tried without 0002-b.patch"
    assert str(data["message"]).endswith("; 1 more conflict(s) follow: 0004-d.patch")
    (wt / "b.py").write_text(edit(V2["b.py"], ("up10\n", "up10 fork10\n")))
    second = drift.cli("refresh", "--continue", "--format", "json")
    assert second.code == 1
    assert statuses(second.json())["0002-b.patch"] == "resolved"
    assert "<<<<<<< " in (wt / "d.py").read_text()
    (wt / "d.py").write_text(edit(V2["d.py"], ("up10\n", "up10 fork10\n")))
    done = drift.cli("refresh", "--continue", "--format", "json")
    assert done.code == 0, done.out
    assert statuses(done.json()) == {
        "0001-a.patch": "merged",
        "0002-b.patch": "resolved",
        "0003-c.patch": "unchanged",
        "0004-d.patch": "resolved",
        "0005-mod.patch": "merged",
        "0006-e.patch": "merged",
    }
    assert drift.cli("verify", "--base", "v2").code == 0


# -- sync and poll -------------------------------------------------------------------------


@pytest.fixture
def drift_fork(builder: RepoBuilder, monkeypatch: pytest.MonkeyPatch) -> RepoBuilder:
    for key, value in IDENTITY.items():
        monkeypatch.setenv(key, value)
    builder.commit("upstream: import\n", dict(V1))
    builder.tag("v1")
    patches = fork_patches(builder)
    files: dict[str, str | bytes | None] = {f"patches/{n}": d for n, d in patches.items()}
    files["series"] = "".join(f"{n}\n" for n in patches)
    files["upstream.map"] = "".join(f"{n} none\n" for n in patches)
    files["forktool.yaml"] = (
        f"pin:\n  tag: v1\n  commit: {builder.rev('v1')}\nlayout: overlay\nrelease_tags: 'v*'\n"
    )
    files["FORK.md"] = "# Fork\n\n" + empty_section()
    builder.commit("fork: carry the patches\n", files)
    builder.branch("upstream", "v1")
    builder.checkout("upstream")
    builder.commit("upstream: drift\n", dict(V2))
    builder.tag("v2")
    builder.checkout("main")
    return builder


def test_sync_plan_and_poll_list_every_conflict_and_the_merged_patches(
    drift_fork: RepoBuilder,
) -> None:
    plan = run_cli(
        "-C", drift_fork.path, "sync", "v2", "--no-fetch", "--dry-run", "--format", "json"
    )
    assert plan.code == 1
    data = plan.json()
    assert [str(c).split(":")[0] for c in data["conflicts"]] == ["0002-b.patch", "0004-d.patch"]  # type: ignore[union-attr]
    assert data["merged"] == ["0001-a.patch", "0005-mod.patch", "0006-e.patch"]
    text = run_cli("-C", drift_fork.path, "upstream", "poll", "--no-fetch")
    assert text.code == 4
    assert (
        "review first: moved by a 3-way merge: 0001-a.patch, 0005-mod.patch, 0006-e.patch"
        in text.out
    )


def test_sync_stops_once_then_resolves_conflicts_in_turn(drift_fork: RepoBuilder) -> None:
    stopped = run_cli("-C", drift_fork.path, "sync", "v2", "--no-fetch", "--format", "json")
    assert stopped.code == 1
    data = stopped.json()
    assert len(data["conflicts"]) == 2  # type: ignore[arg-type]
    wt = Path(str(data["worktree"])).parent / "resolve"
    assert str(data["message"]).startswith(
        "2 patches conflict on v2 (0002-b.patch, 0004-d.patch): resolve them one after the other"
    )
    (wt / "b.py").write_text(edit(V2["b.py"], ("up10\n", "up10 fork10\n")))
    again = run_cli("-C", drift_fork.path, "sync", "--continue", "--format", "json")
    assert again.code == 1
    (wt / "d.py").write_text(edit(V2["d.py"], ("up10\n", "up10 fork10\n")))
    done = run_cli("-C", drift_fork.path, "sync", "--continue", "--format", "json")
    assert done.json()["stage"] == "done", done.out
    assert done.json()["merged"] == ["0001-a.patch", "0005-mod.patch", "0006-e.patch"]


def test_a_merged_plain_diff_keeps_its_header_lines(builder: RepoBuilder) -> None:
    """A Debian-style patch (DEP-3 header, ``pkg.orig/`` paths) moved by a merge keeps its
    header byte for byte; only its diff is regenerated."""
    fork = mini_fork(builder, {"a.py": lines("a")})
    header = "Description: fork ten\nAuthor: Deb Maint <deb@example.org>\n---\n"
    body = "".join(f" a{i}\n" for i in range(7, 10)) + "-a10\n+fork10\n"
    body += "".join(f" a{i}\n" for i in range(11, 14))
    plain = f"{header}--- pkg.orig/a.py\n+++ pkg/a.py\n@@ -7,7 +7,7 @@\n{body}"
    builder.commit("upstream\n", {"a.py": edit(lines("a"), ("a8\n", "up8\n"))})
    builder.tag("v2")
    fork.write({"fork-ten.diff": plain.encode()})
    result = fork.cli("refresh", "--onto", "v2", "--format", "json")
    assert result.code == 0, result.out
    assert statuses(result.json()) == {"fork-ten.diff": "merged"}
    written = (fork.root / "patches" / "fork-ten.diff").read_text()
    assert written.startswith(header)
    assert "-up8\n" not in written and " up8\n" in written and "+fork10\n" in written
    assert fork.cli("verify", "--base", "v2").code == 0


def test_poll_needs_hands_when_merged_is_forbidden(drift_fork: RepoBuilder) -> None:
    config = drift_fork.path / "forktool.yaml"
    drift_fork.commit(
        "fork: a human on every move\n",
        {"forktool.yaml": config.read_text() + "refresh:\n  allow_merged: false\n"},
    )
    plan = run_cli(
        "-C", drift_fork.path, "sync", "v2", "--no-fetch", "--dry-run", "--format", "json"
    )
    data = plan.json()
    assert data["merged"] == []
    assert [str(c).split(":")[0] for c in data["conflicts"]] == [  # type: ignore[union-attr]
        "0001-a.patch",
        "0002-b.patch",
        "0004-d.patch",
        "0005-mod.patch",
        "0006-e.patch",
    ]


def test_a_patch_that_does_not_apply_on_the_pin_leaves_the_later_ones_their_pre_images(
    drift: MiniFork,
) -> None:
    """The pre-images are built as a rebase goes: past a patch that fails on the pin."""
    broken = drift.patches["0004-d.patch"].replace(b"-d10\n", b"-d10 not on v1\n")
    keep_only(drift, ["0001-a.patch"])
    drift.write({"0000-broken.patch": broken, "0001-a.patch": drift.patches["0001-a.patch"]})
    result = drift.cli("refresh", "--onto", "v2", "--format", "json")
    assert statuses(result.json()) == {"0000-broken.patch": "conflict", "0001-a.patch": "merged"}


def test_the_worktree_shows_merge_markers_for_a_plain_diff_without_blob_ids(
    builder: RepoBuilder, tmp_path: Path
) -> None:
    """A quilt patch names no blobs (git apply --3way cannot merge it and leaves .rej
    files): the worktree gets git's merge from its pre-image on the pin instead."""
    fork = mini_fork(builder, {"a.py": lines("a")})
    body = "".join(f" a{i}\n" for i in range(7, 10)) + "-a10\n+fork10\n"
    body += "".join(f" a{i}\n" for i in range(11, 14))
    plain = f"--- pkg.orig/a.py\n+++ pkg/a.py\n@@ -7,7 +7,7 @@\n{body}"
    builder.commit("upstream\n", {"a.py": edit(lines("a"), ("a10\n", "up10\n"))})
    builder.tag("v2")
    fork.write({"fork-ten.diff": plain.encode()})
    wt = tmp_path / "resolve"
    opened = fork.cli("refresh", "--onto", "v2", "--worktree", wt, "--format", "json")
    assert opened.code == 1
    assert "merged 3-way from its pre-image on v1, with conflict markers" in str(
        messages(opened.json())["fork-ten.diff"]
    )
    text = (wt / "a.py").read_text()
    assert "<<<<<<< " in text and "up10\n" in text and "fork10\n" in text
    assert not list(wt.glob("*.rej"))
    (wt / "a.py").write_text(edit(lines("a"), ("a10\n", "up10 fork10\n")))
    done = fork.cli("refresh", "--continue", "--format", "json")
    assert done.code == 0, done.out
    assert fork.cli("verify", "--base", "v2").code == 0


def test_a_forbidden_merge_is_left_merged_in_the_worktree_for_review(
    drift: MiniFork, tmp_path: Path
) -> None:
    keep_only(drift, ["0001-a.patch"], extra_config="refresh:\n  allow_merged: false\n")
    wt = tmp_path / "resolve"
    opened = drift.cli("refresh", "--onto", "v2", "--worktree", wt, "--format", "json")
    assert opened.code == 1
    assert "merged 3-way from its pre-image on v1, with no conflict: review it" in str(
        messages(opened.json())["0001-a.patch"]
    )
    assert (wt / "a.py").read_text() == edit(V2["a.py"], ("a10\n", "fork10\n"))
    done = drift.cli("refresh", "--continue", "--format", "json")
    assert statuses(done.json()) == {"0001-a.patch": "resolved"}


def test_a_change_there_already_is_never_made_twice_at_an_offset(builder: RepoBuilder) -> None:
    """Upstream took the patch (and moved the file's lines); a second block has the
    lines the patch found at first. Applied on v2 it lands there, at an offset (GNU
    patch and quilt would make the change twice: Debian's haproxy, a function defined
    twice). It reverse-applies on v2, so refresh says it is already there."""
    block = ["pad 1", "pad 2", "{", "  a();", "  b();", "  c();", "}", "pad 3", "pad 4"]
    v1 = "\n".join(["f:", *block, *(f"filler {n}" for n in range(20)), "g:", *block]) + "\n"
    fixed = v1.replace("  b();\n", "  b();\n  x();\n", 1)
    fork = mini_fork(builder, {"code.c": v1})
    patch = make_patch(builder, "v1", {"code.c": fixed}, "call x")
    builder.commit("upstream: takes it, and a header\n", {"code.c": "/* new */\n" * 5 + fixed})
    builder.tag("v2")
    fork.write({"0001-x.patch": patch})
    verified = fork.cli("verify", "--base", "v2", "--format", "json").json()
    (entry,) = verified["patches"]  # type: ignore[misc]
    assert entry["status"] == "fails"  # as refresh and forecast say: already there
    assert str(entry["message"]).startswith("already applied: the change is there")
    result = fork.cli("refresh", "--onto", "v2", "--format", "json")
    assert result.code == 1
    data = result.json()
    assert statuses(data) == {"0001-x.patch": "conflict"}
    assert messages(data)["0001-x.patch"].startswith(
        "already applied: the change is there (it reverse-applies); forward it applies "
        "only at an offset, which would make it twice: code.c: hunk 1 applies only at offset"
    )
    assert str(data["message"]).startswith(
        "0001-x.patch is already on v2 (it reverse-applies, and forward only at an offset): "
    )
    assert (fork.root / "patches" / "0001-x.patch").read_bytes() == patch  # nothing written
    forecast = fork.cli("forecast", "--tags", "v2", "--no-fetch", "--format", "json")
    assert forecast.code == 0, forecast.err
    (cell,) = forecast.json()["patches"][0]["cells"]  # type: ignore[index]
    assert cell["apply"] == "conflict"  # what the refresh says, not the look-alike's offset


def test_a_look_alike_farther_off_does_not_make_a_patch_applied(builder: RepoBuilder) -> None:
    """The patch deletes a line from the first of two like blocks; upstream deleted it
    from the second only (and moved the lines). The patch still applies, at an offset,
    on its own block; its reverse finds the second block, farther off: a look-alike,
    so the patch is rebased, not taken for applied."""
    block = ["pad 1", "pad 2", "{", "  a();", "  b();", "  c();", "}", "pad 3", "pad 4"]
    v1 = "\n".join(["f:", *block, *(f"filler {n}" for n in range(20)), "g:", *block]) + "\n"
    fork = mini_fork(builder, {"code.c": v1})
    patch = make_patch(builder, "v1", {"code.c": v1.replace("  b();\n", "", 1)}, "drop b")
    second = v1.rfind("  b();\n")
    upstream = v1[:second] + v1[second + len("  b();\n") :]
    builder.commit(
        "upstream: drops g's b, and a header\n", {"code.c": "/* new */\n" * 5 + upstream}
    )
    builder.tag("v2")
    fork.write({"0001-drop.patch": patch})
    result = fork.cli("refresh", "--onto", "v2", "--format", "json")
    assert result.code == 0, result.out
    assert statuses(result.json()) == {"0001-drop.patch": "rebased"}


MAINTAINERS = "patch_form: maintainers\napply_rule: dpkg\n"
TEN = (
    "".join(f" a{i}\n" for i in range(7, 10))
    + "-a10\n+fork10\n"
    + "".join(f" a{i}\n" for i in range(11, 14))
)


def test_a_mail_header_without_an_email_still_has_its_pre_image(builder: RepoBuilder) -> None:
    """A maintainer's mail header that names no email (sqlite's fossil exports write
    ``From: drh <>``) is kept byte for byte in the maintainers' form, so it must not
    cost the patch its pre-image: the commits a merge replays are only its sides."""
    fork = mini_fork(builder, {"a.py": lines("a")})
    header = (
        "From 1111111111111111111111111111111111111111 Mon Sep 17 00:00:00 2001\n"
        "From: drh <>\nDate: Fri, 27 Jun 2025 19:02:21 +0000\nSubject: [PATCH] ten\n\n---\n"
    )
    builder.commit("upstream\n", {"a.py": edit(lines("a"), ("a8\n", "up8\n"))})
    builder.tag("v2")
    fork.write(
        {"ten.patch": f"{header}--- a/a.py\n+++ b/a.py\n@@ -7,7 +7,7 @@\n{TEN}".encode()},
        extra_config=MAINTAINERS,
    )
    assert fork.cli("verify").code == 0
    result = fork.cli("refresh", "--onto", "v2", "--format", "json")
    assert result.code == 0, result.out
    assert statuses(result.json()) == {"ten.patch": "merged"}
    assert (fork.root / "patches" / "ten.patch").read_text().startswith(header)
    assert fork.cli("verify", "--base", "v2").code == 0


def test_a_hunk_header_edited_by_hand_under_dpkg_still_has_its_pre_image(
    builder: RepoBuilder,
) -> None:
    """Under dpkg-source's rule a hunk whose ``+new`` start was not bumped by hand
    (sqlite's 30-cross.patch) applies on the pin, at an offset: its pre-image is built
    under the fork's rule too, so a merge can move it."""
    fork = mini_fork(builder, {"a.py": lines("a", 40)})
    first = "".join(f" a{i}\n" for i in range(8, 11)) + "+a10b\n"
    first += "".join(f" a{i}\n" for i in range(11, 14))
    second = "".join(f" a{i}\n" for i in range(27, 30)) + "-a30\n+thirty\n"
    second += "".join(f" a{i}\n" for i in range(31, 34))
    plain = f"--- a/a.py\n+++ b/a.py\n@@ -8,6 +8,7 @@\n{first}@@ -27,7 +27,7 @@\n{second}"
    builder.commit("upstream\n", {"a.py": edit(lines("a", 40), ("a27\n", "up27\n"))})
    builder.tag("v2")
    fork.write({"two.diff": plain.encode()}, extra_config=MAINTAINERS)
    assert fork.cli("verify").code == 0
    result = fork.cli("refresh", "--onto", "v2", "--format", "json")
    assert result.code == 0, result.out
    assert statuses(result.json()) == {"two.diff": "merged"}
    assert "thirty" in (fork.root / "patches" / "two.diff").read_text()


@pytest.mark.parametrize("form", ["patch_form: maintainers\n", MAINTAINERS])
def test_a_patch_merged_before_a_conflict_is_written_regenerated_after_continue(
    drift: MiniFork, tmp_path: Path, form: str
) -> None:
    """In the maintainers' form a patch that applies is kept byte for byte; one a merge
    moved is regenerated. The refresh that stops on a later conflict must write it so
    too once the conflict is resolved, never its old bytes, which no longer apply."""
    keep_only(drift, ["0001-a.patch", "0002-b.patch"], extra_config=form)
    old = (drift.root / "patches" / "0001-a.patch").read_bytes()
    wt = tmp_path / "resolve"
    first = drift.cli("refresh", "--onto", "v2", "--worktree", wt, "--format", "json")
    assert first.code == 1, first.out
    assert statuses(first.json()) == {"0001-a.patch": "merged", "0002-b.patch": "conflict"}
    (wt / "b.py").write_text(edit(V2["b.py"], ("up10\n", "up10 fork10\n")))
    done = drift.cli("refresh", "--continue", "--format", "json")
    assert done.code == 0, done.out
    assert statuses(done.json()) == {"0001-a.patch": "merged", "0002-b.patch": "resolved"}
    written = (drift.root / "patches" / "0001-a.patch").read_bytes()
    assert written != old and b" up8\n" in written
    assert written.split(b"\ndiff --git ")[0] == old.split(b"\ndiff --git ")[0]  # its header
    assert drift.cli("verify", "--base", "v2").code == 0
