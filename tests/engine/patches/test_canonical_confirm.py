"""The fast confirmation that a series is canonical agrees with the definition."""

from __future__ import annotations

from collections.abc import Sequence

from testing.helpers import make_patch, mini_fork, run_cli, snapshot_tree

from forktool.builder import RepoBuilder
from forktool.config import load_config
from forktool.engine.patches.canonical import Chain, build_chain, chain_bytes
from forktool.engine.patches.canonical_confirm import regenerate_if_canonical
from forktool.fork import Patch, load_fork
from forktool.git import Git

P2 = "0002-engine-retry-on-timeout.patch"


def _definition(root_git: Git, base_commit: str, patches: Sequence[Patch]) -> list[bytes]:
    """The canonical bytes by the definition: one commit per patch, then format-patch."""
    with root_git.temp_index() as index:
        chain = build_chain(index, base_commit, patches, base_name="pin")
        assert chain.complete
        return chain_bytes(index, Chain(chain.base, chain.links))


def test_fast_path_confirms_the_example_series_with_the_definitions_bytes(
    example_fork: RepoBuilder,
) -> None:
    fork = load_fork(load_config(example_fork.path / "forktool.yaml"))
    git = Git(example_fork.path)
    pin = git.require_commit(fork.config.pin_tag)
    before = snapshot_tree(example_fork.path)
    refs = git.out(["for-each-ref"], purpose="list refs")
    fast = regenerate_if_canonical(git, pin, fork.patches)
    assert fast == [p.data for p in fork.patches]
    assert fast == _definition(git, pin, fork.patches)
    assert snapshot_tree(example_fork.path) == before
    assert git.out(["for-each-ref"], purpose="list refs") == refs


def test_fast_path_handles_patches_that_change_the_same_file_twice(builder: RepoBuilder) -> None:
    fork = mini_fork(builder, {"a.txt": "".join(f"line {i}\n" for i in range(40))})
    first = {"a.txt": "".join(f"line {i}\n" if i != 5 else "five\n" for i in range(40))}
    second = {"a.txt": first["a.txt"].replace("line 30\n", "thirty\n"), "b.txt": "new\n"}
    p1 = make_patch(builder, "v1", first, "change five")
    builder.git.run(["checkout", "-q", "--detach", "v1"], purpose="detach")
    builder.commit("change five\n", first)
    base2 = builder.rev("HEAD")
    builder.git.run(["checkout", "-q", "-f", "main"], purpose="back")
    p2 = make_patch(builder, base2, second, "change thirty")
    fork.write({"0001-five.patch": p1, "0002-thirty.patch": p2})
    loaded = load_fork(load_config(fork.root / "forktool.yaml"))
    git = Git(fork.root)
    pin = builder.rev("v1")
    fast = regenerate_if_canonical(git, pin, loaded.patches)
    assert fast == [p1, p2]
    assert fast == _definition(git, pin, loaded.patches)


def test_fast_path_declines_a_patch_whose_bytes_are_not_canonical(
    example_fork: RepoBuilder,
) -> None:
    path = example_fork.path / "patches" / P2
    path.write_bytes(path.read_bytes().replace(b"\nSubject: ", b"\nSubject:  ", 1))
    fork = load_fork(load_config(example_fork.path / "forktool.yaml"))
    git = Git(example_fork.path)
    assert regenerate_if_canonical(git, git.require_commit("v1.1.0"), fork.patches) is None
    result = run_cli("-C", example_fork.path, "fmt", "--check", "--format", "json")
    assert result.code == 1
    patches = result.json()["patches"]
    assert isinstance(patches, list)
    statuses = {p["patch"]: p["status"] for p in patches}
    assert statuses[P2] != "canonical"
    assert [s for name, s in statuses.items() if name != P2] == ["canonical"] * 3


def test_fast_path_declines_a_patch_that_claims_the_wrong_post_image_blob(
    example_fork: RepoBuilder,
) -> None:
    git = Git(example_fork.path)
    path = example_fork.path / "patches" / P2
    data = path.read_bytes()
    start = data.index(b"\nindex ") + len(b"\nindex ")
    old, rest = data[start:].split(b"..", 1)
    # A blob that exists (the pre-image) but is not what the patch produces.
    path.write_bytes(data[:start] + old + b".." + old + rest[40:])
    fork = load_fork(load_config(example_fork.path / "forktool.yaml"))
    assert regenerate_if_canonical(git, git.require_commit("v1.1.0"), fork.patches) is None
    result = run_cli("-C", example_fork.path, "check", "--only", "format", "--format", "json")
    assert result.code == 1


def test_fast_path_declines_a_series_that_does_not_apply(example_fork: RepoBuilder) -> None:
    git = Git(example_fork.path)
    fork = load_fork(load_config(example_fork.path / "forktool.yaml"))
    empty_tree = git.out(["hash-object", "-t", "tree", "/dev/null"], purpose="empty tree")
    orphan = git.out(["commit-tree", empty_tree], purpose="an unrelated base", input=b"x\n")
    assert regenerate_if_canonical(git, orphan, fork.patches) is None
