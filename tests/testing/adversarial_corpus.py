"""The adversarial corpus: hostile or broken inputs for every file forktool reads.

Each :class:`Case` breaks one thing in a copy of the example fork (pinned at
v1.1.0, patches 0001-0004, see FORK.md) and runs one command on it. The runner in
``test_adversarial.py`` runs the real CLI in a subprocess and asserts the exit
code, the message, no traceback, and that neither the fork (``.git`` included)
nor the scratch directory changed.

Why a case expects 2 or 1:
- 2: the command could not run as asked (bad usage, unreadable or malformed
  input, an unknown tag): one ``error:`` line, at most one ``hint:``, nothing on
  stdout.
- 1: the command ran and judged the input (``verify``/``check``/``arms --check``
  report a bad patch or a missing arm as a finding); the message is in stdout.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from forktool.git import Git

P1 = "0001-config-do-not-crash-on-an-empty-config-file.patch"
P2 = "0002-engine-retry-on-timeout.patch"
P3 = "0003-engine-decode-input-as-UTF-8.patch"
P4 = "0004-fork-identify-the-fork-s-builds.patch"
F1 = "5b0817d52277e23f33db6615a89bbe5b8aef0028"
PIN_TREE = "3f63b8cbd10925f76f0922735e391f156e16a613"  # v1.1.0^{tree}
README_BLOB = "88edb754bad82f699d852f3f4aeff5703c24a27f"  # v1.1.0:README.md
RECORD_BEGIN = "<!-- forktool:retirement-record:begin -->"
RECORD_END = "<!-- forktool:retirement-record:end -->"
TEN_MB = 10 * 1024 * 1024

Setup = Callable[[Path, Path], None]  # (fork, scratch)


@dataclass(frozen=True)
class Case:
    """One hostile input: how to break the fork, what to run, what must come back.

    ``argv`` may use ``{fork}`` and ``{scratch}``; forktool runs with ``-C {fork}``.
    ``message`` is the start of the ``error:`` line's text for exit 2, and a text
    that stdout must contain for exit 1.
    """

    id: str
    setup: Setup
    argv: tuple[str, ...]
    code: int
    message: str
    why: str


# -- small builders ------------------------------------------------------------------


def nothing(fork: Path, scratch: Path) -> None:
    del fork, scratch


def write(relative: str, data: bytes) -> Setup:
    def setup(fork: Path, scratch: Path) -> None:
        del scratch
        path = fork / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    return setup


def edit(relative: str, old: bytes, new: bytes) -> Setup:
    def setup(fork: Path, scratch: Path) -> None:
        del scratch
        path = fork / relative
        data = path.read_bytes()
        assert old in data, f"{old!r} not in {relative}"
        path.write_bytes(data.replace(old, new, 1))

    return setup


def append(relative: str, data: bytes) -> Setup:
    def setup(fork: Path, scratch: Path) -> None:
        del scratch
        path = fork / relative
        path.write_bytes(path.read_bytes() + data)

    return setup


def transform(relative: str, change: Callable[[bytes], bytes]) -> Setup:
    def setup(fork: Path, scratch: Path) -> None:
        del scratch
        path = fork / relative
        path.write_bytes(change(path.read_bytes()))

    return setup


def replace_with_symlink(relative: str, target: str) -> Setup:
    def setup(fork: Path, scratch: Path) -> None:
        path = fork / relative
        path.unlink()
        path.symlink_to(target.format(fork=fork, scratch=scratch))

    return setup


def replace_with_directory(relative: str) -> Setup:
    def setup(fork: Path, scratch: Path) -> None:
        del scratch
        path = fork / relative
        path.unlink()
        (path / "inside").mkdir(parents=True)

    return setup


def replace_with_fifo(relative: str) -> Setup:
    def setup(fork: Path, scratch: Path) -> None:
        del scratch
        path = fork / relative
        path.unlink()
        os.mkfifo(path)

    return setup


def scratch_file(name: str, data: bytes) -> Setup:
    def setup(fork: Path, scratch: Path) -> None:
        del fork
        (scratch / name).write_bytes(data)

    return setup


def both(*setups: Setup) -> Setup:
    def setup(fork: Path, scratch: Path) -> None:
        for step in setups:
            step(fork, scratch)

    return setup


def site(fork: Path, scratch: Path) -> Path:
    """A plain copy of the pinned package (``pulse/``) in ``scratch/site``: an apply target."""
    target = scratch / "site"
    (target / "pulse").mkdir(parents=True)
    for path in (fork / "pulse").iterdir():
        (target / "pulse" / path.name).write_bytes(path.read_bytes())
    return target


def with_site(*setups: Setup) -> Setup:
    def setup(fork: Path, scratch: Path) -> None:
        site(fork, scratch)
        for step in setups:
            step(fork, scratch)

    return setup


def site_with_symlinked_package(fork: Path, scratch: Path) -> None:
    """``site/pulse`` is a symlink to a directory outside the target."""
    outside = site(fork, scratch) / "pulse"
    moved = scratch / "outside"
    outside.rename(moved)
    (scratch / "site" / "pulse").symlink_to(moved)


def new_file_patch(path: str) -> bytes:
    return (
        f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
        "@@ -0,0 +1 @@\n+owned\n"
    ).encode()


def yaml_bomb() -> bytes:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in "bcdefghi":
        previous = chr(ord(level) - 1)
        lines.append(f"{level}: &{level} [" + ",".join([f"*{previous}"] * 9) + "]")
    return (
        "\n".join(lines)
        + "\npin: {tag: v1.1.0, commit: "
        + "b444e8a60cf8ba740d4bf36bdbc98ce348ff5066}\n"
    ).encode()


def absolute_patch(path: str) -> bytes:
    return f"--- {path}\n+++ {path}\n@@ -1 +1 @@\n-old\n+new\n".encode()


def empty_series(fork: Path, scratch: Path) -> None:
    """A series of comments only, with no patch files and no map lines either."""
    del scratch
    (fork / "series").write_bytes(b"# nothing here\n\n")
    (fork / "upstream.map").write_bytes(b"# nothing here\n")
    for path in (fork / "patches").glob("*.patch"):
        path.unlink()


def series_linked_outside(fork: Path, scratch: Path) -> None:
    """``series`` is a symlink to an identical series outside the fork."""
    (scratch / "series").write_bytes((fork / "series").read_bytes())
    (fork / "series").unlink()
    (fork / "series").symlink_to(scratch / "series")


def remap_f1(commit: str) -> Setup:
    """Patch 0001 mapped (map line and trailer alike) to ``commit`` instead of F1."""

    def setup(fork: Path, scratch: Path) -> None:
        del scratch
        for relative in ("upstream.map", f"patches/{P1}"):
            path = fork / relative
            path.write_bytes(path.read_bytes().replace(F1.encode(), commit.encode()))

    return setup


def nested_json(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def record_without(marker: str) -> Setup:
    return edit("FORK.md", marker.encode() + b"\n", b"")


def catastrophic_pin_site(fork: Path, scratch: Path) -> None:
    del scratch
    config = fork / "forktool.yaml"
    config.write_bytes(
        config.read_bytes().replace(
            rb"'^ARG BASE_TAG=(?P<tag>\S+)$'", rb"'^ARG BASE_TAG=(?P<tag>(\w+\.?)+)$'", 1
        )
    )
    docker = fork / "docker" / "Dockerfile"
    docker.write_bytes(
        docker.read_bytes().replace(b"ARG BASE_TAG=v1.1.0", b"ARG BASE_TAG=" + b"a" * 40 + b"!")
    )


def two_patches_same_name_but_case(fork: Path, scratch: Path) -> None:
    del scratch
    upper = P4.replace("fork-identify", "FORK-identify")
    (fork / "patches" / upper).write_bytes((fork / "patches" / P4).read_bytes())
    (fork / "series").write_bytes((fork / "series").read_bytes() + upper.encode() + b"\n")
    (fork / "upstream.map").write_bytes(
        (fork / "upstream.map").read_bytes() + upper.encode() + b" none\n"
    )


def truncate_patch(fraction: float) -> Setup:
    return transform(f"patches/{P2}", lambda data: data[: int(len(data) * fraction)])


def ten_mb_single_line_patch(data: bytes) -> bytes:
    del data
    return b"+" + b"x" * TEN_MB


def move_out_and_link(relative: str) -> Setup:
    """``relative`` (a directory in the fork) moved to the scratch directory, and a
    symlink to it left in its place."""

    def setup(fork: Path, scratch: Path) -> None:
        moved = scratch / Path(relative).name
        (fork / relative).rename(moved)
        (fork / relative).symlink_to(moved)

    return setup


def site_entry(kind: str) -> Setup:
    """The apply target with a directory or a FIFO where ``pulse/config.py`` should be."""

    def setup(fork: Path, scratch: Path) -> None:
        path = site(fork, scratch) / "pulse" / "config.py"
        path.unlink()
        if kind == "directory":
            path.mkdir()
        else:
            os.mkfifo(path)

    return setup


GITLINK_PATCH = (
    b"diff --git a/vendor/lib b/vendor/lib\nnew file mode 160000\nindex 0000000..1234567\n"
    b"--- /dev/null\n+++ b/vendor/lib\n@@ -0,0 +1 @@\n"
    b"+Subproject commit 1234567890123456789012345678901234567890\n"
)


def upstream_url(url: str) -> Setup:
    def setup(fork: Path, scratch: Path) -> None:
        Git(fork).run(
            ["remote", "set-url", "upstream", url.format(scratch=scratch)],
            purpose="point the upstream remote elsewhere",
        )

    return setup


def objects_borrowed_from_a_vanished_clone(fork: Path, scratch: Path) -> None:
    """The fork's objects live in another repository (``clone --shared``), now deleted."""
    objects = fork / ".git" / "objects"
    shutil.rmtree(objects)
    (objects / "info").mkdir(parents=True)
    (objects / "pack").mkdir()
    (objects / "info" / "alternates").write_text(f"{scratch}/gone/objects\n")


def quilt_with_a_linked_patch(fork: Path, scratch: Path) -> None:
    """A quilt directory whose only patch is a symlink to a file outside the fork."""
    (scratch / "outside.patch").write_bytes(new_file_patch("evil.txt"))
    quilt = fork / "debian" / "patches"
    quilt.mkdir(parents=True)
    (quilt / "series").write_text("x.patch\n")
    (quilt / "x.patch").symlink_to(scratch / "outside.patch")


# -- the corpus ----------------------------------------------------------------------

SHELL_TAGS = ("v1.2.0;touch pwned", "$(touch pwned)", "`touch pwned`", "v1|id>pwned")

CASES: list[Case] = [
    # forktool.yaml
    Case(
        "config-yaml-bomb",
        write("forktool.yaml", yaml_bomb()),
        ("status",),
        2,
        "{fork}/forktool.yaml:1: YAML anchors and aliases are not allowed",
        "anchors are how a YAML bomb expands: refused before anything is built",
    ),
    Case(
        "config-is-a-list",
        write("forktool.yaml", b"- pin\n- tag\n"),
        ("status",),
        2,
        "{fork}/forktool.yaml:1: forktool.yaml must be a mapping",
        "a config must be a mapping of known keys",
    ),
    Case(
        "config-is-a-scalar",
        write("forktool.yaml", b"just a string\n"),
        ("verify",),
        2,
        "{fork}/forktool.yaml:1: forktool.yaml must be a mapping",
        "a config must be a mapping of known keys",
    ),
    Case(
        "config-is-empty",
        write("forktool.yaml", b""),
        ("check",),
        2,
        "{fork}/forktool.yaml: the file is empty",
        "an empty config is missing input, not an empty fork",
    ),
    Case(
        "config-non-utf8",
        edit("forktool.yaml", b"# The example fork", b"# The \xff\xfe example fork"),
        ("status",),
        2,
        "{fork}/forktool.yaml: not valid UTF-8 (byte 6)",
        "a config is UTF-8 text",
    ),
    Case(
        "config-is-a-directory",
        replace_with_directory("forktool.yaml"),
        ("status",),
        2,
        "no forktool.yaml found in {fork} or above",
        "a directory named forktool.yaml is no config",
    ),
    Case(
        "config-pin-tag-is-a-git-option",
        edit("forktool.yaml", b"tag: v1.1.0", b"tag: --output=pwned"),
        ("verify",),
        2,
        "pinned tag '--output=pwned' does not exist",
        "a tag is never passed to git as an option",
    ),
    Case(
        "config-pin-site-catastrophic-regex",
        catastrophic_pin_site,
        ("pin", "show"),
        2,
        "{fork}/forktool.yaml:17: pin_sites pattern nests a repeat inside a repeat",
        "a nested quantifier backtracks exponentially on a near-miss line: refused when read",
    ),
    Case(
        "config-pr-pattern-catastrophic-regex",
        edit(
            "forktool.yaml",
            b"  remote: upstream\n",
            b"  remote: upstream\n  pr_patterns:\n    - '^Reviewed-on: (?P<pr>(\\w+\\.?)+)$'\n",
        ),
        ("upstream", "resolve", "--no-fetch"),
        2,
        "{fork}/forktool.yaml:6: upstream.pr_patterns pattern nests a repeat inside a repeat",
        "a PR pattern runs over every commit message of upstream's branch: vetted like pin sites",
    ),
    Case(
        "config-pin-site-is-a-directory",
        edit("forktool.yaml", b"file: ci/build.yml", b"file: ci"),
        ("pin", "check"),
        1,
        "pin site ci is not a regular file",
        "pin check judges every site: a directory is a finding",
    ),
    Case(
        "config-pin-site-non-utf8",
        append("docker/Dockerfile", b"# \xff\n"),
        ("pin", "bump", "v1.2.0"),
        2,
        "forktool.yaml:16: pin site docker/Dockerfile is not UTF-8 text (byte 1586)",
        "a bump rewrites pin sites as text: one it cannot read refuses the whole bump",
    ),
    # series
    Case(
        "series-crlf",
        transform("series", lambda d: d.replace(b"\n", b"\r\n")),
        ("status",),
        2,
        "series:1: line ends with CR LF",
        "a CR would become part of a patch name",
    ),
    Case(
        "series-bom",
        transform("series", lambda d: b"\xef\xbb\xbf" + d),
        ("verify",),
        2,
        "series:1: starts with a UTF-8 byte-order mark",
        "a BOM would become part of the first patch name",
    ),
    Case(
        "series-non-utf8",
        append("series", b"0009-\xff.patch\n"),
        ("check",),
        1,
        "series:6: line is not valid UTF-8",
        "check is the gate: a broken series is a finding of its files check",
    ),
    Case(
        "series-same-file-different-case",
        two_patches_same_name_but_case,
        ("status",),
        2,
        "series:6: '0004-FORK-identify",
        "two names that differ only by case collide on case-insensitive file systems",
    ),
    Case(
        "series-option-reverse",
        edit("series", P2.encode(), P2.encode() + b" -R"),
        ("verify",),
        2,
        f"series:3: unsupported option '-R' for '{P2}'",
        "only -p1 is allowed: any other option changes what the patch does",
    ),
    Case(
        "series-escapes-patches-dir",
        append("series", b"../forktool.yaml\n"),
        ("status",),
        2,
        "series:6: patch name escapes the patches directory",
        "a series entry must name a file inside patches/",
    ),
    Case(
        "series-only-comments",
        empty_series,
        ("verify",),
        1,
        "the series lists no patches: there is nothing to verify",
        "fail closed: an empty series proves nothing, so verify fails",
    ),
    Case(
        "series-is-a-fifo",
        replace_with_fifo("series"),
        ("status",),
        2,
        "series: is not a regular file",
        "reading a FIFO would block forever",
    ),
    Case(
        "series-symlink-outside-fork",
        series_linked_outside,
        ("status",),
        2,
        "series: is a symlink",
        "the fork's files are regular files; a link could point anywhere",
    ),
    # upstream.map
    Case(
        "map-suggest-write-over-a-broken-line",
        edit("upstream.map", F1.encode(), b"abc123"),
        ("map", "suggest", "--write"),
        2,
        "upstream.map:2: ",
        "filling the map never writes a map that does not parse (the broken line stays)",
    ),
    Case(
        "quilt-series-other-strip-level",
        both(
            write("debian/patches/series", b"x.patch -p0\n"),
            write("debian/patches/x.patch", b"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"),
        ),
        ("init", "--pin", "v1.1.0", "--from-quilt", "debian/patches"),
        2,
        "debian/patches/series:1: unsupported option '-p0' for 'x.patch' (only -p1 is allowed)",
        "forktool applies with -p1 only: another strip level is refused, not guessed",
    ),
    Case(
        "record-end-before-begin",
        transform(
            "FORK.md",
            lambda d: (
                d.replace(RECORD_BEGIN.encode(), b"@@B@@")
                .replace(RECORD_END.encode(), RECORD_BEGIN.encode())
                .replace(b"@@B@@", RECORD_END.encode())
            ),
        ),
        ("check", "--only", "record"),
        1,
        "the record's end marker comes before its begin marker",
        "markers in the wrong order are broken, not a missing section",
    ),
    Case(
        "map-crlf",
        transform("upstream.map", lambda d: d.replace(b"\n", b"\r\n")),
        ("status",),
        2,
        "upstream.map:1: line ends with CR LF",
        "a CR would become part of a commit id",
    ),
    Case(
        "map-bom",
        transform("upstream.map", lambda d: b"\xef\xbb\xbf" + d),
        ("absorbed", "--tag", "v1.2.0"),
        2,
        "upstream.map:1: starts with a UTF-8 byte-order mark",
        "a BOM would hide in the first line",
    ),
    Case(
        "map-non-utf8",
        append("upstream.map", b"# \xc3\x28\n"),
        ("status",),
        2,
        "upstream.map:6: line is not valid UTF-8",
        "the map is UTF-8 text",
    ),
    Case(
        "map-commit-is-a-tree",
        remap_f1(PIN_TREE),
        ("absorbed", "--tag", "v1.2.0"),
        2,
        f"upstream.map: {P1}: {PIN_TREE} is a tree, not a commit",
        "ancestry of a tree is meaningless: never a 'no'",
    ),
    Case(
        "map-commit-is-a-blob",
        remap_f1(README_BLOB),
        ("retire", "--tag", "v1.2.0"),
        2,
        f"upstream.map: {P1}: {README_BLOB} is a blob, not a commit",
        "ancestry of a blob is meaningless: never a 'no'",
    ),
    Case(
        "map-commit-unknown",
        remap_f1("1" * 40),
        ("absorbed", "--tag", "v1.2.0"),
        2,
        f"upstream.map: {P1}: commit {'1' * 40} is not in this repository",
        "an unknown commit is an error, never a 'no'",
    ),
    # alignment.ledger
    Case(
        "ledger-non-utf8",
        append("alignment.ledger", b"add caf\xe9 permanent bytes\n"),
        ("align",),
        2,
        "alignment.ledger:11: line is not valid UTF-8",
        "the ledger is UTF-8 text",
    ),
    Case(
        "ledger-bad-kind",
        append("alignment.ledger", b"modify pulse/** permanent edits in place\n"),
        ("align",),
        2,
        "alignment.ledger:11:",
        "only add and del are declared divergence",
    ),
    Case(
        "ledger-is-a-directory",
        replace_with_directory("alignment.ledger"),
        ("align",),
        2,
        "alignment.ledger: is a directory",
        "a ledger that cannot be read is not an empty ledger",
    ),
    # patch files
    Case(
        "patch-truncated-mid-hunk",
        truncate_patch(0.8),
        ("verify",),
        1,
        "malformed",
        "verify judges each patch: a truncated hunk is reported malformed",
    ),
    Case(
        "patch-truncated-in-header",
        truncate_patch(0.2),
        ("verify",),
        1,
        "malformed",
        "a patch cut before its diff contains no diff",
    ),
    Case(
        "patch-hunk-count-lies",
        edit(f"patches/{P1}", b"@@ -30,6 +30,8 @@", b"@@ -30,6 +30,80 @@"),
        ("verify",),
        1,
        "malformed",
        "a hunk header that does not match its body is malformed",
    ),
    Case(
        "patch-ten-mb-single-line",
        transform(f"patches/{P2}", ten_mb_single_line_patch),
        ("verify",),
        1,
        "malformed",
        "a 10 MB line with no diff in it is judged malformed, quickly",
    ),
    Case(
        "patch-header-non-utf8",
        edit(f"patches/{P1}", b"Subject: config:", b"Subject: \xff\xfe config:"),
        ("fmt", "--check"),
        1,
        "not canonical",
        "fmt --check reports the header that is not canonical UTF-8; it writes nothing",
    ),
    Case(
        "patch-writes-into-git-dir",
        write(f"patches/{P1}", new_file_patch(".git/hooks/post-checkout")),
        ("verify",),
        1,
        "unsafe",
        "a target under .git/ is unsafe whatever the engine",
    ),
    Case(
        "patch-is-a-symlink",
        replace_with_symlink(f"patches/{P3}", "/etc/hostname"),
        ("status",),
        2,
        f"series:4: names '{P3}' but patches/{P3}: is a symlink",
        "a patch read through a link could be anything on the machine",
    ),
    Case(
        "patch-is-a-directory",
        replace_with_directory(f"patches/{P3}"),
        ("verify",),
        2,
        f"series:4: names '{P3}' but patches/{P3}: is a directory",
        "a directory is no patch file",
    ),
    Case(
        "patch-with-nul-bytes",
        transform(
            f"patches/{P1}", lambda d: d.replace(b"b/pulse/config.py", b"b/pulse/con\0fig.py")
        ),
        ("verify",),
        1,
        "unsafe",
        "a NUL byte in a path is unsafe",
    ),
    # apply --target
    Case(
        "apply-dotdot-path",
        with_site(write(f"patches/{P4}", new_file_patch("../escaped.txt"))),
        ("apply", "--target", "{scratch}/site"),
        1,
        "path 'a/../escaped.txt' has a '..' segment",
        "apply judges the series unsafe and refuses it before writing anything",
    ),
    Case(
        "apply-absolute-path",
        with_site(write(f"patches/{P4}", absolute_patch("/etc/hostname"))),
        ("apply", "--target", "{scratch}/site", "--engine", "patch"),
        1,
        "absolute path '/etc/hostname'",
        "an absolute path is refused before GNU patch sees it",
    ),
    Case(
        "apply-through-symlinked-directory",
        site_with_symlinked_package,
        ("apply", "--target", "{scratch}/site"),
        1,
        "pulse/config.py: 'pulse' is a symlinked directory",
        "writes would follow the link out of the target",
    ),
    Case(
        "apply-into-git-dir",
        with_site(write(f"patches/{P4}", new_file_patch(".git/config"))),
        ("apply", "--target", "{scratch}/site"),
        1,
        "path 'a/.git/config' writes into .git",
        "a target under .git/ is unsafe: refused before anything is written",
    ),
    Case(
        "apply-target-is-a-file",
        scratch_file("site", b"not a directory\n"),
        ("apply", "--target", "{scratch}/site"),
        2,
        "--target {scratch}/site: not a directory",
        "the target must be a directory",
    ),
    # FORK.md retirement record
    Case(
        "record-missing-end-marker",
        record_without(RECORD_END),
        ("retire", "--tag", "v1.2.0"),
        2,
        "FORK.md",
        "a record without its end marker cannot be edited safely",
    ),
    Case(
        "record-missing-begin-marker",
        record_without(RECORD_BEGIN),
        ("retire", "--tag", "v1.2.0"),
        2,
        "FORK.md",
        "a record without its begin marker cannot be edited safely",
    ),
    Case(
        "record-duplicate-markers",
        append("FORK.md", f"{RECORD_BEGIN}\n{RECORD_END}\n".encode()),
        ("retire", "--tag", "v1.2.0"),
        2,
        "FORK.md",
        "two records: which one to append to is ambiguous",
    ),
    Case(
        "record-non-utf8",
        append("FORK.md", b"\nNotes in latin-1: caf\xe9\n"),
        ("retire", "--tag", "v1.2.0"),
        2,
        "FORK.md:129: not valid UTF-8 (byte 7783)",
        "the record is UTF-8 text; rewriting it must not mangle bytes",
    ),
    # probe results, arm results, waivers
    Case(
        "probe-results-garbage",
        scratch_file("probe.json", b"\x00\x01garbage{"),
        ("absorbed", "--tag", "v1.2.0", "--probe-results", "{scratch}/probe.json"),
        2,
        "{scratch}/probe.json: not valid JSON",
        "garbage is not a probe result",
    ),
    Case(
        "probe-results-deeply-nested",
        scratch_file("probe.json", nested_json(100_000)),
        ("absorbed", "--tag", "v1.2.0", "--probe-results", "{scratch}/probe.json"),
        2,
        "{scratch}/probe.json: not valid JSON",
        "nesting deep enough to exhaust the parser is not a probe result",
    ),
    Case(
        "probe-results-a-list",
        scratch_file("probe.json", b'["pass", "fail"]'),
        ("absorbed", "--tag", "v1.2.0", "--probe-results", "{scratch}/probe.json"),
        2,
        "{scratch}/probe.json: expected a JSON object",
        "the shape is an object with full and arms",
    ),
    Case(
        "arm-results-wrong-verdict",
        scratch_file("arms.json", json.dumps({"full": "pass", "arms": {P1: "ok"}}).encode()),
        ("arms", "--check", "--results", "{scratch}/arms.json"),
        2,
        "{scratch}/arms.json: arm '",
        "only pass and fail are results",
    ),
    Case(
        "arm-results-non-utf8",
        scratch_file("arms.json", b'{"full": "\xff"}'),
        ("arms", "--check", "--results", "{scratch}/arms.json"),
        2,
        "{scratch}/arms.json: not valid JSON",
        "JSON is UTF-8",
    ),
    Case(
        "waivers-crlf",
        scratch_file("waivers", f"{P4} fork-only\r\n".encode()),
        ("arms", "--waivers", "{scratch}/waivers"),
        2,
        "{scratch}/waivers:1: line ends with CR LF",
        "a CR would become part of the reason",
    ),
    Case(
        "waivers-is-a-directory",
        lambda fork, scratch: (scratch / "waivers").mkdir(),
        ("arms", "--waivers", "{scratch}/waivers"),
        2,
        "Invalid value for '--waivers': File '{scratch}/waivers' is a directory.",
        "a waivers file that cannot be read is not an empty list",
    ),
    Case(
        "verify-base-is-a-tree",
        nothing,
        ("verify", "--base", PIN_TREE),
        2,
        f"base revision '{PIN_TREE}' is a tree, not a commit",
        "a tree has no history: verify needs a commit",
    ),
    Case(
        "config-pin-is-a-list",
        edit("forktool.yaml", b"  tag: v1.1.0\n  commit:", b"  - v1.1.0\n  -"),
        ("status",),
        2,
        "{fork}/forktool.yaml:6: pin must be a mapping",
        "pin holds tag and commit",
    ),
    Case(
        "config-over-one-mebibyte",
        append("forktool.yaml", b"#" + b"x" * (1 << 20) + b"\n"),
        ("status",),
        2,
        "{fork}/forktool.yaml: 1049448 bytes is too large for a config file",
        "a config is small: a huge one is refused before YAML parses it",
    ),
    Case(
        "map-duplicate-line",
        append("upstream.map", f"{P4} none\n".encode()),
        ("status",),
        2,
        f"upstream.map:6: '{P4}' is mapped twice (first on line 5)",
        "every series entry appears exactly once in the map",
    ),
    Case(
        "ledger-crlf",
        transform("alignment.ledger", lambda d: d.replace(b"\n", b"\r\n")),
        ("align",),
        2,
        "alignment.ledger:1: line ends with CR LF",
        "a CR would become part of a rationale or a glob",
    ),
    Case(
        "series-nul-byte",
        append("series", b"0009-\0.patch\n"),
        ("status",),
        2,
        "series:6: line contains a NUL byte",
        "a NUL cannot be part of a file name",
    ),
    Case(
        "patch-renames-into-git-dir",
        write(
            f"patches/{P4}",
            b"diff --git a/README.md b/.git/hooks/pre-commit\nsimilarity index 100%\n"
            b"rename from README.md\nrename to .git/hooks/pre-commit\n",
        ),
        ("verify",),
        1,
        "unsafe",
        "a rename into .git/ is as unsafe as a write into it",
    ),
    Case(
        "record-is-a-directory",
        replace_with_directory("FORK.md"),
        ("retire", "--tag", "v1.2.0"),
        2,
        "FORK.md: is a directory",
        "the record must be a file forktool can rewrite",
    ),
    Case(
        "pin-site-is-a-symlink",
        replace_with_symlink("ci/build.yml", "{scratch}/build.yml"),
        ("pin", "bump", "v1.2.0"),
        2,
        "forktool.yaml:18: pin site ci/build.yml is a symbolic link",
        "a bump would replace the link or write outside the fork",
    ),
    Case(
        "config-option-C-is-a-file",
        nothing,
        ("-C", "{fork}/README.md", "status"),
        2,
        "Invalid value for '-C': Directory '{fork}/README.md' is a file.",
        "-C needs a directory",
    ),
    # tags and revisions with shell metacharacters
    *[
        Case(
            f"pin-bump-shell-tag-{n}",
            nothing,
            ("pin", "bump", tag),
            2,
            f"tag name '{tag}'",
            "a tag is a name passed to git as one argument, never to a shell",
        )
        for n, tag in enumerate(SHELL_TAGS, start=1)
    ],
    Case(
        "pin-bump-option-like-tag",
        nothing,
        ("pin", "bump", "--", "--upload-pack=touch pwned"),
        2,
        "tag name '--upload-pack=touch pwned' starts with '-'",
        "a tag that looks like a git option is still only a name",
    ),
    Case(
        "sync-shell-tag",
        nothing,
        ("sync", "v1.3.0;touch pwned"),
        2,
        "tag name 'v1.3.0;touch pwned' contains",
        "sync refuses an unknown tag before creating a branch or worktree",
    ),
    Case(
        "absorbed-shell-tag",
        nothing,
        ("absorbed", "--tag", "$(touch pwned)"),
        2,
        "unknown tag '$(touch pwned)'",
        "an unknown tag is an error, never a report",
    ),
    Case(
        "verify-shell-base",
        nothing,
        ("verify", "--base", "HEAD;touch pwned"),
        2,
        "unknown base revision 'HEAD;touch pwned'",
        "an unknown base is an error",
    ),
    Case(
        "verify-base-is-a-blob",
        nothing,
        ("verify", "--base", README_BLOB),
        2,
        f"base revision '{README_BLOB}' is a blob, not a commit",
        "a blob has no tree to apply onto",
    ),
    Case(
        "tag-with-newline-stays-one-line",
        nothing,
        ("absorbed", "--tag", "v9\nerror: forged second line"),
        2,
        "unknown tag 'v9\\nerror: forged second line'",
        "user text is shown escaped so an error stays one line",
    ),
    Case(
        "retire-undo-unknown-patch",
        nothing,
        ("retire", "--undo", "../../etc/passwd", "--reason", "x"),
        2,
        "no commit in HEAD's history lists '../../etc/passwd' in series",
        "undo restores only a patch the history retired",
    ),
    Case(
        "import-branch-invalid-ref",
        nothing,
        ("import", "--branch", "bad..name"),
        2,
        "'bad..name' is not a valid branch name",
        "not a valid branch name: refused before anything is written",
    ),
    Case(
        "export-from-shell-rev",
        nothing,
        ("export", "--from", "$(touch pwned)"),
        2,
        "unknown revision '$(touch pwned)'",
        "an unknown revision is an error",
    ),
    Case(
        "check-history-option-like-rev",
        nothing,
        ("check-history", "--", "--output=pwned"),
        2,
        "unknown revision '--output=pwned'",
        "a revision that looks like an option is still only a name",
    ),
    Case(
        "refresh-onto-shell-tag",
        nothing,
        ("refresh", "--onto", "v1.3.0 && touch pwned"),
        2,
        "unknown tag 'v1.3.0 && touch pwned'",
        "an unknown tag is an error",
    ),
    # issue 12: inputs that made a run lie, crash or write outside the fork
    Case(
        "config-yaml-local-tag",
        edit("forktool.yaml", b"layout: merged", b"layout: !merged merged"),
        ("status",),
        2,
        "{fork}/forktool.yaml:8: unknown YAML tag '!merged'",
        "a tag YAML would resolve to a custom type is no plain value: refused, not ignored",
    ),
    Case(
        "absorbed-tag-is-a-revision-expression",
        nothing,
        ("absorbed", "--tag", "v1.2.0~1"),
        2,
        "'v1.2.0~1' is a revision expression, not a tag",
        "a verdict on a tag must be about that tag, not a commit near it",
    ),
    Case(
        "retire-tag-is-a-revision-expression",
        nothing,
        ("retire", "--tag", "v1.2.0^"),
        2,
        "'v1.2.0^' is a revision expression, not a tag",
        "retire records the tag that absorbed a fix: it must be a tag",
    ),
    Case(
        "poll-release-tags-match-nothing",
        edit("forktool.yaml", b"release_tags: 'v*'", b"release_tags: 'release-*'"),
        ("upstream", "poll", "--no-fetch"),
        2,
        "release_tags 'release-*' matches no tag, not even the pinned tag 'v1.1.0'",
        "a pattern that matches nothing would say 'nothing new' for ever",
    ),
    Case(
        "poll-fetch-from-a-missing-repository",
        upstream_url("{scratch}/nowhere"),
        ("upstream", "poll"),
        2,
        "git could not fetch from upstream ({scratch}/nowhere): fatal: '{scratch}/nowhere' "
        "does not appear to be a git repository",
        "git's first line says what failed; its last ('and the repository exists.') does not",
    ),
    Case(
        "alternates-source-vanished",
        objects_borrowed_from_a_vanished_clone,
        ("verify",),
        2,
        "the repository's objects are missing: {fork}/.git/objects/info/alternates says they "
        "are in {scratch}/gone/objects, which no longer exists",
        "the tag is there but its objects are not: 'fetch the tag' would be wrong advice",
    ),
    Case(
        "apply-target-directory-where-a-file-is-patched",
        site_entry("directory"),
        ("apply", "--target", "{scratch}/site"),
        1,
        "pulse/config.py: is a directory where the patch expects a file; refusing to patch it",
        "the series cannot apply: a verdict, before anything is written",
    ),
    Case(
        "apply-target-fifo-where-a-file-is-patched",
        site_entry("fifo"),
        ("apply", "--target", "{scratch}/site"),
        1,
        "pulse/config.py: is a FIFO where the patch expects a file; refusing to patch it",
        "reading a FIFO would block for ever; copying it fails",
    ),
    Case(
        "apply-target-series-with-a-submodule",
        with_site(write(f"patches/{P4}", GITLINK_PATCH)),
        ("apply", "--target", "{scratch}/site"),
        1,
        "vendor/lib: a submodule (gitlink, mode 160000) has no content to apply",
        "a gitlink names a commit of another repository: nothing to write into a directory",
    ),
    Case(
        "pin-site-in-a-symlinked-directory",
        move_out_and_link("docker"),
        ("pin", "bump", "v1.2.0"),
        2,
        "docker/Dockerfile: 'docker' is a symlinked directory (to {scratch}/docker)",
        "a bump would rewrite a Dockerfile outside the fork",
    ),
    Case(
        "notes-in-a-symlinked-directory",
        move_out_and_link("patches/notes"),
        ("retire", "--tag", "v1.2.0"),
        2,
        "patches/notes: 'patches/notes' is a symlinked directory (to {scratch}/notes)",
        "retire would delete a note outside the fork",
    ),
    Case(
        "patches-in-a-symlinked-directory",
        move_out_and_link("patches"),
        ("verify",),
        2,
        "patches: 'patches' is a symlinked directory (to {scratch}/patches)",
        "verify would read patches git does not commit",
    ),
    # Changes that ship unseen, gates that pass on nothing, inputs that run things
    Case(
        "config-gate-timeout-unicode-digit",
        edit(
            "forktool.yaml",
            b"  site: /opt/pulse\n",
            "  site: /opt/pulse\n  gate_timeout: \u00b2\n".encode(),
        ),
        ("status",),
        2,
        "{fork}/forktool.yaml:25: image.gate_timeout '\u00b2' must be a whole number of seconds",
        "str.isdigit says yes to a superscript two; int() does not: a number is ASCII digits",
    ),
    Case(
        "config-gate-timeout-5000-digits",
        edit(
            "forktool.yaml",
            b"  site: /opt/pulse\n",
            b"  site: /opt/pulse\n  gate_timeout: " + b"9" * 5000 + b"\n",
        ),
        ("status",),
        2,
        "{fork}/forktool.yaml:25: image.gate_timeout '" + "9" * 40 + "...' must be a whole number",
        "int() refuses more than 4,300 digits: bounded before it is read, and not echoed whole",
    ),
    Case(
        "config-upstream-url-is-an-option",
        edit(
            "forktool.yaml",
            b"  remote: upstream\n",
            b"  remote: upstream\n  url: '--upload-pack=touch pwned'\n",
        ),
        ("upstream", "poll"),
        2,
        "{fork}/forktool.yaml:5: upstream.url '--upload-pack=touch pwned' starts with '-'",
        "a URL git would read as an option runs a command: refused when the config is read",
    ),
    Case(
        "config-upstream-url-ext-transport",
        edit(
            "forktool.yaml",
            b"  remote: upstream\n",
            b"  remote: upstream\n  url: 'ext::sh -c touch% pwned'\n",
        ),
        ("status",),
        2,
        "{fork}/forktool.yaml:5: upstream.url 'ext::sh -c touch% pwned' uses the ext:: transport",
        "the ext:: transport runs a command",
    ),
    Case(
        "remote-url-ext-transport",
        upstream_url("ext::sh -c touch% pwned"),
        ("upstream", "poll"),
        2,
        "remote 'upstream' has the URL 'ext::sh -c touch% pwned', which uses the ext:: transport",
        "a remote's URL from git's config is held to upstream.url's rule before any fetch",
    ),
    Case(
        "check-only-a-skipped-check",
        nothing,
        ("check", "--only", "history"),
        1,
        "FAILED: no check ran: every selected check was skipped or none was selected",
        "a gate where no selected check ran proves nothing: it fails",
    ),
    Case(
        "check-every-check-deselected",
        nothing,
        ("check", "--only", "files", "--skip", "files"),
        1,
        "FAILED: no check ran",
        "selecting nothing is no pass",
    ),
    Case(
        "map-commit-is-a-tree-check",
        remap_f1(PIN_TREE),
        ("check", "--only", "files"),
        1,
        f"{PIN_TREE} is a tree, not a commit",
        "check finds what absorbed would refuse: a map id that is no commit",
    ),
    Case(
        "quilt-patch-is-a-symlink-outside",
        quilt_with_a_linked_patch,
        ("init", "--pin", "v1.1.0", "--from-quilt", "debian/patches"),
        2,
        "debian/patches/x.patch: is a symlink",
        "init reads a quilt patch as every fork file: never through a link",
    ),
]


# -- one path created and deleted in one patch: refused as malformed by every engine --


def create_then_delete_patch(path: str) -> bytes:
    return (
        new_file_patch(path)
        + (
            f"diff --git a/{path} b/{path}\ndeleted file mode 100644\n--- a/{path}\n+++ /dev/null\n"
            "@@ -1 +0,0 @@\n-owned\n"
        ).encode()
    )


def delete_then_create_patch(path: str, lines: bytes) -> bytes:
    removed = b"".join(b"-" + line + b"\n" for line in lines.splitlines())
    count = len(lines.splitlines())
    return (
        (
            f"diff --git a/{path} b/{path}\ndeleted file mode 100644\n--- a/{path}\n+++ /dev/null\n"
            f"@@ -1,{count} +0,0 @@\n"
        ).encode()
        + removed
        + new_file_patch(path)
    )


def delete_and_create_readme(fork: Path, scratch: Path) -> None:
    del scratch
    readme = (fork / "pulse" / "__init__.py").read_bytes()
    (fork / "patches" / P4).write_bytes(delete_then_create_patch("pulse/__init__.py", readme))


CREATED_AND_DELETED = "pulse/extra.py: the patch has two file diffs for it"
CASES += [
    Case(
        f"patch-creates-and-deletes-one-path-{command[0]}-{command[-1]}",
        with_site(write(f"patches/{P4}", create_then_delete_patch("pulse/extra.py"))),
        command,
        1,
        CREATED_AND_DELETED,
        "git keeps a created-then-deleted file and GNU patch removes it: no engine can "
        "prove it, so every engine refuses it as malformed",
    )
    for command in (
        ("verify",),
        ("apply", "--target", "{scratch}/site", "--engine", "git"),
        ("apply", "--target", "{scratch}/site", "--engine", "patch"),
    )
]
CASES += [
    Case(
        f"patch-deletes-and-recreates-one-path-{command[-1]}",
        both(site, delete_and_create_readme),
        command,
        1,
        "pulse/__init__.py: the patch has two file diffs for it",
        "a deletion and a creation of one path cannot be reverted exactly: malformed",
    )
    for command in (("verify",), ("apply", "--target", "{scratch}/site", "--engine", "patch"))
]


def rename_then_recreate(fork: Path, scratch: Path) -> None:
    """A rename of pulse/__init__.py away, then a diff creating it again."""
    del scratch
    (fork / "patches" / P4).write_bytes(
        b"diff --git a/pulse/__init__.py b/pulse/moved.py\nsimilarity index 100%\n"
        b"rename from pulse/__init__.py\nrename to pulse/moved.py\n"
        + new_file_patch("pulse/__init__.py")
    )


CASES.append(
    Case(
        "patch-renames-a-path-away-and-creates-it-again",
        rename_then_recreate,
        ("verify",),
        1,
        "pulse/__init__.py: the patch has two file diffs for it",
        "a rename's source created again in the same patch cannot be reverted exactly",
    )
)
CASES.append(
    Case(
        "patch-creates-and-deletes-one-path-check",
        write(f"patches/{P4}", create_then_delete_patch("pulse/extra.py")),
        ("check", "--only", "apply"),
        1,
        CREATED_AND_DELETED,
        "the CI gate fails on a patch no engine can prove",
    )
)
