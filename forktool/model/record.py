"""The retirement record: a generated section of ``FORK.md`` between markers.

Everything outside the markers belongs to the fork's maintainers and is kept
byte for byte. Inside, one markdown table row per retirement or restoration.

A marker counts only as a whole line (the line, stripped of surrounding blanks, is the
marker), and lines are split at ``\\n`` alone. A marker's text quoted in prose, or in a
table cell (a retirement reason, an upstream revert's subject), is no marker; and a
cell can never become a line of its own: every line break in cell text is written as
a space.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

from forktool.errors import FatalError
from forktool.escape import md_unlinked

BEGIN = "<!-- forktool:retirement-record:begin -->"
END = "<!-- forktool:retirement-record:end -->"
COLUMNS = (
    "date",
    "action",
    "patch",
    "upstream PR",
    "commits",
    "first release",
    "tag",
    "witnesses / reason",
)
_HEADER = "| " + " | ".join(COLUMNS) + " |"
_RULE = "|" + "|".join("---" for _ in COLUMNS) + "|"

Action = Literal["retired", "restored"]


@dataclass(frozen=True)
class RecordEntry:
    date: str
    action: Action
    patch: str
    upstream_pr: str
    commits: tuple[str, ...]
    first_release: str
    tag: str
    witnesses: str

    def cells(self) -> list[str]:
        return [
            self.date,
            self.action,
            self.patch,
            self.upstream_pr,
            " ".join(self.commits),
            self.first_release,
            self.tag,
            self.witnesses,
        ]


@dataclass(frozen=True)
class Record:
    before: str  # FORK.md text up to and including the begin marker line
    entries: tuple[RecordEntry, ...]
    after: str  # from the end marker line on

    def with_entry(self, entry: RecordEntry) -> Record:
        return Record(self.before, (*self.entries, entry), self.after)

    def render(self) -> str:
        rows = [_HEADER, _RULE, *(_row(e.cells()) for e in self.entries)]
        return self.before + "\n".join(rows) + "\n" + self.after

    def retired(self) -> set[str]:
        """Patches whose latest record entry is a retirement."""
        state: dict[str, str] = {}
        for entry in self.entries:
            state[entry.patch] = entry.action
        return {patch for patch, action in state.items() if action == "retired"}

    def last_retirement(self, patch: str) -> RecordEntry | None:
        found = [e for e in self.entries if e.patch == patch and e.action == "retired"]
        return found[-1] if found else None


def empty_section() -> str:
    return f"{BEGIN}\n{_HEADER}\n{_RULE}\n{END}\n"


SECTION_INTRO = (
    "## Retirement record\n\nMaintained by `forktool retire`; do not edit between the markers.\n\n"
)

SectionState = Literal["ok", "missing", "broken"]


def marker_lines(text: str, marker: str) -> list[int]:
    """The character offsets of the lines of ``text`` that are ``marker`` (whole lines)."""
    found: list[int] = []
    offset = 0
    for line in text.split("\n"):
        if line.strip() == marker:
            found.append(offset)
        offset += len(line) + 1
    return found


def has_markers(text: str) -> bool:
    """Whether ``text`` has a record marker line (either one)."""
    return bool(marker_lines(text, BEGIN) or marker_lines(text, END))


def section_state(text: str) -> SectionState:
    """``ok``: one begin marker, then one end marker; ``missing``: neither; else ``broken``."""
    begins, ends = marker_lines(text, BEGIN), marker_lines(text, END)
    if not begins and not ends:
        return "missing"
    if len(begins) == 1 and len(ends) == 1 and begins[0] < ends[0]:
        return "ok"
    return "broken"


def with_section(text: str) -> str:
    """``text`` with an empty record section appended (every byte of it kept)."""
    if section_state(text) != "missing":
        return text
    head = text if not text or text.endswith("\n") else text + "\n"
    return head + ("\n" if head else "") + SECTION_INTRO + empty_section()


def broken_markers(text: str) -> str:
    """What is wrong with the markers, in words (for a ``broken`` section)."""
    begins, ends = len(marker_lines(text, BEGIN)), len(marker_lines(text, END))
    if begins > 1 or ends > 1:
        return f"the record markers appear more than once ({begins} begin, {ends} end)"
    if begins != ends:
        missing = END if begins else BEGIN
        return f"one record marker without the other ('{missing}' is missing)"
    return "the record's end marker comes before its begin marker"


def _escape(cell: str) -> str:
    """A cell's text as it is written: it reads back the same (``_unescape``; a
    control character reads back as a space), stays one table row and one cell,
    and renders as text, never as markup.

    ``\\``, ``|``, ``<``, ``!``, ``[``, ``]`` and ``@`` are backslash-escaped: the cell cannot
    end early, and no ``<!-- forktool:retirement-record:... -->`` marker, raw HTML,
    image or link can form in it (a URL's ``://``, a ``www.`` and an address's ``@``
    are escaped too, for GitHub's autolinks).
    Every character that breaks a line for some reader (``str.splitlines``, the
    markdown renderer), every other control character and every format character
    (bidi overrides, zero-width spaces) becomes a space.
    """
    flat = "".join(" " if _breaks_row(ch) else ch for ch in cell)
    return md_unlinked(re.sub(r"[\\|<!\[\]@]", lambda m: "\\" + m.group(), flat))


def _breaks_row(ch: str) -> bool:
    """A character that breaks a line for some reader, or that no medium shows as it
    is (controls, and format characters: bidi overrides, zero-width spaces)."""
    return ch in "\u2028\u2029" or unicodedata.category(ch) in ("Cc", "Cf")


def _unescape(cell: str) -> str:
    out: list[str] = []
    chars = iter(cell)
    for char in chars:
        out.append(next(chars, "") if char == "\\" else char)
    return "".join(out)


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(_escape(c) for c in cells) + " |"


def _split_row(row: str) -> list[str]:
    body = row.strip()[1:-1] if row.strip().endswith("|") else row.strip()[1:]
    cells: list[str] = []
    current: list[str] = []
    escaped = False
    for char in body:
        if escaped:
            current.append("\\" + char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "|":
            cells.append(_unescape("".join(current).strip()))
            current = []
        else:
            current.append(char)
    cells.append(_unescape("".join(current).strip()))
    return cells


def parse_record(text: str, path: str = "FORK.md", *, add_missing: bool = False) -> Record:
    """Split FORK.md around its record section; refuse broken markers.

    A file without any marker has no section yet: refused, or with ``add_missing`` read
    as if the section were appended (writing the record back appends it).
    """
    state = section_state(text)
    if state == "missing" and add_missing:
        text = with_section(text)
    elif state != "ok":
        problem = (
            "has no retirement record section" if state == "missing" else (broken_markers(text))
        )
        raise FatalError(
            f"{path}: {problem}",
            f"{path} needs exactly one '{BEGIN}' line followed by one '{END}' line",
        )
    begin = marker_lines(text, BEGIN)[0]
    end = marker_lines(text, END)[0]
    head_end = text.index("\n", begin) + 1
    before = text[:head_end]
    if not before.endswith("\n"):
        before += "\n"
    entries: list[RecordEntry] = []
    first_line = text.count("\n", 0, head_end) + 1
    for offset, row in enumerate(text[head_end:end].split("\n")):
        if (
            not row.strip()
            or row.strip() in (_HEADER, _RULE)
            or set(row.strip()) <= {"|", "-", " "}
        ):
            continue
        if row.strip().startswith("| date "):
            continue
        cells = _split_row(row)
        if len(cells) != len(COLUMNS) or cells[1] not in ("retired", "restored"):
            raise FatalError(
                f"{path}:{first_line + offset}: retirement record row has the wrong shape",
                f"each row has {len(COLUMNS)} cells: {', '.join(COLUMNS)}",
            )
        entries.append(
            RecordEntry(
                date=cells[0],
                action=cells[1],  # type: ignore[arg-type]
                patch=cells[2],
                upstream_pr=cells[3],
                commits=tuple(cells[4].split()),
                first_release=cells[5],
                tag=cells[6],
                witnesses=cells[7],
            )
        )
    return Record(before, tuple(entries), text[end:])
