"""The lines ``import`` appends to a commit message so ``export`` gives the files back.

A patch's series line and map line live outside the patch, so a commit made from it
would lose them; ``import`` appends them to the message as trailers::

    Forktool-Patch: <the series line, verbatim>
    Forktool-Format: plain                 (a plain diff: the body is its header, verbatim)
    Forktool-From: <sha>                   (the commit id of a mail header's 'From <sha>'
                                            line: the commit made of the patch has its own)
    Upstream-Merge: <commits> | none       (when the patch's header does not say it)
    Upstream-PR: <url>                     (likewise)
    Forktool-Map: <the upstream.map line, verbatim>

``Upstream-Merge``/``Upstream-PR`` let the branch keep the history contract; the
``Forktool-`` lines say where the patch goes back. ``export`` takes everything from
the last ``Forktool-Patch:`` line to the end off the message again. Pure text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PATCH_KEY = "Forktool-Patch"
FORMAT_KEY = "Forktool-Format"
FROM_KEY = "Forktool-From"
MAP_KEY = "Forktool-Map"
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_TRAILER_LINE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*:[ \t]")
_START = re.compile(r"(?:^|\n)" + PATCH_KEY + r":[ \t]*([^\n]*)\n")


@dataclass(frozen=True)
class Carrier:
    series_line: str
    map_line: str
    plain: bool
    from_sha: str = ""  # the patch's 'From <sha>' commit id, when it names one

    @property
    def name(self) -> str:
        return self.series_line.split()[0] if self.series_line.split() else ""


def ends_with_trailers(message: str) -> bool:
    """True when the message's last paragraph is a block of ``Key: value`` lines."""
    paragraph = message.rstrip("\n").rsplit("\n\n", 1)[-1]
    lines = [line for line in paragraph.split("\n") if line.strip()]
    return (
        bool(lines)
        and "\n" in message.rstrip("\n")
        and all(_TRAILER_LINE.match(line) for line in lines)
    )


def carrier_text(carrier: Carrier, extra: list[tuple[str, str]]) -> str:
    """The lines to append (``extra``: trailers such as Upstream-Merge), newline-ended."""
    lines = [f"{PATCH_KEY}: {carrier.series_line}"]
    if carrier.plain:
        lines.append(f"{FORMAT_KEY}: plain")
    if carrier.from_sha:
        lines.append(f"{FROM_KEY}: {carrier.from_sha}")
    lines += [f"{key}: {value}" for key, value in extra]
    lines.append(f"{MAP_KEY}: {carrier.map_line}")
    return "".join(line + "\n" for line in lines)


def plain_message(subject: str, header_lines: tuple[str, ...], carrier: str) -> str:
    """A plain diff's commit message: the subject, its header verbatim, the carrier."""
    header = "".join(line + "\n" for line in header_lines)
    return f"{subject}\n\n{header}\n{carrier}"


def with_carrier(message: str, carrier: str) -> str:
    """A patch's message with the carrier lines appended to its trailer block."""
    body = message if message.endswith("\n") else message + "\n"
    return body + carrier if ends_with_trailers(body) else body + "\n" + carrier


def split_carrier(message: str) -> tuple[str, Carrier | None]:
    """The message without its carrier, and the carrier (None when there is none)."""
    matches = list(_START.finditer(message))
    if not matches:
        return message, None
    start = matches[-1].start() + (1 if message[matches[-1].start()] == "\n" else 0)
    body, tail = message[:start], message[start:]
    fields: dict[str, str] = {}
    for line in tail.split("\n"):
        key, sep, value = line.partition(":")
        if sep and key in (PATCH_KEY, FORMAT_KEY, FROM_KEY, MAP_KEY):
            fields.setdefault(key, value.strip())
    if PATCH_KEY not in fields or MAP_KEY not in fields:
        return message, None
    sha = fields.get(FROM_KEY, "")
    return body, Carrier(
        fields[PATCH_KEY],
        fields[MAP_KEY],
        fields.get(FORMAT_KEY) == "plain",
        sha if _SHA.fullmatch(sha) else "",
    )


def plain_header(body: str) -> str:
    """The verbatim header of a plain diff from its message (without the carrier)."""
    after = body.partition("\n")[2]
    after = after[1:] if after.startswith("\n") else after
    return after[:-1] if after.endswith("\n") else after


def strip_from_mail(data: bytes) -> bytes:
    """A format-patch file with the carrier lines taken out of its message."""
    ends = [at for at in (data.find(b"\n---\n"), data.find(b"\ndiff --git ")) if at != -1]
    head_end = min(ends) if ends else len(data)
    at = data.rfind(b"\n" + PATCH_KEY.encode() + b":", 0, head_end)
    last = data.rfind(b"\n" + MAP_KEY.encode() + b":", 0, head_end)
    if at == -1 or last < at:
        return data
    end = data.find(b"\n", last + 1)
    return data[:at] + data[end:]
