"""Release tags that are not vX.Y.Z: the version reader, its schemes, and every command
that orders releases (poll, forecast, status, absorbed's first_release) on them."""

from __future__ import annotations

import fnmatch
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packaging.version import Version
from testing.helpers import make_patch, mini_fork, run_cli

from forktool.builder import RepoBuilder
from forktool.config import parse_config
from forktool.engine.retirement.releases import order_releases, pattern_for_tag
from forktool.errors import FatalError
from forktool.model.versions import TagVersion, VersionScheme, scheme_for_tag


def lines(prefix: str, count: int = 30) -> str:
    return "".join(f"{prefix}{i}\n" for i in range(count))


REAL_TAGS = {
    # tag: (prefix, separator, version for ordering)
    "curl-7_88_1": ("curl-", "_", "7.88.1"),
    "OpenSSL_1_1_1t": ("OpenSSL_", "_", "1.1.1.20"),
    "openssl-3.0.8": ("openssl-", ".", "3.0.8"),
    "REL_15_2": ("REL_", "_", "15.2"),
    "release-1.22.1": ("release-", ".", "1.22.1"),
    "release_1_34": ("release_", "_", "1.34"),
    "version-3.40.1": ("version-", ".", "3.40.1"),
    "bash-5.2": ("bash-", ".", "5.2"),
    "v252": ("v", ".", "252"),
    "2.4.57": ("", ".", "2.4.57"),
    "jq-1.7.1": ("jq-", ".", "1.7.1"),
    "v2.41.0-rc0": ("v", ".", "2.41.0rc0"),
    "REL_16_RC1": ("REL_", "_", "16rc1"),
    "OpenSSL_1_1_1-pre9": ("OpenSSL_", "_", "1.1.1rc9"),
    "3.0.0-alpha1": ("", ".", "3.0.0a1"),
    "curl-7_8-pre2": ("curl-", "_", "7.8rc2"),
    "gtk2-2.24.0": ("gtk2-", ".", "2.24.0"),
}


@pytest.mark.parametrize("tag", sorted(REAL_TAGS))
def test_the_scheme_of_a_real_tag_is_derived_from_its_shape(tag: str) -> None:
    prefix, separator, version = REAL_TAGS[tag]
    scheme = scheme_for_tag(tag)
    assert scheme == VersionScheme(prefix, separator)
    assert scheme.read(tag) == Version(version)
    assert pattern_for_tag(tag) == (f"{prefix}*" if prefix else "[0-9]*")


@pytest.mark.parametrize("tag", ["v-latest", "curl-7_15_6-prepipeline", "nightly", "tiny-curl"])
def test_a_tag_that_names_no_version_has_no_scheme(tag: str) -> None:
    assert scheme_for_tag(tag) is None


def _names(tags: list[str], pattern: str, scheme: VersionScheme) -> list[str]:
    return [r.name for r in order_releases({t: "0" * 40 for t in tags}, pattern, scheme=scheme)]


def test_curl_tags_order_by_version_not_by_name() -> None:
    tags = ["curl-8_0_0", "curl-7_9_8", "curl-7_88_1", "curl-7_10", "curl-7_8-pre2", "tiny-curl"]
    tags += ["curl-7_15_6-prepipeline", "curl-7_88_0", "curl-8_10_0", "curl-8_9_1"]
    expected = ["curl-7_8-pre2", "curl-7_9_8", "curl-7_10", "curl-7_88_0", "curl-7_88_1"]
    expected += ["curl-8_0_0", "curl-8_9_1", "curl-8_10_0"]
    assert _names(tags, "curl-*", VersionScheme("curl-", "_")) == expected


def test_openssl_letters_come_after_the_plain_release_and_pre_before_it() -> None:
    tags = ["OpenSSL_1_1_1t", "OpenSSL_1_1_1", "OpenSSL_1_1_1-pre9", "OpenSSL_1_1_1a"]
    tags += ["OpenSSL_0_9_8za", "OpenSSL_0_9_8z", "OpenSSL_1_1_1s"]
    assert _names(tags, "OpenSSL_*", VersionScheme("OpenSSL_", "_")) == [
        "OpenSSL_0_9_8z",
        "OpenSSL_0_9_8za",
        "OpenSSL_1_1_1-pre9",
        "OpenSSL_1_1_1",
        "OpenSSL_1_1_1a",
        "OpenSSL_1_1_1s",
        "OpenSSL_1_1_1t",
    ]


def test_postgres_betas_and_rcs_come_before_the_release() -> None:
    tags = ["REL_16_0", "REL_16_RC1", "REL_16_BETA2", "REL_15_2", "REL_16_1", "REL_16_STABLE"]
    assert _names(tags, "REL_*", VersionScheme("REL_", "_")) == [
        "REL_15_2",
        "REL_16_BETA2",
        "REL_16_RC1",
        "REL_16_0",
        "REL_16_1",
    ]


_PRE = st.sampled_from(
    ["", "rc", "RC", "pre", "preview", "alpha", "beta", "a", "b", "milestone", "m", "M", "dev"]
)


@st.composite
def _tag_versions(draw: st.DrawFn) -> TagVersion:
    release = tuple(str(n) for n in draw(st.lists(st.integers(0, 300), min_size=1, max_size=4)))
    letters = draw(st.sampled_from(["", "a", "k", "t", "z", "za"]))
    post = draw(st.sampled_from(["", "p", "P"]))  # openssh's portable level: V_9_6_P1
    post_number = draw(st.sampled_from(["1", "2", "12"])) if post else ""
    post_separator = draw(st.sampled_from(["", "_", "-", "."])) if post else ""
    if post and letters and not post_separator:
        post_separator = "_"  # '1.1.1tp1' reads as nothing: letters then a level need a break
    label = draw(_PRE)
    if not label:
        return TagVersion(
            release,
            letters,
            post_separator=post_separator,
            post_label=post,
            post_number=post_number,
        )
    number = draw(st.sampled_from(["", "0", "1", "9", "12"]))
    if label in ("a", "b", "m", "M") and not number:
        number = "1"  # an unnumbered single letter is a patch letter, by definition
    if letters and not post and not draw(st.booleans()):
        letters = ""
    separator = draw(st.sampled_from(["", "-", "_", "."]))
    if not separator and letters and not post:
        separator = "-"  # '1.1.1arc1' reads as nothing: letters then a marker need a break
    number_separator = draw(st.sampled_from(["", "."])) if number else ""  # semver: -beta.1
    build = draw(st.sampled_from(["", "+build.5", "+20240101", "+sha-1a2b"]))
    return TagVersion(
        release, letters, separator, label, number, post_separator, post, post_number,
        number_separator, build,
    )  # fmt: skip


_SCHEMES = st.builds(
    VersionScheme,
    st.sampled_from(["", "v", "curl-", "OpenSSL_", "REL_", "release-", "version-", "jq-"]),
    st.sampled_from([".", "_", "-"]),
)


@given(_SCHEMES, _tag_versions())
def test_a_version_written_as_a_tag_reads_back_unchanged(
    scheme: VersionScheme, parts: TagVersion
) -> None:
    tag = scheme.tag(parts)
    assert scheme.parts(tag) == parts
    assert scheme.read(tag) == parts.version()


@given(_SCHEMES, st.lists(_tag_versions(), min_size=1, max_size=8, unique=True))
def test_tags_order_as_their_versions_do(scheme: VersionScheme, versions: list[TagVersion]) -> None:
    tags = {scheme.tag(v): v for v in versions}
    pattern = f"{scheme.prefix}*" if scheme.prefix else "*"
    expected = sorted(tags, key=lambda t: (tags[t].version(), t))
    assert _names(list(tags), pattern, scheme) == expected


@given(_SCHEMES, _tag_versions())
def test_the_scheme_derived_from_a_tag_reads_it_as_written(
    scheme: VersionScheme, parts: TagVersion
) -> None:
    tag = scheme.tag(parts)
    derived = scheme_for_tag(tag)
    assert derived is not None
    assert derived.read(tag) is not None


def _config(extra: str) -> str:
    return f"pin:\n  tag: curl-7_88_1\n  commit: {'a' * 40}\nrelease_tags: 'curl-*'\n{extra}"


def test_release_version_is_read_from_forktool_yaml(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "forktool.yaml"
    text = _config("release_version:\n  prefix: 'curl-'\n  separator: '_'\n")
    assert parse_config(text, path).version_scheme == VersionScheme("curl-", "_")
    # Without it, the pinned tag's shape says the same.
    assert parse_config(_config(""), path).version_scheme == VersionScheme("curl-", "_")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("release_version:\n  separator: '/'\n", "release_version.separator '/' must be one of"),
        ("release_version:\n  prefix: 'c*'\n  separator: '_'\n", "not a pattern"),
        ("release_version:\n  prefix: 'curl-'\n", "missing required key 'separator'"),
        ("release_version:\n  separator: '_'\n  glob: x\n", "unknown key 'glob'"),
        ("release_version: curl-\n", "release_version must be a mapping"),
    ],
)
def test_a_bad_release_version_is_refused_with_its_line(
    tmp_path: object, extra: str, message: str
) -> None:
    from pathlib import Path

    with pytest.raises(FatalError) as caught:
        parse_config(_config(extra), Path(str(tmp_path)) / "forktool.yaml")
    assert message in caught.value.message
    assert re.search(r"forktool\.yaml:[5-7]: ", caught.value.message), caught.value.message


def _curl_like(builder: RepoBuilder) -> tuple[str, bytes]:
    """Upstream tagged curl's way: curl-7_9_8, curl-7_88_1 (the pin), curl-7_88_2 with
    the fix, curl-8_0_0; returns the fix and the patch carrying it."""
    builder.commit("upstream: import\n", {"lib/a.c": lines("a")})
    builder.tag("curl-7_9_8")
    builder.commit("upstream: more\n", {"lib/b.c": lines("b")})
    builder.tag("curl-7_88_1")
    builder.branch("fork")
    fixed = {"lib/a.c": lines("a").replace("a3\n", "A3\n")}
    fix = builder.commit("upstream: fix a\n", fixed)
    builder.tag("curl-7_88_2")
    builder.commit("upstream: c\n", {"lib/c.c": lines("c")})
    builder.tag("curl-8_0_0")
    builder.tag("tiny-curl-8_4_0")
    builder.checkout("fork")
    return fix, make_patch(builder, "curl-7_88_1", fixed, "fix a")


def test_init_on_a_curl_tag_lets_poll_forecast_status_and_absorbed_order_releases(
    builder: RepoBuilder,
) -> None:
    fix, patch = _curl_like(builder)
    root = builder.path
    init = run_cli("-C", root, "init", "--pin", "curl-7_88_1")
    assert init.code == 0, init.err
    assert "warning" not in init.err
    config = (root / "forktool.yaml").read_text()
    assert (
        "release_tags: 'curl-*'\nrelease_version:\n  prefix: 'curl-'\n  separator: '_'\n" in config
    )
    (root / "patches" / "0001-fix-a.patch").write_bytes(patch)
    (root / "series").write_text("0001-fix-a.patch\n")
    (root / "upstream.map").write_text(f"0001-fix-a.patch {fix}\n")

    poll = run_cli("-C", root, "upstream", "poll", "--no-fetch", "--format", "json")
    assert poll.code in (3, 4), poll.err
    assert [n["tag"] for n in poll.json()["newer"]] == ["curl-7_88_2", "curl-8_0_0"]  # type: ignore[union-attr]

    forecast = run_cli("-C", root, "forecast", "--no-fetch", "--format", "json")
    assert forecast.code == 0, forecast.err
    targets = [t["ref"] for t in forecast.json()["targets"]]  # type: ignore[union-attr]
    assert targets[:2] == ["curl-7_88_2", "curl-8_0_0"]

    status = run_cli("-C", root, "status", "--format", "json")
    assert status.code == 0, status.err
    newest = status.json()["newest_release"]
    assert newest["tag"] == "curl-8_0_0"  # type: ignore[index]
    assert newest["would_retire"] == ["0001-fix-a.patch"]  # type: ignore[index]

    absorbed = run_cli("-C", root, "absorbed", "--tag", "curl-8_0_0", "--format", "json")
    assert absorbed.code == 0, absorbed.err
    assert absorbed.json()["patches"][0]["first_release"] == "curl-7_88_2"  # type: ignore[index]


def test_a_fork_written_before_release_version_reads_curl_tags_from_its_pin(
    builder: RepoBuilder,
) -> None:
    """forktool.yaml with only release_tags: 'curl-*' (as init wrote it before): the
    scheme comes from the pinned tag's shape, and poll no longer exits 2."""
    fix, patch = _curl_like(builder)
    root = builder.path
    (root / "forktool.yaml").write_text(
        f"pin:\n  tag: curl-7_88_1\n  commit: {builder.rev('curl-7_88_1')}\n"
        "release_tags: 'curl-*'\n"
    )
    (root / "patches").mkdir()
    (root / "patches" / "0001-fix-a.patch").write_bytes(patch)
    (root / "series").write_text("0001-fix-a.patch\n")
    (root / "upstream.map").write_text(f"0001-fix-a.patch {fix}\n")
    poll = run_cli("-C", root, "upstream", "poll", "--no-fetch", "--format", "json")
    assert poll.code in (3, 4), poll.err
    assert poll.json()["newest"] == "curl-8_0_0"


def test_init_warns_when_the_pinned_tag_names_no_version(builder: RepoBuilder) -> None:
    builder.commit("upstream: import\n", {"a.py": lines("a")})
    builder.tag("nightly")
    result = run_cli("-C", builder.path, "init", "--pin", "nightly", "--format", "json")
    assert result.code == 0, result.err
    assert result.err.startswith("warning: the pinned tag 'nightly' names no version")
    assert result.json()["warnings"] == [result.err.strip()[len("warning: ") :]]


def test_a_pin_the_configured_scheme_cannot_read_is_refused_with_the_scheme_it_suggests(
    builder: RepoBuilder,
) -> None:
    fork = mini_fork(builder, {"a.py": lines("a")}, tag="curl-7_88_1")
    fork.write(
        {"0001-b.patch": make_patch(builder, "curl-7_88_1", {"a.py": lines("b")}, "b")},
        extra_config="release_tags: 'curl-*'\nrelease_version:\n  prefix: 'curl-'\n"
        "  separator: '.'\n",
    )
    result = fork.cli("upstream", "poll", "--no-fetch")
    assert result.code == 2
    assert result.error_lines == [
        "error: the pinned tag 'curl-7_88_1' names no version that release_version "
        "(prefix 'curl-', separator '.') can read",
        "hint: set release_version in forktool.yaml to how upstream writes versions "
        "(the pinned tag suggests prefix 'curl-', separator '_')",
    ]


def test_status_names_no_newest_release_against_a_pin_it_cannot_read(
    builder: RepoBuilder,
) -> None:
    """With a scheme that cannot read the pin, the newest readable release may be older
    than the pin (openssh's V_2_1_0 under V_9_6_P1): status says so in the release's
    note and judges nothing, as poll refuses the same configuration."""
    fork = mini_fork(builder, {"a.py": lines("a")}, tag="curl-7.1")  # old, and readable
    builder.commit("upstream: next\n", {"a.py": lines("c")})
    builder.tag("curl-7_88_1")
    fork.pin = "curl-7_88_1"
    fork.write(
        {"0001-b.patch": make_patch(builder, "curl-7_88_1", {"a.py": lines("b")}, "b")},
        extra_config="release_tags: 'curl-*'\nrelease_version:\n  prefix: 'curl-'\n"
        "  separator: '.'\n",
    )
    result = fork.cli("status", "--format", "json")
    assert result.code == 0, result.err
    newest = result.json()["newest_release"]
    assert newest["would_retire"] is None  # type: ignore[index]
    assert str(newest["note"]).startswith(  # type: ignore[index]
        "the pinned tag 'curl-7_88_1' names no version that release_version (prefix 'curl-', "
        "separator '.') can read: no release can be told newer than the pin; set "
        "release_version"
    )


@pytest.mark.parametrize(("tag", "pattern"), [("orig", "orig"), ("up[stream]", "up[[]stream[]]")])
def test_a_tag_with_no_digit_suggests_itself(tag: str, pattern: str) -> None:
    """A pin with no digit (a tarball imported as ``orig``) reads as no version: the
    pattern it suggests is the tag itself, glob characters taken literally, never
    ``v*``, which would not match it and which the refusal would then suggest again."""
    assert pattern_for_tag(tag) == pattern
    assert fnmatch.fnmatchcase(tag, pattern)


def test_redis_milestones_read_as_pre_releases_not_as_a_prefix() -> None:
    """redis's ``8.0-m01``: a milestone before ``8.0-rc1`` and ``8.0.0``. ``init`` read
    ``8.0-m`` as the prefix, so only ``8.0-mNN`` tags could ever be releases."""
    assert scheme_for_tag("8.0-m01") == VersionScheme("", ".")
    assert pattern_for_tag("8.0-m01") == "[0-9]*"
    tags = ["8.0.0", "8.0-rc1", "8.0-m02", "7.4.1", "8.0-m01", "8.0.1"]
    assert _names(tags, "[0-9]*", VersionScheme("", ".")) == [
        "7.4.1",
        "8.0-m01",
        "8.0-m02",
        "8.0-rc1",
        "8.0.0",
        "8.0.1",
    ]
    assert VersionScheme("OpenSSL_", "_").read("OpenSSL_1_0_2m") == Version("1.0.2.13")


def test_haproxy_development_tags_read_as_pre_releases_not_as_a_prefix() -> None:
    """haproxy's ``v3.4-dev10``: a development release before ``v3.4.0``. ``init`` read
    ``v3.4-dev`` as the prefix, so v3.4.0 and every later release stayed hidden."""
    assert scheme_for_tag("v3.4-dev10") == VersionScheme("v", ".")
    assert pattern_for_tag("v3.4-dev10") == "v*"
    tags = ["v3.5-dev0", "v3.4.0", "v3.4-dev14", "v3.3.1", "v3.4-dev2", "v3.4-dev10", "v3.4.1"]
    assert _names(tags, "v*", VersionScheme("v", ".")) == [
        "v3.3.1",
        "v3.4-dev2",
        "v3.4-dev10",
        "v3.4-dev14",
        "v3.4.0",
        "v3.4.1",
        "v3.5-dev0",
    ]
    assert VersionScheme("v", ".").read("v3.4-dev10").is_prerelease  # type: ignore[union-attr]


def test_semver_pre_releases_with_a_dotted_number_read_as_pre_releases() -> None:
    """semver's ``v1.0.0-beta.1`` and ``v2.0.0-rc.2`` (npm, Cargo and Go projects):
    ``init`` read ``v1.0.0-beta.`` as the prefix, so v1.0.0 and every later release
    stayed hidden from a fork pinned at a beta."""
    assert scheme_for_tag("v1.0.0-beta.1") == VersionScheme("v", ".")
    assert pattern_for_tag("v1.0.0-rc.2") == "v*"
    tags = ["v1.0.0", "v1.0.0-rc.2", "v1.0.0-beta.10", "v1.0.0-beta.2", "v0.9.1", "v1.0.0-rc.1"]
    assert _names(tags, "v*", VersionScheme("v", ".")) == [
        "v0.9.1",
        "v1.0.0-beta.2",
        "v1.0.0-beta.10",
        "v1.0.0-rc.1",
        "v1.0.0-rc.2",
        "v1.0.0",
    ]
    parts = VersionScheme("v", ".").parts("v1.0.0-beta.10")
    assert parts is not None and VersionScheme("v", ".").tag(parts) == "v1.0.0-beta.10"
    # PowerShell's previews come before its release candidates; build metadata is kept
    # and never ordered by.
    assert scheme_for_tag("v7.4.0-preview.5") == VersionScheme("v", ".")
    assert scheme_for_tag("v2.6.0-rc.1+build.5") == VersionScheme("v", ".")
    assert _names(
        ["v7.4.0", "v7.4.0-preview.5", "v7.4.0-rc.1+b2"], "v*", VersionScheme("v", ".")
    ) == [
        "v7.4.0-preview.5",
        "v7.4.0-rc.1+b2",
        "v7.4.0",
    ]


def test_openssh_portable_tags_read_and_order_by_release_then_level() -> None:
    """openssh's portable releases, ``V_9_6_P1``: the scheme is ``V_`` and ``_`` (not the
    prefix ``V_9_6_P``, which hid every later release), the ``P`` level after the
    release, and an OpenBSD-only ``V_9_7`` before its first portable one."""
    assert scheme_for_tag("V_9_6_P1") == VersionScheme("V_", "_")
    assert pattern_for_tag("V_9_6_P1") == "V_*"
    tags = ["V_10_0_P2", "V_9_6_P1", "V_9_7_P1", "V_10_0_P1", "V_2_1_0", "V_9_7", "V_9_10_P1"]
    assert _names(tags, "V_*", VersionScheme("V_", "_")) == [
        "V_2_1_0",
        "V_9_6_P1",
        "V_9_7",
        "V_9_7_P1",
        "V_9_10_P1",
        "V_10_0_P1",
        "V_10_0_P2",
    ]
    assert VersionScheme("openssh-", ".").read("openssh-9.6p1") == Version("9.6.post1")
