"""The one resolver: a user's TAG or REV becomes a Revision once, with one refusal each."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version
from testing.helpers import run_cli, snapshot_tree

from forktool.builder import RepoBuilder
from forktool.config import load_config
from forktool.engine.revisions import Kind, Upstream, resolve, resolve_tag, unknown_tag_hint
from forktool.engine.upstream.fetch import Fetched
from forktool.errors import FatalError
from forktool.model.revision import Revision


def _history(builder: RepoBuilder) -> tuple[str, str]:
    first = builder.commit("upstream: one\n", {"a.py": "one\n"})
    second = builder.commit("upstream: two\n", {"a.py": "two\n"})
    return first, second


NOT_A_TAG = "name a tag (git tag --list); to judge another commit, tag it first"


def _refusal(
    builder: RepoBuilder, name: str, kind: Kind = "tag", what: str = "revision"
) -> tuple[str, str | None]:
    """(message, hint) of resolve's refusal of ``name``."""
    with pytest.raises(FatalError) as caught:
        resolve(builder.git, name, kind=kind, what=what)
    return caught.value.message, caught.value.hint


def test_an_annotated_tag_resolves_to_the_commit_it_peels_to(builder: RepoBuilder) -> None:
    first, _ = _history(builder)
    builder.tag("v1.0.0", first)
    assert resolve(builder.git, "v1.0.0") == Revision("v1.0.0", first)


def test_a_lightweight_tag_resolves_to_its_commit(builder: RepoBuilder) -> None:
    first, _ = _history(builder)
    builder.tag("v1.0.0", first, annotated=False)
    assert resolve(builder.git, "v1.0.0") == Revision("v1.0.0", first)


def test_a_nested_annotated_tag_peels_through_every_tag(builder: RepoBuilder) -> None:
    first, second = _history(builder)
    builder.tag("v1.0.0", second)
    builder.tag("v1.0.0-signed", "refs/tags/v1.0.0")  # a tag of a tag
    builder.tag("v1.0.0-final", "refs/tags/v1.0.0-signed")  # and of that
    kinds = builder.git.object_types([builder.git.out(["rev-parse", "v1.0.0-final"], purpose="x")])
    assert list(kinds.values()) == ["tag"]
    assert resolve(builder.git, "v1.0.0-final") == Revision("v1.0.0-final", second)
    assert resolve(builder.git, "v1.0.0-final").commit != first


def test_an_unknown_tag_is_refused_with_the_one_wording(builder: RepoBuilder) -> None:
    _history(builder)
    assert _refusal(builder, "v9") == (
        "unknown tag 'v9'",
        "fetch it (git fetch <upstream-remote> tag v9), or check the name (git tag --list)",
    )


def test_a_revision_expression_is_no_tag(builder: RepoBuilder) -> None:
    _, second = _history(builder)
    builder.tag("v1.0.0", second)
    for expression in ("v1.0.0~1", "v1.0.0^", "v1.0.0^{commit}", "HEAD~1"):
        assert _refusal(builder, expression) == (
            f"'{expression}' is a revision expression, not a tag: a tag (refs/tags/...) is needed",
            NOT_A_TAG,
        )


def test_a_commit_id_or_branch_where_a_tag_is_needed_is_refused(builder: RepoBuilder) -> None:
    first, _ = _history(builder)
    for name in (first, "main"):
        assert _refusal(builder, name) == (
            f"'{name}' names a commit but no tag: a tag (refs/tags/...) is needed",
            NOT_A_TAG,
        )


def test_a_full_tag_ref_is_refused_naming_the_tag(builder: RepoBuilder) -> None:
    _, second = _history(builder)
    builder.tag("v1.0.0", second)
    assert _refusal(builder, "refs/tags/v1.0.0") == (
        "'refs/tags/v1.0.0' is a full ref name: give the tag's own name, 'v1.0.0'",
        NOT_A_TAG,
    )


def test_a_tag_of_a_tree_names_no_commit(builder: RepoBuilder) -> None:
    _history(builder)
    builder.git.run(["tag", "tree-tag", "HEAD^{tree}"], purpose="tag a tree")
    assert _refusal(builder, "tree-tag") == ("tag 'tree-tag' names a tree, not a commit", NOT_A_TAG)


def test_a_commit_id_is_a_revision_where_any_revision_is_allowed(builder: RepoBuilder) -> None:
    first, second = _history(builder)
    builder.tag("v1.0.0", second)
    assert resolve(builder.git, first, kind="revision") == Revision(first, first)
    assert resolve(builder.git, "v1.0.0~1", kind="revision") == Revision("v1.0.0~1", first)
    assert resolve(builder.git, "main", kind="revision").commit == second
    message, _ = _refusal(builder, "nowhere", kind="revision", what="base revision")
    assert message == "unknown base revision 'nowhere'"


def test_a_release_tag_carries_its_version(builder: RepoBuilder) -> None:
    first, _ = _history(builder)
    builder.tag("curl-7_88_1", first)
    builder.tag("nightly", first)
    (builder.path / "forktool.yaml").write_text(
        f"pin:\n  tag: curl-7_88_1\n  commit: {first}\nrelease_tags: 'curl-*'\n"
    )
    upstream = Upstream.of(load_config(builder.path / "forktool.yaml"))
    assert resolve(builder.git, "curl-7_88_1", upstream=upstream).version == Version("7.88.1")
    assert resolve(builder.git, "nightly", upstream=upstream).version is None


def test_the_hint_says_how_this_command_brings_a_tag_in(builder: RepoBuilder) -> None:
    first, _ = _history(builder)
    (builder.path / "forktool.yaml").write_text(f"pin:\n  tag: v1\n  commit: {first}\n")
    config = load_config(builder.path / "forktool.yaml")
    tail = ", or check the name (git tag --list)"
    assert unknown_tag_hint("v9", Upstream.of(config)) == (
        "fetch it (git fetch upstream tag v9)" + tail
    )
    assert unknown_tag_hint("v9", Upstream.of(config, "--fetch")) == (
        "fetch it (pass --fetch, or git fetch upstream tag v9)" + tail
    )
    assert unknown_tag_hint("v9", Upstream.of(config, "--no-fetch")) == (
        "fetch it (drop --no-fetch, or git fetch upstream tag v9)" + tail
    )
    nowhere = Upstream.of(config, "--fetch", fetched=Fetched(None))
    assert unknown_tag_hint("v9", nowhere) == (
        "there is no upstream to fetch it from (no remote 'upstream', no upstream.url): "
        "add the remote (git remote add upstream <url>) or set upstream.url in forktool.yaml"
    )


def test_a_tag_to_pin_is_named_safely_before_anything_is_fetched(builder: RepoBuilder) -> None:
    first, _ = _history(builder)
    (builder.path / "forktool.yaml").write_text(f"pin:\n  tag: v1\n  commit: {first}\n")
    upstream = Upstream.of(load_config(builder.path / "forktool.yaml"), fetch=True)
    with pytest.raises(FatalError) as caught:
        resolve_tag(builder.git, "v1;touch", upstream=upstream, pinning=True)
    assert caught.value.message == "tag name 'v1;touch' contains ';'"


def test_fetching_a_tag_from_upstream_then_resolving_it(
    builder: RepoBuilder, tmp_path: Path
) -> None:
    first, second = _history(builder)
    builder.tag("v1", first)
    clone = RepoBuilder.clone(builder.path, tmp_path / "fork")
    builder.tag("v2", second)
    (clone.path / "forktool.yaml").write_text(
        f"upstream:\n  remote: origin\npin:\n  tag: v1\n  commit: {first}\n"
    )
    config = load_config(clone.path / "forktool.yaml")
    with pytest.raises(FatalError):
        resolve(clone.git, "v2", upstream=Upstream.of(config, "--fetch"))
    revision, fetched = resolve_tag(clone.git, "v2", upstream=Upstream.of(config, fetch=True))
    assert revision == Revision("v2", second, Version("2"))
    assert fetched is not None and fetched.fetched == ("v2",)


UNKNOWN_TAG_COMMANDS = [
    ("absorbed", "--tag", "v9.9.9"),
    ("retire", "--tag", "v9.9.9", "--dry-run"),
    ("refresh", "--onto", "v9.9.9"),
    ("pin", "bump", "v9.9.9"),
    ("pin", "import-tarball", "missing.tar.gz", "--tag", "v9.9.9"),
    ("sync", "v9.9.9", "--no-fetch"),
    ("sync", "v9.9.9", "--no-fetch", "--dry-run"),
    ("forecast", "--tags", "v9.9.9", "--no-fetch"),
]


@pytest.mark.parametrize("args", UNKNOWN_TAG_COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_every_command_refuses_an_unknown_tag_in_the_same_words(
    example_fork: RepoBuilder, args: tuple[str, ...]
) -> None:
    before = snapshot_tree(example_fork.path)
    result = run_cli("-C", example_fork.path, *args)
    assert result.code == 2, result.err
    assert result.error_lines[0] == "error: unknown tag 'v9.9.9'"
    assert result.error_lines[1].startswith("hint: fetch it (")
    assert result.error_lines[1].endswith("), or check the name (git tag --list)")
    assert snapshot_tree(example_fork.path) == before


@pytest.mark.parametrize("args", UNKNOWN_TAG_COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_every_command_refuses_a_revision_expression_for_a_tag(
    example_fork: RepoBuilder, args: tuple[str, ...]
) -> None:
    expression = "v1.2.0~1"
    result = run_cli("-C", example_fork.path, *(expression if a == "v9.9.9" else a for a in args))
    assert result.code == 2, result.err
    if (
        args[:2] == ("pin", "bump") or args[0] == "sync"
    ):  # a TAG to pin is held to the pin's naming rule first
        assert result.error_lines[0] == f"error: tag name '{expression}' contains '~'"
    else:
        assert result.error_lines[0] == (
            f"error: '{expression}' is a revision expression, not a tag: "
            "a tag (refs/tags/...) is needed"
        )
