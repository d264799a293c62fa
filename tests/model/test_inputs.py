"""Reading the user's files (forktool/inputs.py) and the CLI's handling of I/O errors."""

from __future__ import annotations

import errno
import os
from pathlib import Path, PurePosixPath

import pytest
from hypothesis import given
from hypothesis import strategies as st
from testing.helpers import run_cli

from forktool import fork as fork_module
from forktool import inputs
from forktool.builder import RepoBuilder
from forktool.escape import terminal as one_line
from forktool.inputs import UnreadableInput, parse_json, read_input, read_text


def test_read_input_returns_a_regular_files_bytes(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"a\nb\n")
    assert read_input(tmp_path / "f", "f") == b"a\nb\n"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p.mkdir(), "x: is a directory"),
        (lambda p: os.mkfifo(p), "x: is not a regular file"),
        (lambda p: None, "x: no such file or directory"),
    ],
    ids=["directory", "fifo", "missing"],
)
def test_read_input_names_what_the_path_is(tmp_path: Path, make: object, message: str) -> None:
    path = tmp_path / "x"
    make(path)  # type: ignore[operator]
    with pytest.raises(UnreadableInput) as caught:
        read_input(path, "x")
    assert caught.value.message == message


def test_a_symlink_is_refused_among_the_forks_files_and_followed_elsewhere(tmp_path: Path) -> None:
    (tmp_path / "real").write_bytes(b"data")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert read_input(tmp_path / "link", "link") == b"data"
    with pytest.raises(UnreadableInput) as caught:
        read_input(tmp_path / "link", "link", follow=False)
    assert caught.value.message.startswith("link: is a symlink")


def test_a_folders_way_is_walked_once_for_the_reads_that_share_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``ways`` (a fork load's), a folder's way into the fork is checked on the
    first read through it; later reads take that answer, a refusal included."""
    fork = tmp_path / "fork"
    (fork / "patches").mkdir(parents=True)
    for n in range(3):
        (fork / "patches" / f"{n}.patch").write_bytes(b"p%d" % n)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "0.patch").write_bytes(b"outside")
    (fork / "linked").symlink_to(tmp_path / "elsewhere")
    walked: list[str] = []
    walk = inputs.linked_directory

    def counting(root: Path, rel: str, *, itself: bool = False) -> str | None:
        walked.append(rel)
        return walk(root, rel, itself=itself)

    monkeypatch.setattr(inputs, "linked_directory", counting)
    ways: inputs.Ways = {}
    for n in range(3):
        rel = f"patches/{n}.patch"
        assert read_input(fork / rel, rel, follow=False, ways=ways) == b"p%d" % n
    assert walked == ["patches/0.patch"]
    for _ in range(2):
        with pytest.raises(UnreadableInput) as caught:
            read_input(fork / "linked/0.patch", "linked/0.patch", follow=False, ways=ways)
        assert "'linked' is a symlinked directory" in caught.value.message
    assert walked == ["patches/0.patch", "linked/0.patch"]
    assert read_input(fork / "patches/1.patch", "patches/1.patch", follow=False) == b"p1"
    assert len(walked) == 3  # without ways, every read walks its way


def test_read_input_refuses_a_file_over_the_limit(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"x" * 11)
    with pytest.raises(UnreadableInput) as caught:
        read_input(tmp_path / "f", "f", limit=10)
    assert caught.value.message == "f: 11 bytes is larger than 10 bytes"


@given(st.binary(max_size=300_000), st.integers(min_value=0, max_value=300_000))
def test_a_file_is_read_whole_whatever_length_it_had_when_opened(data: bytes, seen: int) -> None:
    """A file is read to its end even when it is longer than when it was opened (it
    grew meanwhile: ``seen`` is the length the read starts from), in one read or in
    several."""
    import tempfile

    with tempfile.TemporaryFile() as handle:
        handle.write(data)
        handle.flush()
        handle.seek(0)
        assert inputs._read_all(handle.fileno(), min(seen, len(data)), "p", None) == data


def test_a_file_that_grew_past_the_limit_while_read_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "p.patch"
    path.write_bytes(b"x" * 200_000)
    fd = os.open(path, os.O_RDONLY)
    try:
        with pytest.raises(UnreadableInput) as caught:
            inputs._read_all(fd, 10, "p.patch", 100_000)  # opened when it held 10 bytes
        assert caught.value.message == "p.patch: grew past 100000 bytes while it was read"
    finally:
        os.close(fd)


def test_read_text_names_the_line_of_a_bad_byte(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"ok\ncaf\xe9\n")
    with pytest.raises(UnreadableInput) as caught:
        read_text(tmp_path / "f", "f")
    assert caught.value.message == "f:2: not valid UTF-8 (byte 6)"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"[" * 100_000 + b"]" * 100_000, "r.json: not valid JSON: nested too deeply"),
        (b"{", "r.json: not valid JSON: Expecting property name enclosed in double quotes"),
        (b'"\xff"', "r.json: not valid JSON: 'utf-8' codec can't decode byte 0xff"),
    ],
    ids=["nested", "truncated", "not-utf8"],
)
def test_parse_json_refuses_garbage_with_one_message(data: bytes, message: str) -> None:
    with pytest.raises(UnreadableInput) as caught:
        parse_json(data, "r.json")
    assert caught.value.message.startswith(message)


def test_one_line_escapes_line_breaks_and_controls() -> None:
    assert (
        one_line("tag 'v1\nerror: x'\r\x1b[31m\u2028") == "tag 'v1\\nerror: x'\\r\\x1b[31m\\u2028"
    )
    assert one_line("plain text, ünïcode") == "plain text, ünïcode"


def test_an_os_error_on_a_forks_file_is_exit_2_naming_it(
    example_fork: RepoBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = example_fork.path
    error = PermissionError(errno.EACCES, "Permission denied", str(root / "series"))
    monkeypatch.setattr(fork_module, "parse_series", _raiser(error))
    result = run_cli("-C", root, "status")
    assert result.code == 2
    assert result.error_lines == ["error: series: permission denied"]
    assert result.out == ""


def test_an_os_error_outside_the_users_files_keeps_its_traceback(
    example_fork: RepoBuilder,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "scratch"
    error = PermissionError(errno.EACCES, "Permission denied", str(elsewhere))
    monkeypatch.setattr(fork_module, "parse_series", _raiser(error))
    with pytest.raises(PermissionError):
        run_cli("-C", example_fork.path, "status")


def test_an_unexpected_errno_on_a_forks_file_keeps_its_traceback(
    example_fork: RepoBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    error = OSError(errno.EBADF, "Bad file descriptor", str(example_fork.path / "series"))
    monkeypatch.setattr(fork_module, "parse_series", _raiser(error))
    with pytest.raises(OSError, match="Bad file descriptor"):
        run_cli("-C", example_fork.path, "status")


def test_a_decode_error_that_is_not_a_users_file_keeps_its_traceback(
    example_fork: RepoBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    error = UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")
    monkeypatch.setattr(fork_module, "parse_series", _raiser(error))
    with pytest.raises(UnicodeDecodeError):
        run_cli("-C", example_fork.path, "status")


def _raiser(error: Exception) -> object:
    def raise_it(*args: object, **kwargs: object) -> None:
        raise error

    return raise_it


_COMPONENT = st.sampled_from(["a", "b", ".", "..", "...", ".b", "patches", "x.patch", ""])


@given(
    base=st.lists(_COMPONENT.filter(bool), max_size=4),
    shown=st.lists(_COMPONENT, min_size=1, max_size=4).map("/".join),
    absolute=st.booleans(),
)
def test_fork_root_read_as_text_is_the_root_read_by_parts(
    base: list[str], shown: str, absolute: bool
) -> None:
    """The text fast path of _fork_root gives the parts rule's answer (security: it
    decides where the symlinked-directory check starts)."""
    path = Path(("/" if absolute else "") + "/".join([*base, shown]))
    parts = PurePosixPath(shown).parts
    expected = None
    if parts and ".." not in parts and not PurePosixPath(shown).is_absolute():
        if path.parts[-len(parts) :] == parts:
            expected = Path(*path.parts[: -len(parts)])

    assert inputs._fork_root(path, shown) == expected
