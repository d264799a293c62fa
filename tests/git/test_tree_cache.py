"""The tree cache: a base tree's index (and its size listing) read once, then reused.

verify keeps the index ``git read-tree`` wrote for its base, and the side by side
planner's ``git ls-tree -l`` listing, in ``FORKTOOL_CACHE_DIR`` (each test has its
own: tests/conftest.py); a later run starts from them and answers the same. An entry
that is damaged, or that nobody should trust, is not used; an entry holding another
tree cannot make a run pass; ``FORKTOOL_CACHE_DIR=`` turns the cache off.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from testing.apply_support import series_fork

from forktool.builder import RepoBuilder
from forktool.cache_files import Store, cache_root
from forktool.git.tree_cache import INDEX, KEPT, SIZES, TreeCache


def entries() -> list[Path]:
    root = cache_root()
    assert root is not None
    return sorted(root.glob("*/*")) if root.is_dir() else []


def read_trees(seen: list[list[str]]) -> list[list[str]]:
    return [args for args in seen if args[:1] == ["read-tree"]]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_second_verify_starts_from_the_kept_index_and_answers_the_same(
    builder: RepoBuilder, commands: list[list[str]], jobs: str
) -> None:
    fork = series_fork(builder, 18)
    pin = fork.repo.rev(fork.pin)
    first = fork.cli("verify", "--jobs", jobs, "--format", "json")
    assert first.code == 0, first.err
    kept = {p.name for p in entries()}
    assert pin + INDEX in kept
    if jobs == "2":  # the planner's weights too
        assert pin + SIZES in kept
    assert read_trees(commands) == [["read-tree", pin]]

    commands.clear()
    second = fork.cli("verify", "--jobs", jobs, "--format", "json")
    assert second.code == 0, second.err
    assert second.out == first.out
    assert read_trees(commands) == []
    assert not [args for args in commands if args[:1] == ["ls-tree"]]


def test_a_failing_series_answers_the_same_from_the_cache(
    builder: RepoBuilder, commands: list[list[str]]
) -> None:
    fork = series_fork(builder, 3)
    patches = dict(fork.patches)
    patches["0004.patch"] = patches["0001.patch"]  # applied twice: it fails
    fork.write(patches)
    first = fork.cli("verify", "--format", "json")
    commands.clear()
    second = fork.cli("verify", "--format", "json")
    assert first.code == second.code == 1
    assert second.out == first.out
    assert read_trees(commands) == []


def test_a_damaged_entry_is_read_again(builder: RepoBuilder, commands: list[list[str]]) -> None:
    fork = series_fork(builder, 3)
    pin = fork.repo.rev(fork.pin)
    assert fork.cli("verify").code == 0
    (entry,) = [p for p in entries() if p.name == pin + INDEX]
    entry.write_bytes(b"not an index")
    commands.clear()
    again = fork.cli("verify", "--format", "json")
    assert again.code == 0, again.err
    assert read_trees(commands) == [["read-tree", pin]]
    assert entry.read_bytes()[:4] == b"DIRC"  # kept afresh


def test_an_entry_holding_another_tree_cannot_make_a_run_pass(builder: RepoBuilder) -> None:
    fork = series_fork(builder, 3)
    pin = fork.repo.rev(fork.pin)
    assert fork.cli("verify").code == 0
    (entry,) = [p for p in entries() if p.name == pin + INDEX]
    other = builder.commit("upstream: one more file\n", {"extra.txt": "x\n"})
    index = builder.path.parent / "other-index"
    builder.git.run(
        ["read-tree", other], purpose="an index of another tree", env={"GIT_INDEX_FILE": str(index)}
    )
    entry.write_bytes(index.read_bytes())
    result = fork.cli("verify", "--format", "json")
    assert result.code == 1
    assert result.json()["round_trip"] is False


def test_an_entry_others_can_write_is_not_used(
    builder: RepoBuilder, commands: list[list[str]]
) -> None:
    fork = series_fork(builder, 3)
    assert fork.cli("verify").code == 0
    (folder,) = {p.parent for p in entries() if p.name.endswith(INDEX)}  # not config/
    folder.chmod(0o777)
    commands.clear()
    assert fork.cli("verify").code == 0
    assert len(read_trees(commands)) == 1


def test_an_empty_cache_dir_setting_turns_it_off(
    builder: RepoBuilder, commands: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    fork = series_fork(builder, 3)
    root = cache_root()
    monkeypatch.setenv("FORKTOOL_CACHE_DIR", "relative/cache")  # would land in the fork
    assert cache_root() is None
    monkeypatch.setenv("FORKTOOL_CACHE_DIR", "")
    assert cache_root() is None
    assert fork.cli("verify").code == 0
    assert fork.cli("verify").code == 0
    assert len(read_trees(commands)) == 2
    assert root is not None and not root.exists()


def test_the_default_place_is_the_user_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FORKTOOL_CACHE_DIR")
    monkeypatch.setenv("HOME", "/home/someone")
    monkeypatch.setenv("XDG_CACHE_HOME", "/var/cache/someone")
    assert cache_root() == Path("/var/cache/someone/forktool")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/is/ignored")
    assert cache_root() == Path("/home/someone/.cache/forktool")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.delenv("HOME")
    assert cache_root() is None


def test_each_repository_and_git_binary_has_its_own_entries(tmp_path: Path) -> None:
    one = TreeCache(tmp_path, Path("/repo/one/.git/objects"), "git-a")
    assert one.dir == TreeCache(tmp_path, Path("/repo/one/.git/objects"), "git-a").dir
    assert one.dir != TreeCache(tmp_path, Path("/repo/two/.git/objects"), "git-a").dir
    assert one.dir != TreeCache(tmp_path, Path("/repo/one/.git/objects"), "git-b").dir


def test_an_index_whose_checksum_fails_is_not_kept(builder: RepoBuilder, tmp_path: Path) -> None:
    commit = builder.commit("a\n", {"a.txt": "a\n"})
    index = tmp_path / "index"
    builder.git.run(["read-tree", commit], purpose="an index", env={"GIT_INDEX_FILE": str(index)})
    cache = TreeCache(tmp_path / "cache", tmp_path / "objects", "git")
    damaged = bytearray(index.read_bytes())
    damaged[20] ^= 1
    (tmp_path / "damaged").write_bytes(bytes(damaged))
    cache.keep_index(commit, tmp_path / "damaged")
    assert not cache.index(commit, tmp_path / "copy")
    cache.keep_index(commit, index)
    assert cache.index(commit, tmp_path / "copy")
    assert (tmp_path / "copy").read_bytes() == index.read_bytes()


def test_only_the_most_recently_used_entries_stay_and_no_leftover(tmp_path: Path) -> None:
    cache = TreeCache(tmp_path / "cache", tmp_path / "objects", "git")
    names = [f"{n:040x}" for n in range(KEPT + 3)]
    for n, name in enumerate(names):
        cache.keep_sizes(name, f"listing {n}")
        os.utime(cache.dir / (name + SIZES), ns=(n * 10**9, n * 10**9))
    killed = cache.dir / ".tmp-k1lled_r"  # as mkstemp names a file
    killed.write_bytes(b"half an index")
    os.utime(killed, ns=(0, 0))
    cache.keep_sizes(names[0], "listing 0")  # used again: the newest now
    assert not killed.exists()
    left = sorted(p.name for p in cache.dir.iterdir())
    assert len(left) == KEPT
    assert names[0] + SIZES in left
    assert names[1] + SIZES not in left
    assert cache.sizes(names[-1]) == f"listing {KEPT + 2}"


def test_the_prune_removes_only_names_forktool_gives(tmp_path: Path) -> None:
    """FORKTOOL_CACHE_DIR may be a directory other programs use too (~/.cache): their
    ``*.index`` files and old ``.tmp-*`` drafts stay, whatever the folder."""
    root = tmp_path / "shared"
    other, notes = root / "otherapp", root / "notes"
    for folder in (root, other, notes):
        folder.mkdir(mode=0o700)
    foreign = [other / f"db{n}.index" for n in range(KEPT + 4)]
    foreign += [notes / ".tmp-draft", notes / ".tmp-abcdefgh", notes / "photo.sizes"]
    for path in foreign:
        path.write_text("theirs\n")
        os.utime(path, ns=(0, 0))
    cache = TreeCache(root, tmp_path / "objects", "git")
    for n in range(KEPT + 2):
        cache.keep_sizes(f"{n:040x}", f"listing {n}")
    assert all(path.read_text() == "theirs\n" for path in foreign)
    assert len(list(cache.dir.iterdir())) == KEPT


def test_a_fifo_planted_as_an_entry_is_not_read_and_does_not_hang(
    builder: RepoBuilder, commands: list[list[str]]
) -> None:
    fork = series_fork(builder, 3)
    pin = fork.repo.rev(fork.pin)
    assert fork.cli("verify").code == 0
    (entry,) = [p for p in entries() if p.name == pin + INDEX]
    entry.unlink()
    os.mkfifo(entry, 0o600)
    got: list[bytes | None] = []
    store = Store(entry.parent.parent, entry.parent.name)
    reader = threading.Thread(target=lambda: got.append(store.read(entry.name)), daemon=True)
    reader.start()
    reader.join(10)  # a blocking open would never return: fail here, not hang the suite
    assert not reader.is_alive() and got == [None]
    commands.clear()
    assert fork.cli("verify").code == 0
    assert read_trees(commands) == [["read-tree", pin]]


def test_a_repository_with_replace_refs_keeps_no_index(
    builder: RepoBuilder, commands: list[list[str]]
) -> None:
    """``git replace`` gives the pinned commit another tree: the id no longer pins down
    what git reads, so verify answers from git, as without a cache."""
    fork = series_fork(builder, 3)
    pin = fork.repo.rev(fork.pin)
    assert fork.cli("verify").code == 0
    tree = builder.git.out(["rev-parse", f"{pin}^{{tree}}"], purpose="the pin's tree").strip()
    extra = (
        builder.git.run(["hash-object", "-w", "--stdin"], purpose="a blob", input=b"x\n")
        .stdout.decode()
        .strip()
    )
    listing = builder.git.run(["ls-tree", tree], purpose="the tree").stdout
    listing += f"100644 blob {extra}\tEXTRA\n".encode()
    other = builder.git.run(["mktree"], purpose="a tree", input=listing).stdout.decode().strip()
    who = {"GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL": "a@example.org"}
    who |= {"GIT_COMMITTER_NAME": "A", "GIT_COMMITTER_EMAIL": "a@example.org"}
    replacement = (
        builder.git.run(
            ["commit-tree", other, "-m", "replacement"], purpose="a replacement", env=who
        )
        .stdout.decode()
        .strip()
    )
    builder.git.run(["replace", pin, replacement], purpose="replace the pin")
    commands.clear()
    result = fork.cli("verify", "--format", "json")
    assert read_trees(commands) == [["read-tree", pin]]
    assert result.code == 0, result.out  # the series applies on the replaced tree too
    assert result.json()["round_trip"] is True


def test_a_kept_size_listing_that_is_not_numbers_gives_no_size() -> None:
    """A damaged ``.sizes`` entry (a Unicode digit, thousands of digits) is read as no
    size for that path, never a traceback: the planner then weighs it as unknown."""
    from forktool.git.objects import blob_sizes

    good = "100644 blob 0123456789abcdef0123456789abcdef01234567      12\ta.txt"
    odd = "100644 blob 0123456789abcdef0123456789abcdef01234567       \u00b2\tb.txt"
    huge = "100644 blob 0123456789abcdef0123456789abcdef01234567 " + "9" * 5000 + "\tc.txt"
    assert blob_sizes("\0".join([good, odd, huge])) == {"a.txt": 12}
