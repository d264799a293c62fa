"""pin show / check / bump on real-world-shaped pin sites, with real git."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from testing.helpers import CliResult, run_cli, snapshot_tree

from forktool import fsutil, regex_safety
from forktool.builder import RepoBuilder
from forktool.config import parse_config
from forktool.engine.release import pin_bump

WORKFLOW = """\
# Build the fork's image on every push. The base tag below is a pin site:
# `forktool pin bump` rewrites it (it said v0.9.0 before the 1.0 line).
name: build
on:
  push:
    branches: [main]
x-defaults: &defaults
  runs-on: ubuntu-latest
  timeout-minutes: 30
env:
  REGISTRY: registry.example.org   # where images go
  DEFAULT_BASE_TAG: {tag}   # pinned upstream release
jobs:
  build:
    <<: *defaults
    steps:
      - uses: actions/checkout@v4
      - run: docker build --build-arg BASE_TAG=${{{{ env.DEFAULT_BASE_TAG }}}} .
  test:
    <<: *defaults
    steps:
      - run: echo "testing against $DEFAULT_BASE_TAG"
"""

DOCKERFILE = """\
# syntax=docker/dockerfile:1
ARG BASE_TAG={tag}
FROM registry.example.org/pulse:${{BASE_TAG}} AS base
ARG BASE_TAG
LABEL org.example.base-tag=${{BASE_TAG}}
"""

PYCONST = '''\
"""Build metadata for the fork."""

# Upstream release this build patches (v1.0.0 was the first one we shipped).
UPSTREAM_TAG = "{tag}"
UPSTREAM_TAG_HELP = "see UPSTREAM_TAG"
'''

SHELL = """\
#!/bin/sh
set -eu
exec ./build-image --tag {tag} --push "$@"
"""

CONFIG = """\
# The fork's configuration. Comments, quoting and indentation survive a bump.
upstream:
  remote: upstream    # upstream's tags come from here
pin:
  tag: "{tag}"        # quoted on purpose
  commit: '{commit}'
layout: {layout}
pin_sites:
  - file: .github/workflows/build.yml
    pattern: '^\\s*DEFAULT_BASE_TAG:\\s*(?P<tag>\\S+)'
  - file: docker/Dockerfile
    pattern: '^ARG BASE_TAG=(?P<tag>\\S+)$'
  - file: app/buildinfo.py
    pattern: '^UPSTREAM_TAG = "(?P<tag>[^"]+)"$'
  - file: scripts/build.sh
    pattern: '^exec \\./build-image --tag (?P<tag>\\S+)'
"""

SITES = {
    ".github/workflows/build.yml": WORKFLOW,
    "docker/Dockerfile": DOCKERFILE,
    "app/buildinfo.py": PYCONST,
    "scripts/build.sh": SHELL,
}


@dataclass
class PinFork:
    repo: RepoBuilder
    v1: str  # the commit v1.0.0 peels to
    v2: str  # the commit v1.1.0 peels to

    @property
    def root(self) -> Path:
        return self.repo.path

    def cli(self, *args: str) -> CliResult:
        return run_cli("-C", self.root, *args)

    def read(self, name: str) -> bytes:
        return (self.root / name).read_bytes()

    def edit(self, name: str, old: str, new: str) -> None:
        text = (self.root / name).read_text()
        assert text.count(old) == 1, (name, old)
        (self.root / name).write_text(text.replace(old, new))


def fork_files(tag: str, commit: str, layout: str = "merged") -> dict[str, str | bytes | None]:
    files: dict[str, str | bytes | None] = {
        name: template.format(tag=tag) for name, template in SITES.items()
    }
    files["forktool.yaml"] = CONFIG.format(tag=tag, commit=commit, layout=layout)
    return files


@pytest.fixture
def pin_fork(tmp_path: Path) -> PinFork:
    """Upstream with v1.0.0 and v1.1.0; a fork cloned from it, pinned to v1.0.0."""
    upstream = RepoBuilder.init(tmp_path / "upstream")
    upstream.commit("import\n", {"app/main.py": "print('hello')\n"})
    v1 = upstream.tag("v1.0.0")
    upstream.commit("main: louder\n", {"app/main.py": "print('HELLO')\n"})
    v2 = upstream.tag("v1.1.0")
    fork = RepoBuilder.clone(upstream.path, tmp_path / "fork")
    fork.git.run(["remote", "rename", "origin", "upstream"], purpose="name the remote")
    fork.git.run(["checkout", "-q", "-B", "main", "v1.0.0"], purpose="start at the pin")
    fork.commit("fork: pin sites\n", fork_files("v1.0.0", v1))
    return PinFork(fork, v1, v2)


# -- show ------------------------------------------------------------------------------


def test_pin_show_lists_the_config_pin_and_every_site_with_file_line_and_value(
    pin_fork: PinFork,
) -> None:
    result = pin_fork.cli("pin", "show", "--format", "json")
    assert result.code == 0, result.err
    data = result.json()
    assert (data["tag"], data["commit"], data["tag_commit"]) == ("v1.0.0", pin_fork.v1, pin_fork.v1)
    assert data["ok"] is None  # show lists; check judges
    rows = [(s["file"], s["line"], s["value"]) for s in data["sites"]]  # type: ignore[union-attr, index]
    assert rows == [
        ("forktool.yaml", 5, "v1.0.0"),
        (".github/workflows/build.yml", 12, "v1.0.0"),
        ("docker/Dockerfile", 2, "v1.0.0"),
        ("app/buildinfo.py", 4, "v1.0.0"),
        ("scripts/build.sh", 3, "v1.0.0"),
    ]


def test_pin_show_text_names_each_site(pin_fork: PinFork) -> None:
    result = pin_fork.cli("pin", "show")
    assert result.code == 0
    lines = result.out.splitlines()
    assert lines[0].startswith("pin : v1.0.0 (" + pin_fork.v1[:12] + ")")
    assert lines[2].split() == ["forktool.yaml", "5", "v1.0.0", "pin.tag"]
    assert lines[4].split() == ["docker/Dockerfile", "2", "v1.0.0"]


# -- check -----------------------------------------------------------------------------


def test_pin_check_passes_when_every_site_names_the_locked_tag(pin_fork: PinFork) -> None:
    result = pin_fork.cli("pin", "check", "--format", "json")
    assert result.code == 0, result.out
    data = result.json()
    assert data["ok"] is True
    assert data["findings"] == []
    assert data["head_contains_pin"] is True


def test_drift_between_sites_is_listed_with_file_and_line(pin_fork: PinFork) -> None:
    pin_fork.edit("docker/Dockerfile", "ARG BASE_TAG=v1.0.0", "ARG BASE_TAG=v0.9.0")
    result = pin_fork.cli("pin", "check", "--format", "json")
    assert result.code == 1
    findings = result.json()["findings"]
    assert findings == [
        {
            "severity": "error",
            "message": "names 'v0.9.0', but pin.tag is 'v1.0.0' (forktool.yaml:5)",
            "path": "docker/Dockerfile",
            "line": 2,
            "hint": "run 'forktool pin bump v1.0.0' to make every site agree",
        },
        {
            "severity": "error",
            "message": "pin sites disagree: 'v0.9.0' at docker/Dockerfile:2; 'v1.0.0' at "
            "forktool.yaml:5, .github/workflows/build.yml:12, app/buildinfo.py:4, "
            "scripts/build.sh:3",
            "path": "forktool.yaml",
            "line": 5,
            "hint": "run 'forktool pin bump v1.0.0' to make every site agree",
        },
    ]
    text = pin_fork.cli("pin", "check")
    assert "error: docker/Dockerfile:2: names 'v0.9.0', but pin.tag is 'v1.0.0'" in text.out
    assert text.out.splitlines()[-1] == "FAILED: 2 pin problem(s)."


def test_a_site_matching_twice_fails_check_and_bump_writes_nothing(pin_fork: PinFork) -> None:
    config = pin_fork.read("forktool.yaml").decode()
    (pin_fork.root / "forktool.yaml").write_text(
        config.replace("'^exec \\./build-image --tag (?P<tag>\\S+)'", "'--tag (?P<tag>\\S+)'")
    )
    pin_fork.edit("scripts/build.sh", "set -eu\n", "set -eu\n# usage: build --tag TAG\n")
    check = pin_fork.cli("pin", "check", "--format", "json")
    assert check.code == 1
    assert check.json()["findings"] == [
        {
            "severity": "error",
            "message": "pattern matches 2 times (lines 3, 4); a pin site must match exactly once",
            "path": "scripts/build.sh",
            "line": 4,
            "hint": "make the pattern declared at forktool.yaml:15 more specific",
        }
    ]
    before = snapshot_tree(pin_fork.root)
    bump = pin_fork.cli("pin", "bump", "v1.1.0")
    assert bump.code == 2
    assert bump.error_lines == [
        "error: scripts/build.sh:4: pattern matches 2 times (lines 3, 4); a pin site must "
        "match exactly once",
        "hint: nothing was written; run 'forktool pin check' to see every problem",
    ]
    assert snapshot_tree(pin_fork.root) == before


def test_a_missing_site_file_is_a_finding_never_a_pass(pin_fork: PinFork) -> None:
    (pin_fork.root / "docker/Dockerfile").unlink()
    result = pin_fork.cli("pin", "check", "--format", "json")
    assert result.code == 1
    assert result.json()["findings"] == [
        {
            "severity": "error",
            "message": "pin site docker/Dockerfile no such file",
            "path": "forktool.yaml",
            "line": 11,
            "hint": "fix the path in pin_sites, or restore the file",
        }
    ]


def test_a_pattern_matching_nothing_is_a_finding(pin_fork: PinFork) -> None:
    pin_fork.edit("app/buildinfo.py", 'UPSTREAM_TAG = "v1.0.0"', "UPSTREAM_TAG = 'v1.0.0'")
    result = pin_fork.cli("pin", "check", "--format", "json")
    assert result.code == 1
    [finding] = result.json()["findings"]  # type: ignore[misc]
    assert finding["path"] == "forktool.yaml"
    assert finding["line"] == 13
    assert finding["message"] == (
        'pin site app/buildinfo.py: pattern \'^UPSTREAM_TAG = "(?P<tag>[^"]+)"$\' matches nothing'
    )


def test_a_moved_tag_fails_check_naming_both_commits(pin_fork: PinFork) -> None:
    pin_fork.repo.move_tag("v1.0.0", pin_fork.v2)
    result = pin_fork.cli("pin", "check", "--format", "json")
    assert result.code == 1
    findings = result.json()["findings"]
    assert findings == [
        {
            "severity": "error",
            "message": f"pinned tag 'v1.0.0' now peels to {pin_fork.v2}, not the recorded "
            f"pin.commit {pin_fork.v1}",
            "path": "forktool.yaml",
            "line": 6,
            "hint": "a moved or re-created upstream tag is a supply-chain risk: find out why "
            "before re-pinning",
        }
    ]


def test_merged_fork_whose_head_does_not_contain_the_pin_fails(pin_fork: PinFork) -> None:
    assert pin_fork.cli("pin", "bump", "v1.1.0").code == 0
    result = pin_fork.cli("pin", "check", "--format", "json")
    assert result.code == 1
    head = pin_fork.repo.rev("HEAD")
    assert result.json()["findings"] == [
        {
            "severity": "error",
            "message": f"HEAD ({head[:10]}) does not contain the pinned commit "
            f"{pin_fork.v2[:10]} (v1.1.0); a merged-layout fork must merge the tag it pins",
            "path": "forktool.yaml",
            "line": 6,
            "hint": "merge it: git merge v1.1.0",
        }
    ]
    pin_fork.repo.commit("fork: pin v1.1.0\n")
    pin_fork.repo.merge("v1.1.0", "Merge upstream v1.1.0")
    assert pin_fork.cli("pin", "check").code == 0


def test_overlay_fork_skips_the_ancestry_rule(pin_fork: PinFork) -> None:
    pin_fork.edit("forktool.yaml", "layout: merged", "layout: overlay")
    assert pin_fork.cli("pin", "bump", "v1.1.0").code == 0
    result = pin_fork.cli("pin", "check", "--format", "json")
    assert result.code == 0, result.out
    assert result.json()["head_contains_pin"] is None


def test_a_missing_pinned_tag_is_a_finding(pin_fork: PinFork) -> None:
    pin_fork.repo.git.run(["tag", "-d", "v1.0.0"], purpose="drop the tag")
    result = pin_fork.cli("pin", "check", "--format", "json")
    assert result.code == 1
    [finding] = result.json()["findings"]  # type: ignore[misc]
    assert finding["message"] == "pinned tag 'v1.0.0' does not exist in this repository"
    assert finding["hint"] == "fetch it: git fetch upstream tag v1.0.0"


# -- bump ------------------------------------------------------------------------------


def test_bump_rewrites_only_the_tag_bytes_in_every_site_and_the_config(pin_fork: PinFork) -> None:
    result = pin_fork.cli("pin", "bump", "v1.1.0", "--format", "json")
    assert result.code == 0, result.err
    for name, template in SITES.items():
        assert pin_fork.read(name) == template.format(tag="v1.1.0").encode(), name
    assert (
        pin_fork.read("forktool.yaml")
        == CONFIG.format(tag="v1.1.0", commit=pin_fork.v2, layout="merged").encode()
    )
    # The quoted config values keep their quotes; the comment that mentions v1.0.0 stays.
    assert b'  tag: "v1.1.0"        # quoted on purpose\n' in pin_fork.read("forktool.yaml")
    assert f"  commit: '{pin_fork.v2}'\n".encode() in pin_fork.read("forktool.yaml")
    assert b"(v1.0.0 was the first one we shipped)" in pin_fork.read("app/buildinfo.py")
    data = result.json()
    assert data["previous_tag"] == "v1.0.0"
    assert data["commit"] == pin_fork.v2
    assert data["written"] == [
        "forktool.yaml",
        ".github/workflows/build.yml",
        "docker/Dockerfile",
        "app/buildinfo.py",
        "scripts/build.sh",
    ]
    assert [(e["file"], e["line"], e["what"]) for e in data["edits"]] == [  # type: ignore[union-attr, index]
        ("forktool.yaml", 5, "pin.tag"),
        ("forktool.yaml", 6, "pin.commit"),
        (".github/workflows/build.yml", 12, "pin site"),
        ("docker/Dockerfile", 2, "pin site"),
        ("app/buildinfo.py", 4, "pin site"),
        ("scripts/build.sh", 3, "pin site"),
    ]
    assert data["head_contains_tag"] is False


def test_bump_byte_diff_touches_only_the_tag_span(pin_fork: PinFork) -> None:
    before = pin_fork.read("docker/Dockerfile")
    assert pin_fork.cli("pin", "bump", "v1.1.0").code == 0
    after = pin_fork.read("docker/Dockerfile")
    start = before.index(b"v1.0.0")
    assert before[:start] == after[:start]
    assert after[start : start + 6] == b"v1.1.0"
    assert before[start + 6 :] == after[start + 6 :]


def test_bump_dry_run_shows_the_diff_and_writes_nothing(pin_fork: PinFork) -> None:
    before = snapshot_tree(pin_fork.root)
    result = pin_fork.cli("pin", "bump", "v1.1.0", "--dry-run")
    assert result.code == 0, result.err
    assert snapshot_tree(pin_fork.root) == before
    assert (
        "--- a/docker/Dockerfile\n"
        "+++ b/docker/Dockerfile\n"
        "@@ -1,5 +1,5 @@\n"
        " # syntax=docker/dockerfile:1\n"
        "-ARG BASE_TAG=v1.0.0\n"
        "+ARG BASE_TAG=v1.1.0\n"
        " FROM registry.example.org/pulse:${BASE_TAG} AS base\n"
    ) in result.out
    assert (
        '-  tag: "v1.0.0"        # quoted on purpose\n'
        f"-  commit: '{pin_fork.v1}'\n"
        '+  tag: "v1.1.0"        # quoted on purpose\n'
        f"+  commit: '{pin_fork.v2}'\n"
    ) in result.out
    assert result.out.splitlines()[-1] == (
        f"DRY RUN: would pin v1.1.0 ({pin_fork.v2[:12]}) in 5 file(s); nothing was written."
    )
    data = pin_fork.cli("pin", "bump", "v1.1.0", "--dry-run", "--format", "json").json()
    assert data["dry_run"] is True
    assert data["written"] == []
    assert data["changed"] is True
    assert "+ARG BASE_TAG=v1.1.0\n" in str(data["diff"])


def test_bump_to_the_current_pin_changes_nothing(pin_fork: PinFork) -> None:
    before = snapshot_tree(pin_fork.root)
    result = pin_fork.cli("pin", "bump", "v1.0.0", "--format", "json")
    assert result.code == 0
    assert result.json()["changed"] is False
    assert snapshot_tree(pin_fork.root) == before


def test_bump_brings_drifted_sites_back_in_line(pin_fork: PinFork) -> None:
    pin_fork.edit("scripts/build.sh", "--tag v1.0.0", "--tag v0.9.0")
    assert pin_fork.cli("pin", "bump", "v1.1.0").code == 0
    assert pin_fork.read("scripts/build.sh") == SHELL.format(tag="v1.1.0").encode()


def test_bump_of_an_unknown_tag_exits_2_and_changes_nothing(pin_fork: PinFork) -> None:
    before = snapshot_tree(pin_fork.root)
    result = pin_fork.cli("pin", "bump", "v9.9.9")
    assert result.code == 2
    assert result.error_lines == [
        "error: unknown tag 'v9.9.9'",
        "hint: fetch it (pass --fetch, or git fetch upstream tag v9.9.9), "
        "or check the name (git tag --list)",
    ]
    assert snapshot_tree(pin_fork.root) == before


def test_bump_fetch_takes_the_tag_from_the_upstream_remote(pin_fork: PinFork) -> None:
    pin_fork.repo.git.run(["tag", "-d", "v1.1.0"], purpose="forget the tag")
    assert pin_fork.cli("pin", "bump", "v1.1.0").code == 2
    result = pin_fork.cli("pin", "bump", "v1.1.0", "--fetch", "--format", "json")
    assert result.code == 0, result.err
    assert result.json()["fetched"] is True
    assert pin_fork.repo.git.find_tag_commit("v1.1.0") == pin_fork.v2
    assert pin_fork.read("docker/Dockerfile") == DOCKERFILE.format(tag="v1.1.0").encode()


@pytest.mark.parametrize(
    "tag",
    [
        "v1.1.0;rm -rf ~",
        "v1.1.0$(id)",
        "v1.1.0`id`",
        "v1.1.0 extra",
        "v1.1.0\n",
        "v1.1.0|cat",
        "v1.1.0'",
        'v1.1.0"',
        "v1..1",
        "v1.1.0.lock",
        "",
        "-v1.1.0",
    ],
)
def test_bump_refuses_unsafe_tag_names_and_changes_nothing(pin_fork: PinFork, tag: str) -> None:
    before = snapshot_tree(pin_fork.root)
    result = pin_fork.cli("pin", "bump", "--", tag)
    assert result.code == 2
    assert result.error_lines[0].startswith(f"error: tag name {tag!r} ")
    assert snapshot_tree(pin_fork.root) == before


def test_bump_refuses_an_existing_tag_with_shell_metacharacters(pin_fork: PinFork) -> None:
    # git itself accepts this name; a Dockerfile or shell script must never receive it.
    pin_fork.repo.tag("v1.1.0$(id)", pin_fork.v2)
    before = snapshot_tree(pin_fork.root)
    result = pin_fork.cli("pin", "bump", "v1.1.0$(id)")
    assert result.code == 2
    assert result.error_lines[0] == "error: tag name 'v1.1.0$(id)' contains '$' '(' ')'"
    assert snapshot_tree(pin_fork.root) == before


def test_bump_refuses_when_a_pattern_cannot_hold_the_new_tag(pin_fork: PinFork) -> None:
    config = pin_fork.read("forktool.yaml").decode()
    (pin_fork.root / "forktool.yaml").write_text(
        config.replace("'^ARG BASE_TAG=(?P<tag>\\S+)$'", "'^ARG BASE_TAG=(?P<tag>v[0-9.]+)'")
    )
    pin_fork.repo.tag("v1.1.0-rc1", pin_fork.v2)
    before = snapshot_tree(pin_fork.root)
    result = pin_fork.cli("pin", "bump", "v1.1.0-rc1")
    assert result.code == 2
    assert result.error_lines[0] == (
        "error: docker/Dockerfile: after the bump the pattern declared at forktool.yaml:11 "
        "would read 'v1.1.0', not 'v1.1.0-rc1'; nothing was written"
    )
    assert snapshot_tree(pin_fork.root) == before


def test_bump_refuses_a_tag_that_would_change_meaning_as_plain_yaml(pin_fork: PinFork) -> None:
    pin_fork.edit("forktool.yaml", 'tag: "v1.0.0"', "tag: v1.0.0")
    pin_fork.repo.tag("true", pin_fork.v2)
    before = snapshot_tree(pin_fork.root)
    result = pin_fork.cli("pin", "bump", "true")
    assert result.code == 2
    assert result.error_lines == [
        "error: forktool.yaml: rewriting pin.tag to 'true' would change how the file reads "
        "as YAML; nothing was written",
        "hint: quote the value of pin.tag in forktool.yaml, e.g. tag: 'true'",
    ]
    assert snapshot_tree(pin_fork.root) == before


def test_bump_is_atomic_when_a_write_fails_midway(
    pin_fork: PinFork, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = snapshot_tree(pin_fork.root)
    real_replace = os.replace
    calls: list[str] = []

    def failing_replace(src: str | Path, dst: str | Path) -> None:
        if not Path(dst).is_relative_to(pin_fork.root):  # the cache's files: not the fork's
            real_replace(src, dst)
            return
        calls.append(str(dst))
        if len(calls) == 3:  # two files already moved into place
            raise OSError(28, "No space left on device", str(dst))
        real_replace(src, dst)

    monkeypatch.setattr(fsutil.os, "replace", failing_replace)
    result = pin_fork.cli("pin", "bump", "v1.1.0")
    monkeypatch.undo()
    assert result.code == 2
    assert result.error_lines[0].startswith("error: could not write the bump (No space left")
    assert result.error_lines[0].endswith("every file was restored, nothing changed")
    assert len(calls) > 3  # the rollback put the first two files back
    assert snapshot_tree(pin_fork.root) == before


def test_a_catastrophic_pattern_is_stopped_not_hung(
    pin_fork: PinFork, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(regex_safety, "TIMEOUT_SECONDS", 1.0)
    config = pin_fork.read("forktool.yaml").decode()
    (pin_fork.root / "forktool.yaml").write_text(
        # Overlapping alternatives under a repeat: not the nested-repeat shape the
        # config parser refuses (see test_a_nested_repeat_pattern_is_refused_when_read),
        # so only the matcher's time limit can stop it.
        config.replace('\'^UPSTREAM_TAG = "(?P<tag>[^"]+)"$\'', "'^(?P<tag>(a|aa)+)$'")
    )
    (pin_fork.root / "app/buildinfo.py").write_text("a" * 64 + "!\n")
    for args in (("pin", "check"), ("pin", "show"), ("pin", "bump", "v1.1.0")):
        result = pin_fork.cli(*args)
        assert result.code == 2, args
        assert result.error_lines == [
            "error: forktool.yaml:13: pin_sites pattern for app/buildinfo.py did not finish "
            "within 1 s (catastrophic backtracking?)",
            "hint: simplify the pattern: anchor it and avoid nested repetition like (a+)+",
        ]


def test_a_nested_repeat_pattern_is_refused_when_read(pin_fork: PinFork) -> None:
    config = pin_fork.read("forktool.yaml").decode()
    (pin_fork.root / "forktool.yaml").write_text(
        config.replace('\'^UPSTREAM_TAG = "(?P<tag>[^"]+)"$\'', "'^(?P<tag>(a+)+)$'")
    )
    (pin_fork.root / "app/buildinfo.py").write_text("a" * 64 + "!\n")
    before = snapshot_tree(pin_fork.root)
    result = pin_fork.cli("pin", "show")
    assert result.code == 2
    assert result.error_lines == [
        f"error: {pin_fork.root}/forktool.yaml:14: pin_sites pattern nests a repeat inside "
        "a repeat, like (a+)+: it can backtrack for ever on a near-miss line",
        "hint: repeat a plain item instead, e.g. (?P<tag>\\S+)",
    ]
    assert snapshot_tree(pin_fork.root) == before


def test_a_site_that_is_a_symlink_is_refused(pin_fork: PinFork) -> None:
    target = pin_fork.root / "docker/Dockerfile"
    (pin_fork.root / "docker/Dockerfile.real").write_bytes(target.read_bytes())
    target.unlink()
    target.symlink_to("Dockerfile.real")
    result = pin_fork.cli("pin", "check", "--format", "json")
    assert result.code == 1
    [finding] = result.json()["findings"]  # type: ignore[misc]
    assert finding["message"] == (
        "pin site docker/Dockerfile is a symbolic link; a pin site must be a regular file"
    )
    assert pin_fork.cli("pin", "bump", "v1.1.0").code == 2


def test_two_sites_in_one_file_and_a_site_in_the_config_are_bumped_together(
    pin_fork: PinFork,
) -> None:
    config = pin_fork.read("forktool.yaml").decode()
    extra = (
        "  - file: ./docker/Dockerfile\n"
        "    pattern: '^FROM registry\\.example\\.org/pulse:(?P<tag>\\S+) AS base$'\n"
        "  - file: forktool.yaml\n"
        '    pattern: \'^  tag: "(?P<tag>[^"]+)"\'\n'
    )
    (pin_fork.root / "forktool.yaml").write_text(config + extra)
    pin_fork.edit("docker/Dockerfile", "pulse:${BASE_TAG} AS base", "pulse:v1.0.0 AS base")
    assert pin_fork.cli("pin", "check").code == 0
    result = pin_fork.cli("pin", "bump", "v1.1.0", "--format", "json")
    assert result.code == 0, result.err
    assert pin_fork.read("docker/Dockerfile") == (
        DOCKERFILE.format(tag="v1.1.0")
        .replace("pulse:${BASE_TAG} AS base", "pulse:v1.1.0 AS base")
        .encode()
    )
    assert (
        pin_fork.read("forktool.yaml")
        == (CONFIG.format(tag="v1.1.0", commit=pin_fork.v2, layout="merged") + extra).encode()
    )
    assert pin_fork.cli("pin", "check", "--format", "json").json()["findings"] == [
        {
            "severity": "error",
            "message": f"HEAD ({pin_fork.repo.rev('HEAD')[:10]}) does not contain the pinned "
            f"commit {pin_fork.v2[:10]} (v1.1.0); a merged-layout fork must merge the tag it pins",
            "path": "forktool.yaml",
            "line": 6,
            "hint": "merge it: git merge v1.1.0",
        }
    ]


# -- the span editor, property-tested ------------------------------------------------------

_COMMENT = st.text(
    alphabet=st.characters(
        blacklist_categories=("Cc", "Cs", "Zl", "Zp"), blacklist_characters="\ufeff"
    ),
    max_size=30,
)


@settings(max_examples=150, deadline=None)
@given(
    indent=st.sampled_from(["  ", "    ", " "]),
    quote=st.sampled_from(["", "'", '"']),
    head=_COMMENT,
    tail=_COMMENT,
    gap=st.sampled_from([" ", "   "]),
    crlf=st.booleans(),
    new_tag=st.from_regex(r"v[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}(rc[0-9])?", fullmatch=True),
)
def test_config_pin_edit_changes_only_the_value_whatever_surrounds_it(
    indent: str, quote: str, head: str, tail: str, gap: str, crlf: bool, new_tag: str
) -> None:
    commit = "a" * 40
    lines = [
        f"# {head}",
        "pin:",
        f"{indent}tag:{gap}{quote}v1.0.0{quote}{gap}# {tail}",
        f"{indent}commit: {commit}",
        "layout: merged",
    ]
    eol = "\r\n" if crlf else "\n"
    text = eol.join(lines) + eol
    path = Path("/fork/forktool.yaml")
    config = parse_config(text, path)
    (tag_start, tag_end), (commit_start, commit_end) = pin_bump._config_spans(text, "forktool.yaml")
    assert text[tag_start:tag_end] == "v1.0.0"
    assert text[commit_start:commit_end] == commit
    new = text[:tag_start] + new_tag + text[tag_end:]
    assert parse_config(new, path) == config._replace(pin_tag=new_tag)
    assert new.replace(new_tag, "v1.0.0", 1) == text
