"""Parsing and formatting one patch file: real shapes, exact problems, exact bytes back."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forktool.model import patch_parser, patch_text
from forktool.model.patch_parser import parse_header, parse_patch
from forktool.model.patch_text import diff_outline, name_field, split_lines
from forktool.model.patchfile import (
    FileDiff,
    PatchFile,
    PatchProblem,
    Trailer,
    format_patch,
    touched_paths,
)

SHA = "4f2b8c0e9d1a7b3c5e6f80912a3b4c5d6e7f8091"
MERGED = "0123456789abcdef0123456789abcdef01234567"

# `git format-patch -1 --binary` output (only the author and commit id changed).
FORMAT_PATCH = f"""\
From {SHA} Mon Sep 17 00:00:00 2001
From: Ada Lovelace <ada@example.org>
Date: Tue, 14 May 2024 10:21:07 +0200
Subject: [PATCH 1/3] Fix the frobnicator when the widget count is zero and the
 retry budget is exhausted

The frobnicator divided by the widget count.

Upstream-PR: https://example.org/upstream/pull/12
Upstream-Merge: {MERGED.upper()}
Exit-Criterion: upstream release containing the fix
---
 blob.bin                   | Bin 0 -> 3 bytes
 gone.txt                   |   1 -
 new.txt                    |   1 +
 old_name.py => new_name.py |   0
 run.sh                     |   0
 sp ace.txt                 |   2 +-
 src/x.py                   |   2 +-
 7 files changed, 3 insertions(+), 3 deletions(-)
 create mode 100644 blob.bin
 delete mode 100644 gone.txt
 create mode 100644 new.txt
 rename old_name.py => new_name.py (100%)
 mode change 100644 => 100755 run.sh

diff --git a/blob.bin b/blob.bin
new file mode 100644
index 0000000000000000000000000000000000000000..8352675d67aed6625ece79af41c27fdb4ee2e867
GIT binary patch
literal 3
KcmZQzWC8#H2LJ>B

literal 0
HcmV?d00001

diff --git a/gone.txt b/gone.txt
deleted file mode 100644
index 3367afd..0000000
--- a/gone.txt
+++ /dev/null
@@ -1 +0,0 @@
-old
diff --git a/new.txt b/new.txt
new file mode 100644
index 0000000..3e75765
--- /dev/null
+++ b/new.txt
@@ -0,0 +1 @@
+new
diff --git a/old_name.py b/new_name.py
similarity index 100%
rename from old_name.py
rename to new_name.py
diff --git a/run.sh b/run.sh
old mode 100644
new mode 100755
diff --git a/sp ace.txt b/sp ace.txt
index 2fa992c..bd93009 100644
--- a/sp ace.txt\t
+++ b/sp ace.txt\t
@@ -1 +1 @@
-keep
+kept
diff --git a/src/x.py b/src/x.py
index de98044..7be73ce 100644
--- a/src/x.py
+++ b/src/x.py
@@ -1,3 +1,3 @@ def frob():
 a
-b
+B
 c
-- \n2.39.5

""".encode()

# A Debian/quilt patch: DEP-3 fields, "# " trailers, Index/==== preamble, timestamps.
QUILT_PATCH = b"""\
Description: Fix frob on big-endian hosts
Author: Dev <dev@example.org>
# Upstream-PR: https://example.org/upstream/pull/7
# Upstream-Merge: none

Index: pkg-1.2/src/frob.c
===================================================================
--- pkg-1.2.orig/src/frob.c\t2024-01-02 03:04:05.000000000 +0000
+++ pkg-1.2/src/frob.c\t2024-01-02 03:05:06.000000000 +0000
@@ -10,3 +10,3 @@ int frob(void)
 {
-    return x;
+    return htonl(x);
 }
diff -Naur pkg-1.2.orig/README pkg-1.2/README
--- pkg-1.2.orig/README 2024-01-02 03:04:05.000000000 +0000
+++ pkg-1.2/README 2024-01-02 03:05:06.000000000 +0000
@@ -1 +1,2 @@
 frob
+now big-endian safe
"""

# git diff output for edge cases of the hunk body and of file names.
EDGE_DIFF = (
    b"diff --git a/crlf.txt b/crlf.txt\n"
    b"index 4e349b5..24fe5dc 100644\n"
    b"--- a/crlf.txt\n"
    b"+++ b/crlf.txt\n"
    b"@@ -1,2 +1,2 @@\n"
    b" one\r\n"
    b"-two\r\n"
    b"+TWO\r\n"
    b"diff --git a/nonl.txt b/nonl.txt\n"
    b"index 20cbb4d..6fe2aa3 100644\n"
    b"--- a/nonl.txt\n"
    b"+++ b/nonl.txt\n"
    b"@@ -1 +1 @@\n"
    b"-no newline\n"
    b"\\ No newline at end of file\n"
    b"+no newline!\n"
    b"\\ No newline at end of file\n"
    b'diff --git "a/caf\\303\\251\\tx.txt" "b/caf\\303\\251\\tx.txt"\n'
    b"index 587be6b..975fbec 100644\n"
    b'--- "a/caf\\303\\251\\tx.txt"\n'
    b'+++ "b/caf\\303\\251\\tx.txt"\n'
    b"@@ -1 +1 @@\n"
    b"-x\n"
    b"+y\n"
    b"diff --git a/u0.txt b/u0.txt\n"
    b"index f00c965..33011fd 100644\n"
    b"--- a/u0.txt\n"
    b"+++ b/u0.txt\n"
    b"@@ -5 +5 @@\n"
    b"-5\n"
    b"+five\n"
    b"@@ -9,0 +10,2 @@\n"
    b"+ten\n"
    b"+eleven\n"
    b"diff --git a/blank.txt b/blank.txt\n"
    b"--- a/blank.txt\n"
    b"+++ b/blank.txt\n"
    b"@@ -1,3 +1,3 @@\n"
    b"\n"
    b"-x\n"
    b"+y\n"
    b" z\n"
)


def simple_diff(old: str = "a/x.py", new: str = "b/x.py", body: str = "") -> bytes:
    hunk = body or "@@ -1,2 +1,2 @@\n a\n-b\n+B\n"
    return f"diff --git {old} {new}\n--- {old}\n+++ {new}\n{hunk}".encode()


def diff_named(patch: PatchFile, path: str) -> FileDiff:
    return next(diff for diff in patch.files if diff.path == path)


# --- git format-patch -----------------------------------------------------------------


def test_format_patch_header_is_read() -> None:
    patch = parse_patch(FORMAT_PATCH)

    assert patch.problems == ()
    header = patch.header
    assert header.style == "mbox"
    assert header.from_sha == SHA
    assert header.author == "Ada Lovelace <ada@example.org>"
    assert header.date == "Tue, 14 May 2024 10:21:07 +0200"
    assert header.subject == (
        "Fix the frobnicator when the widget count is zero and the retry budget is exhausted"
    )
    assert header.message.splitlines()[0] == "The frobnicator divided by the widget count."
    assert header.message.endswith("Exit-Criterion: upstream release containing the fix")
    assert header.trailers == (
        Trailer("Upstream-PR", "https://example.org/upstream/pull/12", 9),
        Trailer("Upstream-Merge", MERGED.upper(), 10),
        Trailer("Exit-Criterion", "upstream release containing the fix", 11),
    )
    assert patch.upstream_merge() == (MERGED,)
    assert header.trailer("upstream-pr") == header.trailers[0]


def test_format_patch_files_are_read() -> None:
    patch = parse_patch(FORMAT_PATCH)

    summary = [
        (d.line, d.old_path, d.new_path, d.is_new, d.is_deleted, d.is_rename, d.is_binary)
        for d in patch.files
    ]
    assert summary == [
        (27, None, "blob.bin", True, False, False, True),
        (37, "gone.txt", None, False, True, False, False),
        (44, None, "new.txt", True, False, False, False),
        (51, "old_name.py", "new_name.py", False, False, True, False),
        (55, "run.sh", "run.sh", False, False, False, False),
        (58, "sp ace.txt", "sp ace.txt", False, False, False, False),
        (65, "src/x.py", "src/x.py", False, False, False, False),
    ]
    assert patch.trailer_lines == ("-- ", "2.39.5", "")
    assert touched_paths(patch) == [
        "blob.bin",
        "gone.txt",
        "new.txt",
        "old_name.py",
        "new_name.py",
        "run.sh",
        "sp ace.txt",
        "src/x.py",
    ]


def test_mode_change_rename_and_binary_details() -> None:
    patch = parse_patch(FORMAT_PATCH)

    run = diff_named(patch, "run.sh")
    assert (run.old_mode, run.new_mode, run.hunks) == ("100644", "100755", ())
    rename = diff_named(patch, "new_name.py")
    assert rename.header_lines[1] == "similarity index 100%"
    assert (rename.raw_old, rename.raw_new) == ("a/old_name.py", "b/new_name.py")
    blob = diff_named(patch, "blob.bin")
    assert blob.header_lines[-1] == "" and blob.header_lines[3] == "GIT binary patch"
    assert (blob.old_mode, blob.new_mode) == (None, "100644")
    gone = diff_named(patch, "gone.txt")
    assert (gone.raw_old, gone.raw_new, gone.old_mode) == ("a/gone.txt", "/dev/null", "100644")


def test_hunk_fields_and_section() -> None:
    hunk = diff_named(parse_patch(FORMAT_PATCH), "src/x.py").hunks[0]

    assert (hunk.old_start, hunk.old_count, hunk.new_start, hunk.new_count) == (1, 3, 1, 3)
    assert hunk.section == "def frob():"
    assert hunk.line == 69
    assert hunk.lines == (" a", "-b", "+B", " c")


def test_format_patch_round_trips_exactly() -> None:
    assert format_patch(parse_patch(FORMAT_PATCH)) == FORMAT_PATCH


def test_rfc2047_author_and_subject_are_decoded() -> None:
    data = (
        f"From {SHA} Mon Sep 17 00:00:00 2001\n"
        "From: =?UTF-8?q?Jos=C3=A9=20Dev?= <jose@example.org>\n"
        "Subject: [PATCH] =?UTF-8?q?R=C3=A9sum=C3=A9=20parsing?=\n"
        "\n"
        "Body.\n"
        "---\n"
    ).encode() + simple_diff()
    header = parse_patch(data).header

    assert header.author == "José Dev <jose@example.org>"
    assert header.subject == "Résumé parsing"


# --- plain diffs ----------------------------------------------------------------------


def test_quilt_patch_with_orig_prefixes_and_timestamps() -> None:
    patch = parse_patch(QUILT_PATCH)

    assert patch.problems == ()
    assert patch.header.style == "plain"
    assert patch.header.subject == "Fix frob on big-endian hosts"
    assert patch.header.author == "Dev <dev@example.org>"
    assert patch.header.trailers == (
        Trailer("Upstream-PR", "https://example.org/upstream/pull/7", 3),
        Trailer("Upstream-Merge", "none", 4),
    )
    assert patch.upstream_merge() == ()
    frob, readme = patch.files
    assert (frob.raw_old, frob.raw_new) == ("pkg-1.2.orig/src/frob.c", "pkg-1.2/src/frob.c")
    assert (frob.old_path, frob.new_path, frob.line) == ("src/frob.c", "src/frob.c", 6)
    assert frob.header_lines[0] == "Index: pkg-1.2/src/frob.c"
    assert (readme.raw_old, readme.path, readme.line) == ("pkg-1.2.orig/README", "README", 15)
    assert readme.hunks[0].new_count == 2
    assert patch.header.lines[-1] == ""
    assert format_patch(patch) == QUILT_PATCH


def test_plain_diff_without_any_header() -> None:
    data = b"--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"
    patch = parse_patch(data)

    assert patch.problems == ()
    assert patch.header.lines == () and patch.header.message == ""
    assert patch.files[0].path == "x.py"


# --- hunk bodies and names ------------------------------------------------------------


def test_crlf_content_lines_keep_their_bytes() -> None:
    patch = parse_patch(EDGE_DIFF)

    assert patch.problems == ()
    assert diff_named(patch, "crlf.txt").hunks[0].lines == (" one\r", "-two\r", "+TWO\r")
    assert format_patch(patch) == EDGE_DIFF


def test_patch_file_with_crlf_line_endings_throughout() -> None:
    data = simple_diff(body="@@ -1,3 +1,3 @@\n a\n\n-b\n+B\n").replace(b"\n", b"\r\n")
    patch = parse_patch(data)

    assert patch.problems == ()
    assert patch.files[0].path == "x.py"
    assert patch.files[0].hunks[0].lines == (" a\r", "\r", "-b\r", "+B\r")
    assert format_patch(patch) == data


def test_no_newline_marker_belongs_to_the_hunk() -> None:
    hunk = diff_named(parse_patch(EDGE_DIFF), "nonl.txt").hunks[0]

    assert hunk.lines == (
        "-no newline",
        "\\ No newline at end of file",
        "+no newline!",
        "\\ No newline at end of file",
    )


def test_quoted_path_is_unquoted() -> None:
    diff = parse_patch(EDGE_DIFF).files[2]

    assert diff.raw_old == "a/café\tx.txt"
    assert diff.path == "café\tx.txt"


def test_zero_context_hunks_parse() -> None:
    hunks = diff_named(parse_patch(EDGE_DIFF), "u0.txt").hunks

    assert [(h.old_start, h.old_count, h.new_start, h.new_count) for h in hunks] == [
        (5, 1, 5, 1),
        (9, 0, 10, 2),
    ]


def test_empty_line_in_hunk_is_empty_context() -> None:
    hunk = diff_named(parse_patch(EDGE_DIFF), "blank.txt").hunks[0]

    assert hunk.lines == ("", "-x", "+y", " z")


def test_non_utf8_bytes_round_trip() -> None:
    data = simple_diff(body="@@ -1 +1 @@\n-caf\xe9\n+caf\xe8\n").replace(b"\xc3\xa9", b"\xe9")
    data = data.replace("caf\xe8".encode(), b"caf\xe8")

    patch = parse_patch(data)
    assert patch.problems == ()
    assert format_patch(patch) == data


def test_missing_newline_at_end_of_file_round_trips() -> None:
    data = simple_diff().rstrip(b"\n")
    patch = parse_patch(data)

    assert patch.problems == ()
    assert patch.newline_at_eof is False
    assert format_patch(patch) == data


def test_symlink_mode_is_noticed() -> None:
    data = (
        b"diff --git a/link b/link\n"
        b"index 1111111..2222222 120000\n"
        b"--- a/link\n+++ b/link\n@@ -1 +1 @@\n-old\n\\ No newline at end of file\n"
        b"+new\n\\ No newline at end of file\n"
    )
    assert parse_patch(data).files[0].is_symlink is True


# --- malformed ------------------------------------------------------------------------


def test_empty_file_is_an_empty_patch() -> None:
    # quilt and dpkg-source apply a 0-byte patch (procps' ps_checks) as a no-op.
    patch = parse_patch(b"")

    assert patch.problems == ()
    assert patch.empty and patch.ok and patch.files == ()
    assert format_patch(patch) == b""


def test_blank_lines_are_not_an_empty_patch() -> None:
    # GNU patch says "Only garbage was found" for a file of blank lines: not a no-op.
    patch = parse_patch(b"\n\n")

    assert patch.problems == (PatchProblem("malformed", "contains no diff", None),)
    assert not patch.empty


def test_garbage_only_file_contains_no_diff() -> None:
    data = b"this is not a patch\n--- but it has dashes\n"
    patch = parse_patch(data)

    assert patch.problems == (PatchProblem("malformed", "contains no diff", None),)
    assert patch.header.lines == ("this is not a patch", "--- but it has dashes")
    assert format_patch(patch) == data


def test_truncated_hunk() -> None:
    patch = parse_patch(simple_diff(body="@@ -1,3 +1,3 @@\n a\n-b\n"))

    assert patch.problems == (
        PatchProblem(
            "malformed", "hunk 1 of 'x.py' is truncated: 1 old and 2 new lines missing", 4
        ),
    )


def test_hunk_with_fewer_lines_than_counted_stops_at_the_next_hunk() -> None:
    patch = parse_patch(simple_diff(body="@@ -1,3 +1,3 @@\n a\n-b\n+B\n@@ -9 +9 @@\n-x\n+y\n"))

    assert patch.problems == (
        PatchProblem(
            "malformed",
            "hunk 1 of 'x.py': line does not start with ' ', '-', '+' or '\\' while "
            "1 old and 1 new lines are still expected",
            8,
        ),
    )


def test_hunk_with_more_lines_than_counted() -> None:
    patch = parse_patch(simple_diff(body="@@ -1,2 +1,2 @@\n a\n-b\n+B\n+C\n"))

    assert patch.problems == (
        PatchProblem("malformed", "unexpected text after the last hunk of 'x.py'", 8),
    )


def test_count_mismatch_names_the_line() -> None:
    patch = parse_patch(simple_diff(body="@@ -1,3 +1,3 @@\n a\n-b\n-c\n+B\n c\n"))

    assert patch.problems == (
        PatchProblem("malformed", "hunk 1 of 'x.py': more context lines than the header counts", 9),
    )


def test_second_hunk_is_named_in_the_problem() -> None:
    body = "@@ -1 +1 @@\n-a\n+b\n@@ -5,2 +5 @@\n-c\n-d\n-e\n"
    patch = parse_patch(simple_diff(body=body))

    assert patch.problems == (
        PatchProblem(
            "malformed", "hunk 2 of 'x.py': more removed lines than the header counts", 10
        ),
    )


def test_garbage_hunk_counts() -> None:
    patch = parse_patch(simple_diff(body="@@ -1,-2 +1,x @@\n a\n"))

    assert patch.problems == (
        PatchProblem("malformed", "hunk 1 of 'x.py' has a malformed header", 4),
    )


def test_git_diff_with_names_but_no_hunk() -> None:
    patch = parse_patch(b"diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n")

    assert patch.problems == (
        PatchProblem("malformed", "'x.py' has '---'/'+++' lines but no hunk", 3),
    )


def test_git_header_with_nothing_under_it_is_malformed() -> None:
    # Debian's proftpd-dfsg: a NEWS hunk cut out by hand, its header left behind.
    # git refuses the whole patch ("only garbage"), GNU patch skips the header.
    patch = parse_patch(
        b"diff --git a/NEWS b/NEWS\nindex 8ff1358..679cf6c 100644\n"
        b"diff --git a/f.txt b/f.txt\nindex 1111111..2222222 100644\n"
        b"--- a/f.txt\n+++ b/f.txt\n@@ -1 +1 @@\n-a\n+b\n"
    )

    assert patch.problems == (
        PatchProblem(
            "malformed",
            "'NEWS' has a 'diff --git' header and no change under it (its hunks removed by "
            "hand?): git refuses the patch ('only garbage'), GNU patch skips the header; "
            "delete the header's lines",
            1,
        ),
    )
    assert [d.path for d in patch.files] == ["NEWS", "f.txt"]


def test_a_created_file_whose_hunk_was_cut_is_malformed() -> None:
    # Debian's exim4 and libxml2: the index line names the file's content, the hunk
    # that made it is gone. git creates the file empty, dpkg-source (patch -E) does not.
    patch = parse_patch(
        b"diff --git a/doc/new.txt b/doc/new.txt\nnew file mode 100644\n"
        b"index 000000000..68e21fff3\n"
        b"diff --git a/f.txt b/f.txt\nindex 1111111..2222222 100644\n"
        b"--- a/f.txt\n+++ b/f.txt\n@@ -1 +1 @@\n-a\n+b\n"
    )

    assert patch.problems == (
        PatchProblem(
            "malformed",
            "'doc/new.txt' is created with the content its index line names (68e21fff3), "
            "but no hunk under it (cut by hand?): git creates the file empty, GNU patch as "
            "dpkg-source runs it (-E) not at all; give it its hunk back, or delete the "
            "header's lines",
            1,
        ),
    )


@pytest.mark.parametrize(
    "section",
    [
        b"diff --git a/x b/x\nold mode 100644\nnew mode 100755\n",
        b"diff --git a/x b/x\nnew file mode 100644\nindex 0000000..e69de29\n",
        b"diff --git a/x b/x\ndeleted file mode 100644\nindex e69de29..0000000\n",
        b"diff --git a/x b/y\nsimilarity index 100%\nrename from x\nrename to y\n",
        b"diff --git a/x b/x\nindex 1111111..2222222 100644\nBinary files a/x and b/x differ\n",
    ],
)
def test_git_sections_without_hunks_that_change_something_are_fine(section: bytes) -> None:
    assert parse_patch(section).problems == ()


def test_diff_git_line_without_a_readable_name() -> None:
    patch = parse_patch(b"diff --git a/x y b/z w\nold mode 100644\nnew mode 100755\n")

    assert patch.problems == (
        PatchProblem("malformed", "cannot tell which file this diff changes", 1),
    )


def test_bad_quoting_is_malformed() -> None:
    data = b'diff --git "a/x\\q" b/x\n--- "a/x\\q"\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n'

    assert parse_patch(data).problems == (PatchProblem("malformed", "badly quoted file name", 2),)


def test_text_between_diffs_is_malformed() -> None:
    data = simple_diff() + b"some stray words\n" + simple_diff("a/y.py", "b/y.py")
    patch = parse_patch(data)

    assert patch.problems == (
        PatchProblem("malformed", "unexpected text after the last hunk of 'x.py'", 8),
    )
    assert len(patch.files) == 2
    assert format_patch(patch) == data


def test_blank_lines_between_diffs_are_fine() -> None:
    data = simple_diff() + b"\n\n" + simple_diff("a/y.py", "b/y.py") + b"\n"
    patch = parse_patch(data)

    assert patch.problems == ()
    assert [d.line for d in patch.files] == [1, 10]
    assert patch.trailer_lines == ("",)
    assert format_patch(patch) == data


def test_a_patch_of_several_commits_as_git_log_writes_it_is_fine() -> None:
    # glibc's debian/patches/any/git-*.diff: `git log -p` output, each commit's header
    # and message between the file diffs.
    commit = (
        b"commit ba70f6959876b6daba180afbe427710e4383e357\n"
        b"Author: A U Thor <a@example.org>\nDate:   Fri Sep 30 19:36:41 2022 +0000\n\n"
        b"    Fix iseqsig\n    \n    With GCC 13, types are distinct.\n\n"
    )
    data = simple_diff() + b"\n" + commit + simple_diff("a/y.py", "b/y.py")
    patch = parse_patch(data)
    assert patch.problems == ()
    assert [d.path for d in patch.files] == ["x.py", "y.py"]
    assert format_patch(patch) == data
    # A header line alone is not enough: text before it is still reported.
    stray = simple_diff() + b"stray\n" + commit + simple_diff("a/y.py", "b/y.py")
    assert [p.message for p in parse_patch(stray).problems] == [
        "unexpected text after the last hunk of 'x.py'"
    ]


def test_several_mails_and_a_submodules_diff_are_a_patchs_own_structure() -> None:
    # qemu's spelling.diff is format-patch --stdout of several commits; its v7.2.13.diff
    # is git diff --submodule=diff, a submodule's header before the files inside it.
    next_mail = (
        b"-- \n2.30.2\n\n\nFrom 4ed607f64d4a684c9ab6b25dcc9e72fd69cc51c2 Mon Sep 17 00:00:00 2001\n"
        b"From: A U Thor <a@example.org>\nSubject: [PATCH] more\n\n---\n y.py | 2 +-\n\n"
    )
    submodule = b"Submodule tests/lcitool/libvirt-ci e3eb28cf2e..319a534c22:\n"
    unsigned = next_mail.removeprefix(b"-- \n2.30.2\n\n")  # Debian's dovecot: --no-signature
    for between in (next_mail, submodule, unsigned):
        data = simple_diff() + between + simple_diff("a/y.py", "b/y.py")
        patch = parse_patch(data)
        assert patch.problems == (), between
        assert format_patch(patch) == data
    # A signature with no mail after it, between two diffs, is still stray text.
    alone = simple_diff() + b"-- \n2.30.2\n\n" + simple_diff("a/y.py", "b/y.py")
    assert len(parse_patch(alone).problems) == 1
    # A "From" line without format-patch's fixed date is a mail of any kind: stray text.
    other = next_mail.replace(b"Mon Sep 17 00:00:00 2001", b"Tue Jan 30 22:42:50 2024")
    stray = simple_diff() + other.removeprefix(b"-- \n2.30.2\n\n") + simple_diff("a/y.py", "b/y.py")
    assert len(parse_patch(stray).problems) == 1


@pytest.mark.parametrize(
    ("footer", "problems"),
    [
        (b"---\ntg: (9a079e2..) t/thread-cancel (depends on: baseline)\n", 0),
        (b"---\nsome words\n", 1),
        (b"---\n", 1),
    ],
)
def test_topgits_footer_ends_a_patch_as_a_signature_does(footer: bytes, problems: int) -> None:
    # glibc's hurd-i386/tg-*.diff end with topgit's footer; git and GNU patch skip it.
    data = simple_diff() + footer
    assert len(parse_patch(data).problems) == problems
    assert format_patch(parse_patch(data)) == data


def test_binary_patch_without_its_blank_terminator_is_truncated() -> None:
    data = b"diff --git a/b.bin b/b.bin\nGIT binary patch\nliteral 3\nKcmZQzWC8#H2LJ>B\n"
    patch = parse_patch(data)

    assert patch.problems == (PatchProblem("malformed", "binary patch of 'b.bin' is truncated", 2),)


# --- unsafe ---------------------------------------------------------------------------


def test_dotdot_path_is_unsafe() -> None:
    patch = parse_patch(simple_diff("a/../x", "b/../x"))

    assert patch.problems == (
        PatchProblem("unsafe", "path 'a/../x' has a '..' segment", 1),
        PatchProblem("unsafe", "path 'b/../x' has a '..' segment", 1),
    )
    assert patch.unsafe and not patch.malformed


def test_absolute_path_in_plus_line_is_unsafe() -> None:
    data = b"--- a/x\n+++ /etc/passwd\n@@ -1 +1 @@\n-a\n+b\n"

    assert parse_patch(data).problems == (PatchProblem("unsafe", "absolute path '/etc/passwd'", 2),)


def test_git_config_target_is_unsafe() -> None:
    patch = parse_patch(simple_diff("a/.git/config", "b/.git/config"))

    assert [(p.kind, p.message, p.line) for p in patch.problems] == [
        ("unsafe", "path 'a/.git/config' writes into .git", 1),
        ("unsafe", "path 'b/.git/config' writes into .git", 1),
    ]


def test_rename_to_parent_is_unsafe() -> None:
    data = b"diff --git a/x b/x\nsimilarity index 100%\nrename from x\nrename to ../x\n"
    assert parse_patch(data).problems == (
        PatchProblem("unsafe", "path '../x' has a '..' segment", 4),
    )


def test_copy_into_nested_git_dir_is_unsafe() -> None:
    data = b"diff --git a/x b/x\ncopy from x\ncopy to sub/.git/hooks/pre-commit\n"
    patch = parse_patch(data)

    assert patch.problems == (
        PatchProblem("unsafe", "path 'sub/.git/hooks/pre-commit' writes into .git", 3),
    )
    assert patch.files[0].is_copy


def test_path_with_nothing_after_stripping_is_unsafe() -> None:
    data = b"--- foo\n+++ foo\n@@ -1 +1 @@\n-a\n+b\n"

    assert parse_patch(data).problems == (
        PatchProblem("unsafe", "path 'foo' has nothing left after stripping 1 component", 1),
    )


def test_unsafe_index_line_is_refused() -> None:
    data = b"Index: ../etc/x\n=====\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"

    assert parse_patch(data).problems == (
        PatchProblem("unsafe", "path '../etc/x' has a '..' segment", 1),
    )


def test_strip_zero_accepts_bare_names() -> None:
    data = b"--- x.py\n+++ x.py\n@@ -1 +1 @@\n-a\n+b\n"
    patch = parse_patch(data, strip=0)

    assert patch.problems == ()
    assert patch.files[0].path == "x.py"


# --- trailers -------------------------------------------------------------------------


def plain_with_header(header: str) -> bytes:
    return header.encode() + simple_diff()


def test_trailer_keys_match_case_insensitively_and_keep_canonical_spelling() -> None:
    patch = parse_patch(plain_with_header(f"# upstream-merge: {MERGED}, {MERGED.upper()}\n"))

    assert patch.header.trailers == (Trailer("Upstream-Merge", f"{MERGED}, {MERGED.upper()}", 1),)
    assert patch.upstream_merge() == (MERGED,)


def test_upstream_merge_list_is_lowercased_in_order() -> None:
    other = "f" * 40
    patch = parse_patch(plain_with_header(f"Upstream-Merge: {other.upper()},{MERGED}\n"))

    assert patch.problems == ()
    assert patch.upstream_merge() == (other, MERGED)


def test_bad_upstream_merge_is_malformed_on_its_line() -> None:
    patch = parse_patch(plain_with_header("Fix it.\n\nUpstream-Merge: abc123\n"))

    assert patch.problems == (
        PatchProblem(
            "malformed", "Upstream-Merge must be 40-hex commits or 'none', not 'abc123'", 3
        ),
    )
    assert patch.upstream_merge() is None


def test_second_upstream_merge_is_malformed() -> None:
    patch = parse_patch(plain_with_header(f"Upstream-Merge: none\nUpstream-Merge: {MERGED}\n"))

    assert patch.problems == (
        PatchProblem("malformed", "second Upstream-Merge trailer (first on line 1)", 2),
    )


def test_empty_trailer_is_malformed() -> None:
    patch = parse_patch(plain_with_header("# Upstream-PR:\n"))

    assert patch.problems == (PatchProblem("malformed", "empty Upstream-PR trailer", 1),)


def test_no_trailer_means_no_upstream_merge() -> None:
    patch = parse_patch(simple_diff())

    assert patch.header.trailer("Upstream-Merge") is None
    assert patch.upstream_merge() is None


# --- properties -----------------------------------------------------------------------

_SEGMENT = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-.", min_size=1, max_size=8)
_PATH = st.lists(
    _SEGMENT.filter(lambda s: s not in (".", "..") and s.lower() != ".git"), min_size=1, max_size=3
).map("/".join)
_TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\n"), max_size=12)
_OP = st.tuples(st.sampled_from(" -+"), _TEXT)


@dataclass(frozen=True)
class HunkSpec:
    ops: tuple[tuple[str, str], ...]
    section: str

    @property
    def old_count(self) -> int:
        return sum(kind in " -" for kind, _ in self.ops)

    @property
    def new_count(self) -> int:
        return sum(kind in " +" for kind, _ in self.ops)


@dataclass(frozen=True)
class FileSpec:
    path: str
    git: bool
    hunks: tuple[HunkSpec, ...]


_HUNK_SPEC = st.builds(
    HunkSpec,
    ops=st.lists(_OP, min_size=1, max_size=6).map(tuple),
    section=st.sampled_from(["", " def f():", " class A:"]),
)
_FILE_SPEC = st.builds(
    FileSpec,
    path=_PATH,
    git=st.booleans(),
    hunks=st.lists(_HUNK_SPEC, min_size=1, max_size=3).map(tuple),
)
_HEADER = st.sampled_from(
    [
        "",
        "# Upstream-PR: https://example.org/pr/1\n# Upstream-Merge: none\n\n",
        f"From {SHA} Mon Sep 17 00:00:00 2001\nFrom: A <a@b.c>\nSubject: [PATCH] x\n\n"
        f"Body.\n\nUpstream-Merge: {MERGED}\n---\n x | 2 +-\n\n",
    ]
)


def render_file(spec: FileSpec) -> str:
    if spec.git:
        out = f"diff --git a/{spec.path} b/{spec.path}\nindex 1234567..89abcde 100644\n"
        out += f"--- a/{spec.path}\n+++ b/{spec.path}\n"
    else:
        stamp = "\t2024-01-02 03:04:05.000000000 +0000"
        out = f"--- pkg.orig/{spec.path}{stamp}\n+++ pkg/{spec.path}{stamp}\n"
    start = 1
    for hunk in spec.hunks:
        out += f"@@ -{start},{hunk.old_count} +{start},{hunk.new_count} @@{hunk.section}\n"
        out += "".join(kind + text + "\n" for kind, text in hunk.ops)
        start += hunk.old_count + 10
    return out


@settings(max_examples=200)
@given(
    header=_HEADER,
    files=st.lists(_FILE_SPEC, min_size=1, max_size=4),
    signature=st.booleans(),
)
def test_structured_patches_parse_back_to_their_parts(
    header: str, files: list[FileSpec], signature: bool
) -> None:
    text = header + "".join(render_file(spec) for spec in files)
    if signature:
        text += "-- \n2.39.5\n\n"
    data = text.encode("utf-8", "surrogateescape")

    patch = parse_patch(data)

    assert patch.problems == ()
    assert [d.path for d in patch.files] == [spec.path for spec in files]
    for diff, spec in zip(patch.files, files, strict=True):
        assert [h.lines for h in diff.hunks] == [
            tuple(kind + text for kind, text in h.ops) for h in spec.hunks
        ]
        assert [(h.old_count, h.new_count) for h in diff.hunks] == [
            (h.old_count, h.new_count) for h in spec.hunks
        ]
    assert format_patch(patch) == data
    assert parse_patch(format_patch(patch)) == patch


_LINES = st.lists(
    st.one_of(
        st.sampled_from(
            [
                "diff --git a/x b/x",
                "--- a/x",
                "+++ b/x",
                "@@ -1 +1 @@",
                "@@ -1,2 +1,2 @@",
                "-a",
                "+b",
                " c",
                "",
                "\\ No newline at end of file",
                "GIT binary patch",
                "literal 3",
                "new file mode 100644",
                "rename from ../x",
                "Index: x",
                "====",
                "-- ",
                f"From {SHA} Mon Sep 17 00:00:00 2001",
                "Subject: [PATCH] x",
                "Upstream-Merge: nope",
            ]
        ),
        st.text(max_size=10).filter(lambda s: "\n" not in s),
    ),
    max_size=25,
)


@settings(max_examples=300)
@given(lines=_LINES, end=st.sampled_from(["", "\n", "\r\n"]))
def test_any_line_soup_round_trips_without_raising(lines: list[str], end: str) -> None:
    data = ("\n".join(lines) + end).encode("utf-8", "surrogateescape")

    assert format_patch(parse_patch(data)) == data


@given(st.binary(max_size=300))
def test_any_bytes_round_trip_without_raising(data: bytes) -> None:
    assert format_patch(parse_patch(data)) == data


# --- the bulk readings agree with the line-by-line ones -------------------------------


def line_by_line(data: bytes, monkeypatch: pytest.MonkeyPatch) -> PatchFile:
    """The parse with every hunk body read line by line (no bulk reading)."""
    with monkeypatch.context() as patched:
        patched.setattr(patch_parser._Parser, "body_length", lambda *args: None)
        return parse_patch(data)


_SOUP_WITH_HUNKS = st.lists(
    st.one_of(
        st.sampled_from(
            ["@@ -1,3 +1,2 @@", "@@ -0,0 +1 @@", "@@ -2 +2,3 @@", "diff --git a/x b/x"]
        ),
        st.tuples(st.sampled_from([" ", "-", "+", "\\", "", "\r", "x", "@"]), _TEXT).map("".join),
    ),
    max_size=30,
)


@settings(max_examples=400, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.one_of(_LINES, _SOUP_WITH_HUNKS), end=st.sampled_from(["", "\n", "\r\n"]))
def test_hunk_bodies_read_in_bulk_parse_as_read_line_by_line(
    monkeypatch: pytest.MonkeyPatch, lines: list[str], end: str
) -> None:
    data = ("\n".join(lines) + end).encode("utf-8", "surrogateescape")

    assert parse_patch(data) == line_by_line(data, monkeypatch)


@settings(max_examples=100, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(header=_HEADER, files=st.lists(_FILE_SPEC, min_size=1, max_size=4))
def test_well_formed_patches_parse_in_bulk_as_line_by_line(
    monkeypatch: pytest.MonkeyPatch, header: str, files: list[FileSpec]
) -> None:
    data = (header + "".join(render_file(spec) for spec in files)).encode()

    assert parse_patch(data) == line_by_line(data, monkeypatch)


@given(st.binary(max_size=200))
def test_a_file_decoded_at_once_gives_each_line_as_decoded_alone(data: bytes) -> None:
    lines, newline_at_eof = split_lines(data)

    alone = [line.decode("utf-8", "surrogateescape") for line in data.split(b"\n")]
    assert newline_at_eof == data.endswith(b"\n") or data == b""
    assert lines == (alone[:-1] if alone[-1] == "" else alone)


# --- diff_outline ------------------------------------------------------------------------


def outline_of_parse(data: bytes) -> list[tuple[int, set[str]]]:
    return [
        (diff.line, {p for p in (diff.old_path, diff.new_path) if p is not None})
        for diff in parse_patch(data).files
    ]


@settings(max_examples=150)
@given(
    header=_HEADER,
    files=st.lists(_FILE_SPEC.map(lambda spec: replace(spec, git=True)), min_size=1, max_size=5),
)
def test_outline_of_a_git_patch_is_its_parse(header: str, files: list[FileSpec]) -> None:
    data = (header + "".join(render_file(spec) for spec in files)).encode()

    outline = diff_outline(data)

    assert outline is not None
    assert [(line, set(touched)) for line, touched in outline] == outline_of_parse(data)


def test_outline_names_both_sides_of_a_rename() -> None:
    data = (
        b"Subject: move\n\ndiff --git a/old/x.c b/new/y.c\nsimilarity index 90%\n"
        b"rename from old/x.c\nrename to new/y.c\n--- a/old/x.c\n+++ b/new/y.c\n"
        b"@@ -1 +1 @@\n-a\n+b\n"
    )

    assert diff_outline(data) == ((3, ("new/y.c", "old/x.c")),)
    assert outline_of_parse(data) == [(3, {"new/y.c", "old/x.c"})]


def test_outline_gives_up_on_quoted_names_and_sees_no_plain_diff() -> None:
    quoted = (
        b'diff --git "a/sp ace" "b/sp ace"\n--- "a/sp ace"\n+++ "b/sp ace"\n@@ -1 +1 @@\n-a\n+b\n'
    )
    plain = b"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"

    assert diff_outline(quoted) is None
    assert diff_outline(plain) == ()
    assert len(parse_patch(plain).files) == 1  # the parse sees it: a caller must compare


@settings(max_examples=300)
@given(lines=st.one_of(_LINES, _SOUP_WITH_HUNKS), end=st.sampled_from(["", "\n", "\r\n"]))
def test_the_header_alone_is_the_header_of_the_whole_parse(lines: list[str], end: str) -> None:
    data = ("\n".join(lines) + end).encode("utf-8", "surrogateescape")

    assert parse_header(data) == parse_patch(data).header


@settings(max_examples=100)
@given(header=_HEADER, files=st.lists(_FILE_SPEC, min_size=1, max_size=4))
def test_the_header_of_a_structured_patch_alone_is_its_parse_header(
    header: str, files: list[FileSpec]
) -> None:
    data = (header + "".join(render_file(spec) for spec in files)).encode()

    assert parse_header(data) == parse_patch(data).header


@settings(max_examples=300)
@given(
    st.text(alphabet="ab/. -:+0123456789T", max_size=40).filter(
        lambda text: not text.startswith('"')
    )
)
def test_a_name_field_without_a_space_has_no_timestamp_to_drop(field_text: str) -> None:
    # name_field skips the timestamp pattern for a field without a space or tab.
    assert name_field(field_text) == patch_text._TIMESTAMP.sub("", field_text)


@settings(max_examples=300)
@given(st.lists(st.text(alphabet=" +-\\@\rd", max_size=3), max_size=12))
def test_each_line_kind_is_its_first_character_and_empty_lines_are_context(
    lines: list[str],
) -> None:
    # An empty line, or a lone CR (an empty line of a CR LF file), is a context line.
    expected = "".join((" " if line in ("", "\r") else line[0]) for line in lines)
    assert patch_parser._Parser(lines, 1).kinds() == expected


# A diff --git file diff whose ---/+++ line names another file, with no rename line
# (found in Debian's grub2: 'diff --git a/util/mkimage.c b/util/mkimage.c' over
# '--- a/util/mkimage'): git reads a rename, GNU patch patches whichever name exists.
HAND_EDITED_NAME = (
    b"diff --git a/util/mkimage.c b/util/mkimage.c\n"
    b"index a26cf76..58c199f 100644\n"
    b"--- a/util/mkimage\t2022-12-11 15:41:56.717934782 +0000\n"
    b"+++ b/util/mkimage.c\t2022-12-11 15:43:05.318432532 +0000\n"
    b"@@ -1,3 +1,3 @@\n a\n-b\n+c\n d\n"
)


def test_a_minus_name_the_diff_git_line_does_not_name_is_malformed() -> None:
    patch = parse_patch(HAND_EDITED_NAME)
    assert [(p.kind, p.line) for p in patch.problems] == [("malformed", 1)]
    message = patch.problems[0].message
    assert message.startswith("'util/mkimage.c': its '--- a/util/mkimage")
    assert "(a/util/mkimage.c)" in message and "make the names agree" in message


def test_a_plus_name_the_diff_git_line_does_not_name_is_malformed() -> None:
    data = HAND_EDITED_NAME.replace(b"--- a/util/mkimage\t", b"--- a/util/mkimage.c\t")
    data = data.replace(b"+++ b/util/mkimage.c", b"+++ b/util/other.c")
    patch = parse_patch(data)
    assert [p.kind for p in patch.problems] == ["malformed"]
    assert "'+++ b/util/other.c' line" in patch.problems[0].message


@pytest.mark.parametrize(
    "data",
    [
        HAND_EDITED_NAME.replace(b"--- a/util/mkimage\t", b"--- a/util/mkimage.c\t"),
        # a rename states the move: its ---/+++ names are the two sides
        b"diff --git a/old.c b/new.c\nsimilarity index 90%\nrename from old.c\n"
        b"rename to new.c\n--- a/old.c\n+++ b/new.c\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n d\n",
        b"diff --git a/new.c b/new.c\nnew file mode 100644\n--- /dev/null\n+++ b/new.c\n"
        b"@@ -0,0 +1 @@\n+x\n",
        b"diff --git a/gone.c b/gone.c\ndeleted file mode 100644\n--- a/gone.c\n+++ /dev/null\n"
        b"@@ -1 +0,0 @@\n-x\n",
        # another prefix on each line (diff.mnemonicPrefix), the same file once stripped
        b"diff --git i/x.c w/x.c\n--- i/x.c\n+++ w/x.c\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n d\n",
    ],
)
def test_names_that_agree_are_not_a_problem(data: bytes) -> None:
    assert parse_patch(data).problems == ()


def test_a_name_with_a_space_and_no_tab_is_malformed() -> None:
    # Debian's python3.11 frame_dealloc-crash.diff: git reads the name whole, GNU patch
    # (so quilt and dpkg-source) up to the space, and creates 'Misc/NEWS.d/next/Core'.
    name = b"Misc/NEWS.d/next/Core and Builtins/x.rst"
    patch = parse_patch(b"--- a/" + name + b"\n+++ b/" + name + b"\n@@ -0,0 +1 @@\n+x\n")

    assert [p.message for p in patch.problems] == [
        f"'a/{name.decode()}': a name with a space and no tab after it: git reads it whole, "
        "GNU patch (so quilt and dpkg-source) only up to the space ('a/Misc/NEWS.d/next/"
        "Core'); end the name with a tab, or quote it"
    ]
    tabbed = parse_patch(
        b"--- a/a b.txt\t2020-01-01\n+++ b/a b.txt\t2020-01-01\n@@ -1 +1 @@\n-a\n+b\n"
    )
    assert tabbed.problems == ()
