"""Release tags in version order, and the first release that contains a set of commits."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from packaging.version import Version

from forktool.builder import RepoBuilder
from forktool.engine.retirement.releases import first_releases, order_releases, release_tags


def _names(tags: list[str], pattern: str = "v*", *, prereleases: bool = True) -> list[str]:
    releases = order_releases({t: "0" * 40 for t in tags}, pattern, prereleases=prereleases)
    return [r.name for r in releases]


def test_rc_sorts_before_final_and_before_the_next_rc() -> None:
    tags = ["v1.1.1rc0", "v-latest", "v1.1.0", "vnext", "v1.1.0rc1", "v1.10.0", "v1.9.0"]
    assert _names(tags) == ["v1.1.0rc1", "v1.1.0", "v1.1.1rc0", "v1.9.0", "v1.10.0"]


def test_prereleases_can_be_left_out() -> None:
    tags = ["v1.1.0rc1", "v1.1.0", "v1.1.1rc0", "v1.2.0.dev1", "v1.2.0b2"]
    assert _names(tags, prereleases=False) == ["v1.1.0"]


def test_pattern_selects_tags_and_its_literal_prefix_is_removed() -> None:
    tags = ["pulse-1.2.0", "pulse-1.10.0", "pulse-1.2.0rc1", "v1.0.0", "pulse-latest"]
    assert _names(tags, "pulse-*") == ["pulse-1.2.0rc1", "pulse-1.2.0", "pulse-1.10.0"]


@given(
    st.lists(
        st.tuples(
            st.integers(0, 20),
            st.integers(0, 20),
            st.integers(0, 20),
            st.sampled_from(["", "rc0", "rc1", "a1", "b3", ".dev2", ".post1"]),
        ),
        unique=True,
        max_size=12,
    )
)
def test_order_agrees_with_packaging(parts: list[tuple[int, int, int, str]]) -> None:
    tags = [f"v{a}.{b}.{c}{suffix}" for a, b, c, suffix in parts]
    expected = sorted(tags, key=lambda t: (Version(t), t))
    assert _names(tags) == expected


def test_first_release_follows_version_order_not_names_or_dates(builder: RepoBuilder) -> None:
    builder.commit("base\n", {"a": "1\n"})
    builder.tag("v1.0.0")
    fix = builder.commit("fix\n", {"a": "2\n"})
    for name in ("v1.1.1rc0", "v-latest", "v1.1.0", "v1.1.0rc1"):  # created in this order
        builder.tag(name)
    for prereleases, expected in ((True, "v1.1.0rc1"), (False, "v1.1.0")):
        releases = release_tags(builder.git, "v*", prereleases=prereleases)
        found = first_releases(builder.git, releases, {"p": (fix,), "fork": ()})
        assert found == {"p": expected, "fork": None}


def test_first_release_is_exact_when_containment_is_not_monotonic(builder: RepoBuilder) -> None:
    """A fix made on a release branch and never merged back is in 1.2.1, not in 1.3.0."""
    builder.commit("base\n", {"a": "1\n"})
    builder.tag("v1.2.0")
    builder.branch("release-1.2")
    builder.commit("main moves on\n", {"b": "1\n"})
    builder.tag("v1.3.0")
    builder.checkout("release-1.2")
    fix = builder.commit("fix on the release branch only\n", {"a": "2\n"})
    builder.tag("v1.2.1")
    later = builder.commit("another\n", {"c": "1\n"})
    releases = release_tags(builder.git, "v*")
    assert [r.name for r in releases] == ["v1.2.0", "v1.2.1", "v1.3.0"]
    wanted = {"fix": (fix,), "both": (fix, later), "none": ()}
    expected = {"fix": "v1.2.1", "both": None, "none": None}
    assert first_releases(builder.git, releases, wanted) == expected
    # The same answers when the walk starts at a pin: below it (the fallback path) and above.
    for since in (builder.rev("v1.2.0"), fix, later):
        assert first_releases(builder.git, releases, wanted, since=since) == expected, since
