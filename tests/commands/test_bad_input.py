"""Bad input: one clear line, exit 2, and the fork byte-identical afterwards."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from testing.helpers import run_cli, snapshot_tree

from forktool.builder import RepoBuilder

P1 = "0001-config-do-not-crash-on-an-empty-config-file.patch"
P2 = "0002-engine-retry-on-timeout.patch"
P3 = "0003-engine-decode-input-as-UTF-8.patch"
F1 = "5b0817d52277e23f33db6615a89bbe5b8aef0028"


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def _append(path: Path, text: str) -> None:
    path.write_bytes(path.read_bytes() + text.encode())


Breaker = Callable[[Path], None]

CASES: list[tuple[str, Breaker, str]] = [
    (
        "series-names-missing-file",
        lambda r: _append(r / "series", "0009-missing.patch\n"),
        "error: series:6: names '0009-missing.patch' but patches/0009-missing.patch does not exist",
    ),
    (
        "unlisted-patch-file",
        lambda r: (r / "patches" / "0009-stray.patch").write_bytes(
            (r / "patches" / P1).read_bytes()
        ),
        "error: patches/0009-stray.patch: patches/0009-stray.patch is not listed in the series",
    ),
    (
        "duplicate-series-entry",
        lambda r: _append(r / "series", P1 + "\n"),
        f"error: series:6: '{P1}' is listed twice (first on line 2)",
    ),
    (
        "series-option-other-than-p1",
        lambda r: _edit(r / "series", P2, P2 + " -p0"),
        f"error: series:3: unsupported option '-p0' for '{P2}' (only -p1 is allowed)",
    ),
    (
        "map-short-sha",
        lambda r: _edit(r / "upstream.map", F1, F1[:12]),
        f"error: upstream.map:2: {P1}: '{F1[:12]}' is not a 40-hex commit id (abbreviated ids are ambiguous)",
    ),
    (
        "map-non-hex-sha",
        lambda r: _edit(r / "upstream.map", F1, "z" * 40),
        f"error: upstream.map:2: {P1}: '{'z' * 40}' is not a 40-hex commit id (abbreviated ids are ambiguous)",
    ),
    (
        "map-missing-series-patch",
        lambda r: _edit(r / "upstream.map", f"{P2} ", f"# {P2} "),
        f"error: series:3: '{P2}' has no line in upstream.map",
    ),
    (
        "trailer-disagrees-with-map",
        lambda r: _edit(r / "patches" / P1, f"Upstream-Merge: {F1}", "Upstream-Merge: " + "1" * 40),
        f"error: patches/{P1}:10: Upstream-Merge trailer says {'1' * 40} but upstream.map line 2 says {F1}",
    ),
    (
        "patch-with-dotdot-path",
        lambda r: _edit(r / "patches" / P1, "+++ b/pulse/config.py", "+++ b/../pulse/config.py"),
        f"error: patches/{P1}:16: path 'b/../pulse/config.py' has a '..' segment",
    ),
    (
        "patch-with-absolute-path",
        lambda r: _edit(r / "patches" / P1, "--- a/pulse/config.py", "--- /etc/passwd"),
        f"error: patches/{P1}:15: absolute path '/etc/passwd'",
    ),
    (
        "patch-touching-git-config",
        lambda r: (r / "patches" / P1).write_bytes(
            b"diff --git a/.git/config b/.git/config\n--- a/.git/config\n+++ b/.git/config\n"
            b"@@ -1 +1 @@\n-[core]\n+[core]\n"
        ),
        f"error: patches/{P1}:1: path 'a/.git/config' writes into .git",
    ),
    (
        "garbage-patch",
        lambda r: (r / "patches" / P2).write_bytes(b"this is not a patch\nat all\n"),
        f"error: patches/{P2}: contains no diff",
    ),
    (
        "non-utf8-series",
        lambda r: (r / "series").write_bytes((r / "series").read_bytes() + b"0009-\xff.patch\n"),
        "error: series:6: line is not valid UTF-8",
    ),
    (
        "config-unknown-key",
        lambda r: _append(r / "forktool.yaml", "colour: blue\n"),
        "error: {root}/forktool.yaml:27: unknown key 'colour' in forktool.yaml",
    ),
    (
        "pin-tag-does-not-exist",
        lambda r: _edit(r / "forktool.yaml", "tag: v1.1.0", "tag: v9.9.9"),
        "error: pinned tag 'v9.9.9' does not exist in this repository",
    ),
    (
        "pin-tag-peels-elsewhere",
        lambda r: _edit(
            r / "forktool.yaml",
            "commit: b444e8a60cf8ba740d4bf36bdbc98ce348ff5066",
            "commit: 2926ad0f4853ce8af34efadf27860471ba58bbb3",
        ),
        "error: pinned tag 'v1.1.0' now peels to b444e8a60cf8ba740d4bf36bdbc98ce348ff5066, "
        "not the recorded 2926ad0f4853ce8af34efadf27860471ba58bbb3",
    ),
    (
        "config-missing-pin",
        lambda r: (r / "forktool.yaml").write_text("layout: merged\n"),
        "error: {root}/forktool.yaml:1: forktool.yaml is missing required key 'pin'",
    ),
    (
        "config-bad-pin-site-regex",
        lambda r: _edit(r / "forktool.yaml", r"(?P<tag>\S+)$", r"(?P<tag>\S+$"),
        "error: {root}/forktool.yaml:17: pin_sites pattern does not compile: "
        "missing ), unterminated subpattern at position 14",
    ),
    (
        "config-yaml-alias",
        lambda r: _edit(
            r / "forktool.yaml", "series: series", "series: &s series\npatches_alias: *s"
        ),
        "error: {root}/forktool.yaml:10: YAML anchors and aliases are not allowed in forktool.yaml",
    ),
]


@pytest.mark.parametrize(("name", "breaker", "expected"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_exit_2_and_changes_nothing(
    example_fork: RepoBuilder, name: str, breaker: Breaker, expected: str
) -> None:
    root = example_fork.path
    breaker(root)
    before = snapshot_tree(root)
    result = run_cli("-C", root, "status")
    assert result.code == 2, result
    assert result.error_lines[0].startswith(expected.format(root=root)), result.err
    if name in SOLE:  # its one finding, never "(and 1 more)" of a line it made missing
        assert result.error_lines[0] == expected.format(root=root)
    assert "Traceback" not in result.err
    assert len(result.error_lines) <= 2
    assert result.out == ""
    verify = run_cli("-C", root, "verify", "--format", "json")
    if name in PATCH_CONTENT:
        # verify judges patch contents per patch instead of refusing the whole run
        assert verify.code == 1
        statuses = {p["patch"]: p["status"] for p in verify.json()["patches"]}  # type: ignore[index,union-attr]
        assert PATCH_CONTENT[name] in statuses.values()
    else:
        assert verify.code == 2
        assert verify.error_lines[0] == result.error_lines[0]
        assert verify.out == ""
    assert snapshot_tree(root) == before


SOLE = {"map-short-sha", "map-non-hex-sha"}
PATCH_CONTENT = {
    "patch-with-dotdot-path": "unsafe",
    "patch-with-absolute-path": "unsafe",
    "patch-touching-git-config": "unsafe",
    "empty-patch": "malformed",
    "garbage-patch": "malformed",
}


def test_unknown_option_is_exit_2_with_hint() -> None:
    result = run_cli("status", "--bogus")
    assert result.code == 2
    assert result.error_lines == [
        "error: No such option '--bogus'.",
        "hint: run 'forktool status --help' for usage",
    ]


def test_outside_a_fork_names_the_fix(tmp_path: Path) -> None:
    RepoBuilder.init(tmp_path / "r")
    result = run_cli("-C", tmp_path / "r", "status")
    assert result.code == 2
    assert result.error_lines[0] == f"error: no forktool.yaml found in {tmp_path / 'r'} or above"
    assert result.error_lines[1].startswith("hint: run 'forktool init --pin TAG'")


def test_a_series_option_says_what_to_do_and_nothing_else(example_fork: RepoBuilder) -> None:
    """A -p0 line is one error with its hint in every command, not also a map line
    "the series does not list" and a patch file "not listed" (it is, with -p0)."""
    root = example_fork.path
    _edit(root / "series", P2, P2 + " -p0")
    for command in (("status",), ("verify",), ("check",)):
        result = run_cli("-C", root, *command)
        assert result.code == 2 if command != ("check",) else result.code == 1, command
        said = (result.out + result.err).splitlines()
        assert any(
            line.endswith(f"series:3: unsupported option '-p0' for '{P2}' (only -p1 is allowed)")
            for line in said
        ), (command, said)
        assert any("quilt refresh -p ab" in line for line in said), command
        assert not any("does not list" in line or "not listed" in line for line in said), command
