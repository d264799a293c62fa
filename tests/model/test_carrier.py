"""The lines import appends to a commit message and export takes off again."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from forktool.model.carrier import (
    Carrier,
    carrier_text,
    split_carrier,
    strip_from_mail,
    with_carrier,
)

_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-._/", min_size=1, max_size=30)
_SHA = st.text(alphabet="0123456789abcdef", min_size=40, max_size=40)
_LINE = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=0, max_size=40
).map(str.strip)


@st.composite
def carriers(draw: st.DrawFn) -> Carrier:
    name = draw(_WORD)
    series_line = name + draw(st.sampled_from(["", " -p1"]))
    map_line = f"{name} " + draw(st.sampled_from(["none", "pending"]) | _SHA)
    plain = draw(st.booleans())
    return Carrier(series_line, map_line, plain, "" if plain else draw(st.just("") | _SHA))


@given(
    carrier=carriers(),
    subject=_LINE.filter(bool),
    body=st.lists(_LINE, max_size=4),
    trailers=st.booleans(),
)
def test_the_carrier_comes_back_whole_from_any_message(
    carrier: Carrier, subject: str, body: list[str], trailers: bool
) -> None:
    message = subject + "\n" + ("\n" + "\n".join(body) + "\n" if body else "")
    if trailers:
        message += "\nSigned-off-by: Dana <dana@example.org>\n"
    extra = [("Upstream-PR", "https://git.example.org/app/pulls/1")]
    back_body, back = split_carrier(with_carrier(message, carrier_text(carrier, extra)))
    assert back == carrier
    assert back_body.rstrip("\n") == message.rstrip("\n")


def test_a_from_line_that_is_not_a_commit_id_is_dropped() -> None:
    text = carrier_text(Carrier("a.patch", "a.patch none", False, "f" * 40), [])
    assert "Forktool-From: " + "f" * 40 + "\n" in text
    forged = text.replace("f" * 40, "HEAD; rm -rf /")
    assert split_carrier("a: fix\n\n" + forged)[1] == Carrier("a.patch", "a.patch none", False)


def test_strip_from_mail_takes_the_whole_carrier_out_of_a_format_patch_file() -> None:
    carrier = carrier_text(Carrier("a.patch", "a.patch none", False, "e" * 40), [])
    mail = (
        b"From " + b"0" * 40 + b" Mon Sep 17 00:00:00 2001\nSubject: [PATCH] a\n\n"
        b"Why.\n\n" + carrier.encode() + b"---\n a | 1 +\n\ndiff --git a/a b/a\n"
    )
    assert strip_from_mail(mail) == (
        b"From " + b"0" * 40 + b" Mon Sep 17 00:00:00 2001\nSubject: [PATCH] a\n\n"
        b"Why.\n\n---\n a | 1 +\n\ndiff --git a/a b/a\n"
    )
