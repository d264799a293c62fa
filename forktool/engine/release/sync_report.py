"""What a sync reports (or, for a plan, would do), and that report read back.

A report is saved in the sync's state at every stage and in report.json when the sync
finishes; ``SyncReport.from_json`` reads either back to the same typed report, so its
``to_json`` says again exactly what was written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, cast

from forktool.engine.patches.refresh_result import RefreshEntry, RefreshStatus
from forktool.engine.release.check import CheckResult, GateResult
from forktool.engine.retirement.absorption import (
    Evidence,
    EvidenceKind,
    Outcome,
    PatchAbsorption,
    ProbeWitness,
    Verdict,
)
from forktool.errors import Finding, Severity
from forktool.model.arm_results import GateVerdict

Stage = Literal["retire", "refresh", "bump", "merge", "check", "done"]


STAGES: tuple[Stage, ...] = ("retire", "refresh", "bump", "merge", "check", "done")


@dataclass(frozen=True)
class Retired:
    patch: str
    commits: tuple[str, ...]
    first_release: str | None
    witnesses: str

    def to_json(self) -> dict[str, object]:
        return {
            "patch": self.patch,
            "upstream_commits": list(self.commits),
            "first_release": self.first_release,
            "witnesses": self.witnesses,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Retired:
        return cls(
            str(data["patch"]),
            _strings(data, "upstream_commits"),
            optional_str(data, "first_release"),
            str(data["witnesses"]),
        )


@dataclass(frozen=True)
class PinChange:
    file: str
    line: int
    old: str
    new: str

    def to_json(self) -> dict[str, object]:
        return {"file": self.file, "line": self.line, "old": self.old, "new": self.new}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> PinChange:
        return cls(str(data["file"]), int(str(data["line"])), str(data["old"]), str(data["new"]))


@dataclass(frozen=True)
class SyncReport:
    """What a sync did (or, for a plan, would do)."""

    tag: str
    tag_commit: str
    previous_tag: str
    branch: str | None
    stage: Stage
    retired: tuple[Retired, ...] = ()
    kept: tuple[PatchAbsorption, ...] = ()  # absorbed verdicts of the patches kept
    refreshed: tuple[RefreshEntry, ...] = ()
    range_diff: str = ""
    pins: tuple[PinChange, ...] = ()
    conflicts: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    check: GateResult | None = None
    check_ok: bool | None = None
    commits: tuple[str, ...] = ()
    message: str = ""
    dry_run: bool = False
    worktree: str | None = None
    merge_tag: bool = False  # a merged-layout fork: the sync merges (merged) TAG
    # Kept patches whose change TAG already carries: each needs a human decision, all
    # recorded by the one command ``decide``.
    decisions: tuple[str, ...] = ()
    decide: str = ""

    @property
    def merged(self) -> tuple[str, ...]:
        """The patches a 3-way merge moved: a reviewer looks at these first."""
        return tuple(e.patch for e in self.refreshed if e.status == "merged")

    @property
    def pending(self) -> tuple[PatchAbsorption, ...]:
        """The kept patches waiting for upstream (mapped ``pending``), with their PR."""
        return tuple(p for p in self.kept if p.verdict == "pending")

    @property
    def absorbs_everything(self) -> bool:
        """TAG absorbed the whole series: the sync leaves it empty, and the gate fails
        closed on an empty series (nothing to verify)."""
        return bool(self.retired) and not self.kept

    @property
    def needs_hands(self) -> bool:
        return bool(self.conflicts) or self.stage not in ("done",) or self.check_ok is False

    @property
    def ok(self) -> bool:
        if self.dry_run:
            return not self.conflicts
        return self.stage == "done" and not self.conflicts and self.check_ok is not False

    def to_json(self) -> dict[str, object]:
        return {
            "tag": self.tag,
            "tag_commit": self.tag_commit,
            "previous_tag": self.previous_tag,
            "branch": self.branch,
            "ok": self.ok,
            "dry_run": self.dry_run,
            "stage": self.stage,
            "retired": [r.to_json() for r in self.retired],
            "kept": [p.to_json() for p in self.kept],
            "refreshed": [e.to_json() for e in self.refreshed],
            "merged": list(self.merged),
            "range_diff": self.range_diff,
            "pins": [p.to_json() for p in self.pins],
            "conflicts": list(self.conflicts),
            "notes": list(self.notes),
            "check": self.check.to_json() if self.check is not None else None,
            "check_ok": self.check_ok,
            "commits": list(self.commits),
            "worktree": self.worktree,
            "message": self.message,
            "merge_tag": self.merge_tag,
            "decisions": list(self.decisions),
            "decide": self.decide,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> SyncReport:
        """A report saved in the sync state (or a finished sync's report.json)."""
        stage = str(data["stage"])
        if stage not in STAGES:
            raise ValueError(f"unknown stage {stage!r}")
        check, check_ok = data.get("check"), data.get("check_ok")
        return cls(
            tag=str(data["tag"]),
            tag_commit=str(data["tag_commit"]),
            previous_tag=str(data["previous_tag"]),
            branch=optional_str(data, "branch"),
            stage=stage,
            retired=tuple(Retired.from_json(r) for r in _dicts(data, "retired")),
            kept=tuple(_absorption(p) for p in _dicts(data, "kept")),
            refreshed=tuple(_refresh_entry(e) for e in _dicts(data, "refreshed")),
            range_diff=str(data.get("range_diff", "")),
            pins=tuple(PinChange.from_json(p) for p in _dicts(data, "pins")),
            conflicts=_strings(data, "conflicts"),
            notes=_strings(data, "notes"),
            commits=_strings(data, "commits"),
            check=_gate(check) if isinstance(check, dict) else None,
            check_ok=check_ok if isinstance(check_ok, bool) else None,
            message=str(data.get("message", "")),
            dry_run=data.get("dry_run") is True,
            worktree=optional_str(data, "worktree"),
            merge_tag=data.get("merge_tag") is True,
            decisions=_strings(data, "decisions"),
            decide=str(data.get("decide", "")),
        )


# -- the typed values a saved report holds, read back -----------------------------------


def _list(data: Mapping[str, object], key: str) -> list[object]:
    value = data.get(key)
    return list(value) if isinstance(value, list) else []


def _dicts(data: Mapping[str, object], key: str) -> list[dict[str, object]]:
    return [item for item in _list(data, key) if isinstance(item, dict)]


def _strings(data: Mapping[str, object], key: str) -> tuple[str, ...]:
    return tuple(str(item) for item in _list(data, key))


def optional_str(data: Mapping[str, object], key: str) -> str | None:
    """``data[key]`` as text, None when it is null or absent (an empty text stays one)."""
    value = data.get(key)
    return None if value is None else str(value)


def _refresh_entry(data: Mapping[str, object]) -> RefreshEntry:
    return RefreshEntry(
        str(data["patch"]),
        str(data["path"]),
        cast(RefreshStatus, str(data["status"])),
        str(data.get("message", "")),
        bool(data.get("bytes_changed")),
    )


def _absorption(data: Mapping[str, object]) -> PatchAbsorption:
    """A kept patch's absorbed verdict (``PatchAbsorption.to_json`` read back)."""
    ancestor = data.get("ancestor")
    probe = data.get("probe")
    return PatchAbsorption(
        patch=str(data["patch"]),
        upstream_commits=_strings(data, "upstream_commits"),
        verdict=cast(Verdict, str(data["verdict"])),
        ancestor=ancestor if isinstance(ancestor, bool) else None,
        first_release=optional_str(data, "first_release"),
        evidence=tuple(_evidence(e) for e in _dicts(data, "evidence")),
        reason=str(data.get("reason", "")),
        probe=_probe(probe) if isinstance(probe, dict) else None,
        upstream_pr=optional_str(data, "upstream_pr"),
    )


def _evidence(data: Mapping[str, object]) -> Evidence:
    hunks = data.get("hunks")
    return Evidence(
        cast(EvidenceKind, str(data["kind"])),
        optional_str(data, "commit"),
        str(data.get("detail", "")),
        (int(str(hunks["still_apply"])), int(str(hunks["total"])))
        if isinstance(hunks, dict)
        else None,
    )


def _probe(data: Mapping[str, object]) -> ProbeWitness:
    return ProbeWitness(
        cast(GateVerdict, str(data["arm"])),
        cast(Outcome, str(data["outcome"])),
        str(data.get("detail", "")),
    )


def _gate(data: Mapping[str, object]) -> GateResult:
    """The check's result (``GateResult.to_json`` read back: ``ok``, ``ran`` and
    ``failure`` follow from the checks again)."""
    return GateResult(tuple(_check(c) for c in _dicts(data, "checks")))


def _check(data: Mapping[str, object]) -> CheckResult:
    seconds = data.get("seconds")
    return CheckResult(
        str(data["id"]),
        str(data.get("title", "")),
        tuple(_finding(f) for f in _dicts(data, "findings")),
        float(seconds) if isinstance(seconds, int | float) else 0.0,
        optional_str(data, "skipped"),
    )


def _finding(data: Mapping[str, object]) -> Finding:
    line = data.get("line")
    return Finding(
        cast(Severity, str(data["severity"])),
        str(data.get("message", "")),
        optional_str(data, "path"),
        line if isinstance(line, int) else None,
        optional_str(data, "hint"),
    )
