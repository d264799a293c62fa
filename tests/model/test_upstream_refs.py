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
        "https://sourceware.org/git/gitweb.cgi?p=x.git;a=commitdiff;h={}",
        "https://git.savannah.gnu.org/cgit/x.git/commit/?h=master&id={}",
        "https://sourceforge.net/p/zsh/code/ci/{}/",
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


def test_an_id_in_a_url_that_names_no_commit_is_no_commit() -> None:
    """Bugzilla's ``attachment.cgi?id=1073339`` (unzip's DEP-3 Origin) is all digits,
    so a hex abbreviation: it was read as a commit, and once a commit starting with
    those digits was here, written to the map. Only a commit URL's ``id=``/``h=`` is."""
    for line in (
        "Origin: other, https://bugzilla.redhat.com/attachment.cgi?id=1073339",
        "Bug: https://bugzilla.example.org/show_bug.cgi?id=1234567",
        "Origin: https://example.org/viewtopic.php?f=3&h=abcdef12",
    ):
        ref = read_refs([line], "subject")
        assert ref is None or ref.commits == (), line


def test_git_describe_names_its_commit() -> None:
    """file's Origin lines name commits as git describe does: ``FILE5_44-5-g813b3304``."""
    ref = read_refs(
        ["Origin: FILE5_44-5-g813b3304 <https://github.com/file/file/commit/FILE5_44-5-g813b3304>"]
    )
    assert ref is not None and ref.commits == ("813b3304",)


def test_not_needed_beside_an_upstream_origin_is_pending_not_fork_only() -> None:
    """DEP-3's ``Forwarded: not-needed`` on a backport (nginx's CVE fixes with an
    hg.nginx.org revision as Origin, gnutls28's ``Origin: backport``) means upstream has
    the change already: ``pending`` (its commit to be named), never ``none``, which
    says no upstream commit can ever retire the patch. A Debian-only patch keeps none."""
    for origin in (
        "Origin: http://hg.nginx.org/nginx/rev/9f2f0a4e8a1c",
        "Origin: https://hg.nginx.org/nginx/raw-rev/49e7db44b57c",
        "Origin: backport, https://gitlab.com/gnutls/gnutls/-/merge_requests/1",
        "Origin: upstream, https://sqlite.org/src/info/5508b56fd2",
    ):
        ref = read_refs([origin, "Forwarded: not-needed"], "subject")
        assert ref is not None and (ref.kind, ref.commits) == ("pending", ()), origin
    for origin in ("Origin: vendor", "Origin: other, https://bugs.example.org/1", ""):
        ref = read_refs([origin, "Forwarded: not-needed"], "subject")
        assert ref is not None and ref.kind == "none", origin
