"""The patch-header reader behind ``map suggest`` and ``export``: pure, property-tested."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from forktool.model.upstream_refs import read_refs

_sha = st.text(alphabet="0123456789abcdefABCDEF", min_size=40, max_size=40)
_url = st.sampled_from(
    [
        "https://github.com/o/r/commit/{}",
        "https://gitlab.com/o/r/-/commit/{}",
        "https://git.kernel.org/pub/scm/x.git/commit/?id={}",
        "https://sourceware.org/git/?p=x.git;a=commit;h={}",
    ]
)
FORMS = [
    "Origin: upstream, {url}",
    "Origin: {url}",
    "Applied-Upstream: 2.1, {url}",
    "Upstream-Status: Backport [{url}]",
    "Upstream-Status: Backport [{sha}]",
    "Git-commit: {sha}",
    "commit {sha} upstream.",
    "[ Upstream commit {sha} ]",
    "(cherry picked from commit {sha})",
    "Upstream-Merge: {sha}",
    "# Upstream-Merge: {sha}",
]
_noise = st.lists(st.text(alphabet="abcdefghijklmnopqrstuvwxyz :-,.", max_size=30), max_size=4)


@given(_sha, _url, st.sampled_from(FORMS), _noise, _noise)
def test_every_form_gives_the_commit_as_written(
    sha: str, url: str, form: str, before: list[str], after: list[str]
) -> None:
    line = form.format(url=url.format(sha), sha=sha)
    ref = read_refs([*before, line, *after], "subject")
    assert ref is not None
    assert ref.kind == "commits"
    assert ref.commits == (sha.lower(),)
    assert ref.source == line.removeprefix("# ")


@given(st.lists(st.text(max_size=80), max_size=12), st.text(max_size=40))
def test_never_invents_a_commit(header: list[str], subject: str) -> None:
    ref = read_refs(header, subject)
    text = "\n".join(header).lower()
    if ref is not None:
        assert all(commit in text for commit in ref.commits)
        assert ref.kind in ("commits", "none", "pending")
        assert (ref.kind == "commits") == bool(ref.commits)


@given(_sha, _sha)
def test_forktools_own_trailer_wins(mine: str, other: str) -> None:
    ref = read_refs([f"(cherry picked from commit {other})", f"Upstream-Merge: {mine}"])
    assert ref is not None and ref.commits == (mine.lower(),)
    none = read_refs([f"(cherry picked from commit {other})", "Upstream-Merge: none"])
    assert none is not None and (none.kind, none.commits) == ("none", ())


def test_statuses_without_a_commit() -> None:
    cases = {
        "Upstream-Status: Pending": ("pending", None),
        "Upstream-Status: Submitted [https://lists.example.org/1]": (
            "pending",
            "https://lists.example.org/1",
        ),
        "Upstream-Status: Inappropriate [oe-core specific]": ("none", None),
        "Upstream-Status: Denied": ("none", None),
        "Patch-mainline: Never, SUSE-specific": ("none", None),
        "Patch-mainline: Submitted, https://lore.kernel.org/r/1": (
            "pending",
            "https://lore.kernel.org/r/1",
        ),
        "Forwarded: https://github.com/o/r/pull/5": ("pending", "https://github.com/o/r/pull/5"),
        "Forwarded: not-needed": ("none", None),
        "Upstream-PR: https://github.com/o/r/pull/6": ("pending", "https://github.com/o/r/pull/6"),
    }
    for line, (kind, pr) in cases.items():
        ref = read_refs([line])
        assert ref is not None, line
        assert (ref.kind, ref.commits, ref.pr, ref.source) == (kind, (), pr, line)
    assert read_refs(["Bug: https://bugs.example.org/1"]) is None  # a bug alone says nothing
    fromlist = read_refs(["Link: https://lore.kernel.org/r/2"], "FROMLIST: mm: fix")
    assert fromlist is not None and fromlist.kind == "pending"


def test_android_prefixes_take_the_cherry_picked_line() -> None:
    sha = "ab" * 20
    ref = read_refs(
        ["", "Bug: 123456", f"(cherry picked from commit {sha} https://git.kernel.org/x for-next)"],
        "FROMGIT: mm: fix",
    )
    assert ref is not None and ref.commits == (sha,)


@given(st.text(alphabet="0123456789abcdef", min_size=7, max_size=40))
def test_dep3_commit_prefix_takes_an_abbreviation_to_resolve(sha: str) -> None:
    """DEP-3 writes 'Origin: upstream, commit:<id>', the id often abbreviated."""
    for line in (f"Origin: upstream, commit:{sha}", f"Applied-Upstream: 8.4.0, commit:{sha}"):
        ref = read_refs(["Description: x", line])
        assert ref is not None
        assert (ref.kind, ref.commits, ref.source) == ("commits", (sha,), line)
    assert read_refs([f"Origin: upstream, commit:{sha[:6]}"]) is None  # too short to be one


def test_a_pick_of_a_pick_names_the_commit_it_was_picked_from() -> None:
    """A backport picked again with -x carries two cherry-pick lines (main's commit, then
    the backport's): the same change under two ids. Both as the map's commits would need
    a release holding both (tcpdump's 58a740ea, a backport of master's c615b088)."""
    main, backport, other = "c615b088" + "0" * 32, "58a740ea" + "1" * 32, "a" * 40
    lines = [f"(cherry picked from commit {main})", "", f"(cherry picked from commit {backport})"]
    ref = read_refs(lines)
    assert ref is not None
    assert (ref.commits, ref.source) == ((backport,), lines[-1])
    both = read_refs([f"Git-commit: {other}", f"(cherry picked from commit {backport})"])
    assert both is not None and both.commits == (other,)  # the header's statement wins


def test_a_header_statement_wins_over_the_cherry_pick_line_beside_it() -> None:
    """python3.11's CVE backports: the message keeps CPython's "(cherry picked from
    commit <main>)", and DEP-3's Origin names the 3.11 commit the patch is. A 3.11
    release holds the 3.11 commit, never main's: mapping both, it could never retire."""
    main, branch = (
        "34ddb64d088dd7ccc321f6103d23153256caa5d4",
        "d449caf8a179e3b954268b3a88eb9170be3c8fbf",
    )
    ref = read_refs(
        [
            f"(cherry picked from commit {main})",
            "Co-authored-by: Kirill Podoprigora <kirill.bast9@mail.ru>",
            f"Origin: backport, https://github.com/python/cpython/commit/{branch}",
        ]
    )
    assert ref is not None
    assert ref.commits == (branch,)
    assert ref.source.startswith("Origin: backport, ")
