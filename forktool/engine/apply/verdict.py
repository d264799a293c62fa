"""A tried patch's verdict, and the rules every caller shares.

* :func:`is_exact`, the exactness rule: the patch applies with every hunk at
  offset 0 and no fuzz (:func:`applies_unfuzzed`: no fuzz, any offset;
  :func:`applies_shifted`: no fuzz, some hunk at an offset). A fork that declares
  dpkg-source's rule (``apply_rule: dpkg``) accepts what dpkg-source accepts: no fuzz
  ever, offsets reported and accepted, and hunk headers edited by hand accepted where
  the hunk applies without fuzz (:func:`is_exact` with ``rule``, :func:`allows_offset`);
* :func:`acceptable`, what counts as applying for a series.

The one place a tried patch gets its status is
:func:`forktool.engine.apply.attempt.classify`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, NamedTuple

from forktool.config import ApplyRule
from forktool.model.tuples import last_field_aside

Status = Literal[
    "exact", "offset", "fuzz", "fails", "malformed", "unsafe", "unsupported", "not-tried"
]


# Why an attempt failed, as far as the applier's output tells: the hunk's lines
# are not there (context), the file it creates exists, the file it changes or
# deletes does not, the file's mode is not the one the patch starts from (mode),
# or something else (detail says what).
Reason = Literal["", "context", "exists", "missing", "mode", "other"]


@last_field_aside
class HunkPlacement(NamedTuple):
    file: str
    line: int  # where the hunk applied (or was expected) in the file before the patch
    offset: int
    # Its number within the file's diff: not part of the placement (the same placement
    # is equal whichever hunk made it): the last field, left out of equality.
    hunk: int = 0

    def to_json(self) -> dict[str, object]:
        return {"file": self.file, "line": self.line, "offset": self.offset}


class PatchVerdict(NamedTuple):
    patch: str
    status: Status
    message: str = ""
    hunks: tuple[HunkPlacement, ...] = ()
    file: str | None = None  # the culprit file, hunk and patch line when not exact
    hunk: int | None = None
    line: int | None = None  # line in the patch file
    # Tried after earlier patches failed, on the tree without them (--keep-going).
    without: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "patch": self.patch,
            "status": self.status,
            "message": self.message,
            "hunks": [h.to_json() for h in self.hunks],
        }
        if self.file is not None or self.line is not None:
            data.update(file=self.file, hunk=self.hunk, line=self.line)
        if self.without:
            data["without"] = list(self.without)
        return data


# How every verdict whose change is already there begins (it reverse-applies, or a 3-way
# merge of it changes nothing), so that each reader tells such a failure apart by it.
ALREADY_APPLIED = "already applied"


def says_already_applied(message: str) -> bool:
    """The message of a patch whose change is already there (:data:`ALREADY_APPLIED`)."""
    return message.startswith(ALREADY_APPLIED)


def applies_unfuzzed(attempt: Attempt) -> bool:
    """The patch applies without fuzz, at any offset."""
    return attempt.ok and attempt.fuzz == 0


def is_exact(attempt: Attempt, rule: ApplyRule = "exact") -> bool:
    """The exactness rule: the patch applies with every hunk at offset 0 and no fuzz.

    Under dpkg-source's rule (``dpkg``: ``dpkg-source`` applies with ``patch -F 0``)
    a hunk at an offset is accepted too; fuzz never is."""
    if allows_offset(rule):
        return applies_unfuzzed(attempt)
    return applies_unfuzzed(attempt) and not any(p.offset for p in attempt.placements)


def allows_offset(rule: ApplyRule) -> bool:
    """Whether ``rule`` accepts a hunk that applies, unfuzzed, at an offset."""
    return rule == "dpkg"


def applies_shifted(attempt: Attempt) -> bool:
    """The patch applies without fuzz, but only with some hunk at a non-zero offset."""
    return applies_unfuzzed(attempt) and not is_exact(attempt, "exact")


def trip_not_tried(patches: Sequence[PatchVerdict], round_trip: bool, allow_offset: bool) -> str:
    """Why verify's ``round_trip`` is false when no revert ran: a patch did not apply (so
    a script tells that apart from a revert that did not restore the tree); "" else."""
    failed = [
        p.patch
        for p in patches
        if p.status != "not-tried" and not acceptable(p.status, allow_offset)
    ]
    if round_trip or not failed:
        return ""
    return (
        f"the round trip was not tried: {len(failed)} patch(es) did not apply "
        f"(the first: {failed[0]})"
    )


def acceptable(status: Status, allow_offset: bool) -> bool:
    """The one rule for what counts as applying: exact, or offset when allowed."""
    return status == "exact" or (allow_offset and status == "offset")


class Attempt:
    """One patch pushed through an applier, forward or back (filled in as its output
    is read)."""

    def __init__(
        self,
        ok: bool,
        placements: list[HunkPlacement] | None = None,
        failed_file: str | None = None,
        failed_hunk: int | None = None,
        failed_at: int | None = None,
        fuzz: int = 0,
        detail: str = "",
        reason: Reason = "",
        rejected: list[tuple[str, int]] | None = None,
    ) -> None:
        self.ok = ok
        self.placements = [] if placements is None else placements
        self.failed_file = failed_file
        self.failed_hunk = failed_hunk
        self.failed_at = failed_at
        self.fuzz = fuzz
        self.detail = detail
        self.reason = reason
        # Every hunk that did not apply, as (file, hunk number): complete only when the
        # applier went on past a failure (``git apply --reject``).
        self.rejected = [] if rejected is None else rejected

    def __repr__(self) -> str:
        return f"Attempt(ok={self.ok}, reason={self.reason!r}, failed_file={self.failed_file!r})"

    @property
    def fuzz_may_place(self) -> bool:
        """Whether less context could place what failed: only a hunk whose lines were
        not found (never a file that already exists, is missing or has another mode,
        nor a patch the applier could not read, such as a binary diff without full
        blob ids, which GNU patch alone would "apply" as an empty file)."""
        return self.reason == "context"

    def fail(self, reason: Reason, path: str, at: int | None = None) -> None:
        """Record the first failure only: later ones are consequences."""
        if self.failed_file is None:
            self.reason, self.failed_file, self.failed_at = reason, path, at
