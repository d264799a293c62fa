"""The top level and a revision in one git call: the head start asks for the base's
commit with the repository's top level (one process fewer before ``verify`` starts
git on the series); the answer is the one a call of its own gives, taken once."""

from __future__ import annotations

from pathlib import Path

import pytest

from forktool.builder import RepoBuilder
from forktool.errors import FatalError
from forktool.git import Git, commit_spec


@pytest.mark.parametrize(
    ("rev", "tag"),
    [(None, "v1"), (None, "nope"), ("v1", "v1"), ("nope", "v1"), ("v1^{tree}", "v1")],
)
def test_a_revision_resolved_with_the_top_level_answers_as_its_own_call(
    builder: RepoBuilder, commands: list[list[str]], rev: str | None, tag: str
) -> None:
    builder.commit("base", {"a.txt": "a\n"})
    builder.tag("v1")
    spec = commit_spec(rev, tag)
    assert spec is not None
    alone = Git(builder.path)
    expected = alone.find_tag_commit(tag) if rev is None else alone.find_commit(rev)
    top = alone.toplevel()
    commands.clear()
    git = Git(builder.path)
    assert git.toplevel(spec) == top
    found = git.find_tag_commit(tag) if rev is None else git.find_commit(rev)
    assert found == expected
    assert len(commands) == 1  # the answer came with the top level
    assert (git.find_tag_commit(tag) if rev is None else git.find_commit(rev)) == expected
    assert len(commands) == 2  # taken once: asked again, git is asked


def test_a_revision_expression_names_no_tag_to_resolve() -> None:
    assert commit_spec(None, "v1~1") is None
    assert commit_spec("-v1", "v1") is None
    assert commit_spec(None, "v1") == "refs/tags/v1^{commit}"
    assert commit_spec("v1~1", "v2") == "v1~1^{commit}"


@pytest.mark.parametrize("inside", ["outside", "git dir"])
def test_outside_a_work_tree_the_refusal_is_the_same(
    builder: RepoBuilder, tmp_path: Path, inside: str
) -> None:
    builder.commit("base", {"a.txt": "a\n"})
    where = tmp_path if inside == "outside" else builder.path / ".git"
    with pytest.raises(FatalError) as alone:
        Git(where).toplevel()
    with pytest.raises(FatalError) as both:
        Git(where).toplevel("refs/tags/v1^{commit}")
    assert str(both.value) == str(alone.value)
    assert both.value.hint == alone.value.hint
