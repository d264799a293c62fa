"""The series, upstream.map and ledger parsers: exact findings, and round trips."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from forktool.errors import some_names
from forktool.model.ledger import LedgerEntry, format_ledger, glob_to_regex, parse_ledger
from forktool.model.series import format_series, parse_series
from forktool.model.upstream_map import MapEntry, format_map, parse_map

SHA_A = "a" * 40
SHA_B = "0123456789abcdef0123456789abcdef01234567"


def messages(findings: tuple[object, ...]) -> list[tuple[int | None, str]]:
    return [(f.line, f.message) for f in findings]  # type: ignore[attr-defined]


def test_series_skips_blank_and_comment_lines_and_accepts_p1() -> None:
    series = parse_series(
        b"# header\n\n0001-a.patch\n0002-b.patch -p1  # why\n  sub/0003-c.patch\n"
    )
    assert series.names == ["0001-a.patch", "0002-b.patch", "sub/0003-c.patch"]
    assert [e.line for e in series.entries] == [3, 4, 5]
    assert series.findings == ()


def test_series_refuses_other_options() -> None:
    series = parse_series(b"0001-a.patch -p0\n0002-b.patch -R\n")
    assert messages(series.findings) == [
        (1, "unsupported option '-p0' for '0001-a.patch' (only -p1 is allowed)"),
        (2, "unsupported option '-R' for '0002-b.patch' (only -p1 is allowed)"),
    ]
    # Each says what to do, in every command; and the patches count as listed (the
    # line's own finding says why they are not applied), so nothing calls them unlisted.
    assert all(f.hint and "quilt refresh -p ab" in f.hint for f in series.findings)
    assert [e.name for e in series.refused] == ["0001-a.patch", "0002-b.patch"]


def test_series_refuses_a_patch_listed_twice_under_two_spellings() -> None:
    """quilt opens './0001-a.patch' and 'sub//0002-b.patch' as the same files."""
    series = parse_series(b"0001-a.patch\n./0001-a.patch\nsub/0002-b.patch\nsub//0002-b.patch\n")
    assert messages(series.findings) == [
        (2, "'./0001-a.patch' is listed twice (first on line 1)"),
        (4, "'sub//0002-b.patch' is listed twice (first on line 3)"),
    ]


def test_series_refuses_duplicates_and_case_twins() -> None:
    series = parse_series(b"0001-a.patch\n0001-a.patch\n0001-A.patch\n")
    assert messages(series.findings) == [
        (2, "'0001-a.patch' is listed twice (first on line 1)"),
        (3, "'0001-A.patch' differs from '0001-a.patch' (line 1) only by case"),
    ]


def test_series_refuses_names_that_escape_patches_dir() -> None:
    series = parse_series(b"../evil.patch\n/etc/passwd\n")
    assert [f.line for f in series.findings] == [1, 2]
    assert all("escapes the patches directory" in f.message for f in series.findings)


def test_series_refuses_bom_crlf_and_non_utf8() -> None:
    series = parse_series(b"\xef\xbb\xbf0001-a.patch\r\n0002-\xff.patch\n")
    assert messages(series.findings) == [
        (1, "starts with a UTF-8 byte-order mark"),
        (1, "line ends with CR LF"),
        (2, "line is not valid UTF-8"),
    ]


def test_series_edits_keep_comments() -> None:
    series = parse_series(b"# keep me\n0001-a.patch\n# and me\n0002-b.patch\n")
    assert series.without("0001-a.patch").to_bytes() == b"# keep me\n# and me\n0002-b.patch\n"
    again = series.without("0001-a.patch").with_entry("0001-a.patch", after=None)
    assert again.names == ["0001-a.patch", "0002-b.patch"]


def test_series_keeps_commented_out_entries_as_disabled() -> None:
    # quilt users and Debian maintainers switch a patch off by commenting its line.
    series = parse_series(
        b"#0001-a.patch\n# 0002-b.patch -p1\n## sub/0003-c.patch  # breaks arm64\n"
        b"0004-d.patch\n# a comment of several words\n#-p1\n# ../evil.patch\n#\n"
    )
    assert series.names == ["0004-d.patch"]
    assert [(e.name, e.line) for e in series.disabled] == [
        ("0001-a.patch", 1),
        ("0002-b.patch", 2),
        ("sub/0003-c.patch", 3),
    ]
    assert series.disabled_entry("0002-b.patch") is not None
    assert series.disabled_entry("0004-d.patch") is None
    assert series.findings == ()


_names = st.from_regex(r"\A[0-9]{4}-[a-z][a-z0-9-]{0,20}\.patch\Z")


@given(st.lists(_names, unique=True, max_size=20))
def test_series_round_trip(names: list[str]) -> None:
    series = parse_series(format_series(names))
    assert series.names == names
    assert series.findings == ()
    assert series.to_bytes() == format_series(names)


def test_map_parses_commits_none_and_notes() -> None:
    umap = parse_map(
        f"# c\n0001-a.patch {SHA_A} https://example.org/pr/1\n"
        f"0002-b.patch {SHA_A},{SHA_B}\n0003-c.patch none fork-only tweak\n".encode()
    )
    assert umap.findings == ()
    assert umap.get("0001-a.patch") == MapEntry(
        "0001-a.patch", (SHA_A,), "https://example.org/pr/1", 2
    )
    assert umap.get("0002-b.patch").commits == (SHA_A, SHA_B)  # type: ignore[union-attr]
    assert umap.get("0003-c.patch").fork_only  # type: ignore[union-attr]


def test_map_pending_entry_is_not_fork_only_and_keeps_its_pr() -> None:
    umap = parse_map(b"0001-a.patch pending https://example.org/pull/7 waiting on review\n")
    entry = umap.get("0001-a.patch")
    assert entry is not None and umap.findings == ()
    assert (entry.pending, entry.fork_only, entry.commits) == (True, False, ())
    assert entry.pr == "https://example.org/pull/7"
    assert entry.render() == "0001-a.patch pending https://example.org/pull/7 waiting on review"


def test_map_refuses_short_and_non_hex_commits_and_duplicates() -> None:
    umap = parse_map(
        f"0001-a.patch abc123\n0002-b.patch {'g' * 40}\n0004-d.patch none\n0004-d.patch none\n"
        "0003-c.patch\n".encode()
    )
    assert messages(umap.findings) == [
        (1, "0001-a.patch: 'abc123' is not a 40-hex commit id (abbreviated ids are ambiguous)"),
        (
            2,
            f"0002-b.patch: '{'g' * 40}' is not a 40-hex commit id (abbreviated ids are ambiguous)",
        ),
        (4, "'0004-d.patch' is mapped twice (first on line 3)"),
        (
            5,
            "'0003-c.patch' has no commit (write 'pending [PR-url]' while upstream has not "
            "merged it, or 'none' for a fork-only patch)",
        ),
    ]


_sha = st.text(alphabet="0123456789abcdef", min_size=40, max_size=40)
_note = st.from_regex(r"\A([a-z0-9:/.#-]+( [a-z0-9:/.#-]+)*)?\Z")


@given(
    st.lists(
        st.tuples(
            _names,
            st.lists(_sha, unique=True, max_size=3),
            _note,
            st.sampled_from(["none", "pending"]),
        ),
        max_size=10,
        unique_by=lambda t: t[0],
    )
)
def test_map_round_trip(rows: list[tuple[str, list[str], str, str]]) -> None:
    entries = [
        MapEntry(name, tuple(commits), note, i, "commits" if commits else empty)  # type: ignore[arg-type]
        for i, (name, commits, note, empty) in enumerate(rows, start=1)
    ]
    parsed = parse_map(format_map(entries))
    assert parsed.findings == ()
    assert list(parsed.entries) == entries


def test_ledger_globs() -> None:
    assert glob_to_regex("docs/**").match("docs/a/b.md")
    assert glob_to_regex("*.md").match("README.md")
    assert not glob_to_regex("*.md").match("docs/README.md")
    assert glob_to_regex("**/*.md").match("docs/README.md")
    assert glob_to_regex("**/*.md").match("README.md")
    assert glob_to_regex(".github/workflows/stale-?ot.yml").match(".github/workflows/stale-bot.yml")


def test_ledger_parses_and_refuses() -> None:
    ledger = parse_ledger(
        b"add patches/** permanent the series\n"
        b"del .github/workflows/stale.yml until:upstream-drops-it we do not run bots\n"
        b"mod x permanent no\n"
        b"add y soon why\n"
        b"add z permanent\n"
    )
    assert [(e.action, e.pattern, e.until) for e in ledger.entries] == [
        ("add", "patches/**", None),
        ("del", ".github/workflows/stale.yml", "upstream-drops-it"),
    ]
    assert messages(ledger.findings) == [
        (3, "unknown action 'mod' (expected 'add' or 'del')"),
        (4, "exit criterion 'soon' must be 'permanent' or 'until:<condition>'"),
        (5, "'z' has no rationale: say why the fork diverges here"),
    ]
    assert ledger.declaring("add", "patches/notes/x.md") is ledger.entries[0]


def test_ledger_until_commit() -> None:
    ledger = parse_ledger(f"del a.txt until:{SHA_A} upstream removes it\n".encode())
    assert ledger.entries[0].until_commit == SHA_A


_glob = st.from_regex(r"\A[a-z]{1,8}(/[a-z*]{1,8}){0,2}(/\*\*)?\Z")


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["add", "del"]),
            _glob,
            st.sampled_from(["permanent", "until:v2"]),
            st.from_regex(r"\A[a-z]+( [a-z]+){0,4}\Z"),
        ),
        max_size=8,
    )
)
def test_ledger_round_trip(rows: list[tuple[str, str, str, str]]) -> None:
    entries = [LedgerEntry(a, p, c, r, i) for i, (a, p, c, r) in enumerate(rows, start=1)]  # type: ignore[arg-type]
    parsed = parse_ledger(format_ledger(entries))
    assert parsed.findings == ()
    assert list(parsed.entries) == entries


def test_a_message_names_five_things_then_counts_the_rest() -> None:
    assert some_names(["a"]) == "a"
    assert some_names([f"p{n}" for n in range(5)]) == "p0, p1, p2, p3, p4"
    assert some_names([f"p{n}" for n in range(19)]) == "p0, p1, p2, p3, p4 and 14 more"
