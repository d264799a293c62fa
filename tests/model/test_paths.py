"""The one decision on whether a path named in a patch may be written."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forktool.model import paths
from forktool.model.paths import (
    check_patch_path,
    check_relative_path,
    is_dev_null,
    strip_components,
)


@pytest.mark.parametrize(
    ("path", "strip", "expected"),
    [
        ("a/src/x.py", 1, "src/x.py"),
        ("b/x", 1, "x"),
        ("pkg.orig/src/x.c", 1, "src/x.c"),
        ("pkg-1.2/src/x.c", 1, "src/x.c"),
        ("a//src//x.py", 1, "src/x.py"),
        ("a/b/c", 2, "c"),
        ("src/x.py", 0, "src/x.py"),
        ("a/", 1, None),
        ("foo", 1, None),
        ("a/b", 2, None),
        ("", 0, None),
    ],
)
def test_strip_components_works_like_patch_p(path: str, strip: int, expected: str | None) -> None:
    assert strip_components(path, strip) == expected


def test_strip_components_refuses_a_negative_count() -> None:
    with pytest.raises(ValueError, match="strip must be >= 0"):
        strip_components("a/x", -1)


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("/etc/passwd", "absolute path '/etc/passwd'"),
        ("../x", "path '../x' has a '..' segment"),
        ("a/../../etc/passwd", "path 'a/../../etc/passwd' has a '..' segment"),
        ("a/src/..", "path 'a/src/..' has a '..' segment"),
        ("a/..\\..\\x", "path 'a/..\\..\\x' has a '..' segment"),
        ("a\\..\\x", "path 'a\\..\\x' has a '..' segment"),
        ("a/.git/config", "path 'a/.git/config' writes into .git"),
        ("b/sub/.git/hooks/pre-commit", "path 'b/sub/.git/hooks/pre-commit' writes into .git"),
        ("b/.GIT/config", "path 'b/.GIT/config' writes into .git"),
        (".git/config", "path '.git/config' writes into .git"),
        ("a/x\0y", "path contains a NUL byte"),
        ("a/", "path 'a/' has nothing left after stripping 1 component"),
        ("foo", "path 'foo' has nothing left after stripping 1 component"),
        ("", "empty path"),
    ],
)
def test_check_patch_path_refuses(raw: str, reason: str) -> None:
    assert check_patch_path(raw) == reason


def test_check_patch_path_names_the_strip_count() -> None:
    assert check_patch_path("a/b", 2) == "path 'a/b' has nothing left after stripping 2 components"


@pytest.mark.parametrize(
    "raw",
    [
        "/dev/null",
        "a/src/x.py",
        "b/src/x.py",
        "pkg.orig/src/x.c",
        "pkg/src/x.c",
        "a/docs/..rst",
        "a/.github/workflows/ci.yml",
        "a/.gitignore",
        "a/src/back\\slash.txt",
        "a/sp ace/x.txt",
        "a/./x",
    ],
)
def test_check_patch_path_allows(raw: str) -> None:
    assert check_patch_path(raw) is None


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("../x", "path '../x' has a '..' segment"),
        ("/abs", "absolute path '/abs'"),
        (".git/hooks/post-checkout", "path '.git/hooks/post-checkout' writes into .git"),
        ("x\0", "path contains a NUL byte"),
        ("", "empty path"),
    ],
)
def test_check_relative_path_refuses(path: str, reason: str) -> None:
    assert check_relative_path(path) == reason


@pytest.mark.parametrize("path", ["x", "src/x.py", "0001-fix.patch", "a/b/c"])
def test_check_relative_path_allows_names_without_a_prefix(path: str) -> None:
    assert check_relative_path(path) is None


@pytest.mark.parametrize(
    ("raw", "expected"), [("/dev/null", True), ("a/dev/null", False), ("/dev/nullx", False)]
)
def test_is_dev_null(raw: str, expected: bool) -> None:
    assert is_dev_null(raw) is expected


# check_relative_path answers most paths with one regex (_PLAIN_PATH): whatever that
# regex lets through, the checks one by one must let through too.
@settings(max_examples=500)
@given(st.from_regex(paths._PLAIN_PATH, fullmatch=True))
def test_a_path_passed_at_a_glance_passes_every_check(path: str) -> None:
    assert paths._path_problem(path) is None


@pytest.mark.parametrize(
    "path",
    [".git/config", "a/.GIT/hooks", "..", "a/../b", "a\\..\\b", "/etc/passwd", "a//b", "", ".x"],
)
def test_no_unsafe_or_unusual_path_is_passed_at_a_glance(path: str) -> None:
    assert paths._PLAIN_PATH.fullmatch(path) is None


@settings(max_examples=500)
@given(st.text(alphabet="agit/.\\-_+ \0GIT", max_size=12))
def test_check_relative_path_is_the_checks_one_by_one(path: str) -> None:
    assert paths.check_relative_path(path) == paths._path_problem(path)
