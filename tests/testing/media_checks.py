"""Hostile text and one check per output medium: did data stay data?

Shared by tests/system/test_media.py (renderers fed hostile strings) and
tests/system/test_hostile_text.py (every command run on a fixture upstream whose subjects,
author names and patch names are hostile).
"""

from __future__ import annotations

import json
import re
import unicodedata
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from markdown_it.token import Token

# Pieces an upstream stranger may write; the property tests join them with arbitrary text.
HOSTILE_PIECES = [
    "[/b]",
    "[bold red]x[/]",
    "Submitted [oe-core@lists.openembedded.org]",
    "Inappropriate [/usr/lib paths]",
    "\x1b[31mred\x1b[0m",
    "\x1b]8;;https://evil.example/\x07link\x1b]8;;\x07",
    "\x9b2J",
    "<!--<script>",
    "</script>",
    "</table>",
    "<img src=x onerror=alert(1)>",
    "![i](https://evil.example/i.png)",
    "@octocat",
    "|",
    "`",
    "```",
    "%0A::error::forged",
    "\n::error::forged",
    "\r\n",
    "\x00\x01\x08\x0b\x0c\x1f\x7f",
    "\ud800",
    "\ufffe",
    "\u202eevil",
    "a\u200bb\u200dc\ufeff\u00ad",
    "see https://evil.example/login",
    "www.evil.example",
    "WWW.evil.example/x",
    "mailto:a@evil.example",
    "&amp;",
    "\\",
    "1. ",
    "- ",
    "# ",
    "x" * 300,
]

SGR = re.compile(r"\x1b\[[0-9;]*m")


def terminal_ok(text: str, *, colour: bool = False) -> None:
    """Nothing but printable characters and line breaks (and, with ``colour``,
    forktool's own SGR colour sequences) reaches the terminal."""
    shown = SGR.sub("", text) if colour else text
    bad = sorted(
        {
            ch
            for ch in shown
            if ch != "\n" and unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp")
        }
    )
    assert not bad, f"raw control characters reach the terminal: {bad!r}"
    assert "Traceback" not in text


def xml_ok(text: str) -> ET.Element:
    """The XML parses (every character XML 1.0 forbids was kept out), and holds no
    character every medium shows as an escape (DEL, C1 controls, format characters)."""
    disguising = [
        ch
        for ch in text
        if unicodedata.category(ch) in ("Cf", "Zl", "Zp") or "\x7f" <= ch <= "\x9f"
    ]
    assert not disguising, f"raw characters in the XML: {disguising!r}"
    return ET.fromstring(text.encode("utf-8"))


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self._script: dict[str, str | None] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "script":
            self._script = dict(attrs)
            self.scripts.append((self._script, ""))

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._script = None

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            attrs, text = self.scripts[-1]
            self.scripts[-1] = (attrs, text + data)


FORECAST_TAGS = {
    "html",
    "head",
    "meta",
    "title",
    "style",
    "body",
    "h1",
    "small",
    "ul",
    "li",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "br",
    "div",
    "p",
    "span",
    "script",
}


def html_ok(page: str) -> dict[str, Any]:
    """The forecast page parses into forktool's own elements only; its two scripts
    cannot be ended early or put the browser's parser into the escaped state
    (no ``<!--``, ``<script``, ``</script`` inside); the embedded JSON parses.
    Returns the embedded JSON."""
    assert not re.search("[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]", page)
    assert not [ch for ch in page if unicodedata.category(ch) == "Cf"], "a format character"
    parser = _Page()
    parser.feed(page)
    parser.close()
    assert set(parser.tags) <= FORECAST_TAGS, set(parser.tags) - FORECAST_TAGS
    assert [attrs.get("type") for attrs, _ in parser.scripts] == ["application/json", None]
    for _, body in parser.scripts:
        lowered = body.lower()
        assert "<!--" not in lowered and "<script" not in lowered and "</script" not in lowered
    data: dict[str, Any] = json.loads(parser.scripts[0][1])
    return data


def _tokens(tokens: list[Token]) -> list[Token]:
    found = []
    for token in tokens:
        found.append(token)
        if token.children:
            found += _tokens(token.children)
    return found


def _gfm_www(state: StateCore) -> None:
    """GitHub's autolink extension links ``www.`` with no scheme, which linkify does
    not: a text token holding one (an escaped ``www\\.`` is two tokens until
    text_join) is noted in ``env["www"]``."""
    for token in state.tokens:
        for child in token.children or []:
            if child.type == "text" and re.search(r"(?i)www\.", child.content):
                state.env.setdefault("www", []).append(child.content)


# CommonMark with tables, and links with no markup as GitHub makes them: linkify for a
# scheme's '://' and 'mailto:' (not for bare domains or '//', which GitHub leaves
# alone), and _gfm_www for 'www.'.
MARKDOWN = MarkdownIt("commonmark", {"html": True, "linkify": True}).enable(["table", "linkify"])
MARKDOWN.linkify.set({"fuzzy_link": False})
MARKDOWN.linkify.add("//", None)
MARKDOWN.core.ruler.before("text_join", "gfm_www", _gfm_www)
MARKDOWN_OWN_HTML = {
    "<details><summary>range-diff of the refreshed series</summary>\n",
    "</details>\n",
}


def markdown_ok(text: str, *, mentions: bool = False) -> str:
    """The markdown has no raw HTML, image or link from data (forktool's own
    ``<details>`` excepted) and, unless ``mentions`` (a file: GitHub notifies no one),
    no mention; returns it rendered as HTML."""
    env: dict[str, Any] = {}
    tokens = _tokens(MARKDOWN.parse(text, env))
    assert not env.get("www"), f"a www. link from data: {env['www']!r}"
    for token in tokens:
        if token.type in ("html_inline", "html_block"):
            assert token.content in MARKDOWN_OWN_HTML, f"raw HTML from data: {token.content!r}"
        assert token.type not in ("image", "link_open"), f"{token.type} from data"
    rendered = MARKDOWN.render(text)
    if mentions:
        return rendered
    prose = re.sub(r"<code>.*?</code>", "", rendered, flags=re.S)  # GitHub mentions no one there
    assert not re.search(r"(?<![\w\u200b])@octocat", prose), "an @mention renders"
    return rendered


def github_ok(text: str, findings: int) -> None:
    """One workflow command per finding and the verdict line: data forged none."""
    lines = text.splitlines()
    assert len(lines) == findings + 1
    assert all(line.startswith("::") for line in lines[:-1])
    assert lines[-1].startswith("forktool check: ")
    assert "\r" not in text
