"""Decoding the fork's line-oriented files, strictly and with line numbers."""

from __future__ import annotations

from typing import NamedTuple

from forktool.errors import Finding

BOM = b"\xef\xbb\xbf"


class TextLines(NamedTuple):
    """A file's lines (without newlines), or the findings that kept us from reading it."""

    lines: tuple[str, ...]
    findings: tuple[Finding, ...]


def decode_lines(data: bytes, path: str) -> TextLines:
    """Split a line-oriented file, refusing a BOM, CR LF endings and non-UTF-8 bytes.

    Each of those would otherwise become part of a patch name or a commit id and
    fail later with a confusing message, so they are named here with their line.
    """
    findings: list[Finding] = []
    if data.startswith(BOM):
        findings.append(
            Finding(
                "error",
                "starts with a UTF-8 byte-order mark",
                path,
                1,
                "save the file without a BOM",
            )
        )
        data = data[len(BOM) :]
    raw_lines = data.split(b"\n")
    if raw_lines and raw_lines[-1] == b"":
        raw_lines.pop()
    lines: list[str] = []
    for number, raw in enumerate(raw_lines, start=1):
        if raw.endswith(b"\r"):
            findings.append(
                Finding(
                    "error",
                    "line ends with CR LF",
                    path,
                    number,
                    "convert the file to LF line endings",
                )
            )
            raw = raw.rstrip(b"\r")
        if b"\0" in raw:
            findings.append(Finding("error", "line contains a NUL byte", path, number))
        try:
            lines.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            findings.append(Finding("error", "line is not valid UTF-8", path, number))
            lines.append(raw.decode("utf-8", "replace"))
    return TextLines(tuple(lines), tuple(findings))


def split_comment(line: str) -> str:
    """The line without a trailing ``# comment`` (a ``#`` that starts a word)."""
    stripped = line.strip()
    if stripped.startswith("#"):
        return ""
    for index, char in enumerate(stripped):
        if char == "#" and stripped[index - 1].isspace():
            return stripped[:index].rstrip()
    return stripped


def whole_number(text: str, max_digits: int = 18) -> int | None:
    """``text`` as a non-negative whole number written in ASCII digits (at most
    ``max_digits`` of them); None otherwise. ``str.isdigit`` accepts ``²`` and other
    Unicode digits that ``int`` refuses, and ``int`` refuses more than 4,300 digits:
    every number forktool reads from a file, a name or the environment goes through here."""
    if not 0 < len(text) <= max_digits or not text.isascii() or not text.isdigit():
        return None
    return int(text)


def line_count(data: bytes) -> int:
    """Lines in a file's bytes, a last line without its newline included."""
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
