"""What ``absorbed`` reports: per patch its verdict, ancestry, first release and every
witness (evidence, and the probe's outcome where one ran), as its JSON shows them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from forktool.model.arm_results import GateVerdict

Verdict = Literal["retire", "keep", "revisit", "fork-only", "pending"]
EvidenceKind = Literal[
    "cherry-pick",
    "patch-id",
    "content-present",
    "still-applies",
    "still-applies-at-offset",
    "revert",
    "no-longer-applies",
    "offset",
    "hunks-still-apply",
]
Outcome = Literal[
    "retired",
    "still-required",
    "probe-blind",
    "retirement-unconfirmed",
    "broken-on-tag",
    "now-harmful",
]

# Outcomes of the second witness that make ``absorbed`` exit 1.
HARMFUL_OUTCOMES: frozenset[str] = frozenset({"broken-on-tag", "now-harmful"})


@dataclass(frozen=True)
class Evidence:
    kind: EvidenceKind
    commit: str | None
    detail: str
    # ``hunks-still-apply``: (hunks that apply forward and do not reverse-apply, all hunks)
    hunks: tuple[int, int] | None = None

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {"kind": self.kind, "commit": self.commit, "detail": self.detail}
        if self.hunks is not None:
            data["hunks"] = {"still_apply": self.hunks[0], "total": self.hunks[1]}
        return data


@dataclass(frozen=True)
class ProbeWitness:
    """One patch's leave-one-out result, combined with ancestry."""

    arm: GateVerdict  # the series without this patch, on the tag
    outcome: Outcome
    detail: str

    def to_json(self) -> dict[str, object]:
        return {"arm": self.arm, "outcome": self.outcome, "detail": self.detail}


@dataclass(frozen=True)
class PatchAbsorption:
    patch: str
    upstream_commits: tuple[str, ...]
    verdict: Verdict
    ancestor: bool | None  # None only for fork-only and pending
    first_release: str | None
    evidence: tuple[Evidence, ...]
    reason: str  # the verdict, spelled out
    not_in_tag: tuple[str, ...] = ()  # mapped commits that are not ancestors of the tag
    probe: ProbeWitness | None = None
    upstream_pr: str | None = None  # the patch's PR (trailer, else the map note's URL)

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "patch": self.patch,
            "upstream_commits": list(self.upstream_commits),
            "verdict": self.verdict,
            "ancestor": self.ancestor,
            "first_release": self.first_release,
            "evidence": [e.to_json() for e in self.evidence],
            "reason": self.reason,
            "upstream_pr": self.upstream_pr,
        }
        if self.probe is not None:
            data["probe"] = self.probe.to_json()
        return data


@dataclass(frozen=True)
class AbsorbedResult:
    tag: str
    tag_commit: str
    patches: tuple[PatchAbsorption, ...]
    probe_full: GateVerdict | None = None

    @property
    def harmful(self) -> bool:
        """The second witness found a patch that breaks, or cannot be judged on, the tag."""
        return any(
            p.probe is not None and p.probe.outcome in HARMFUL_OUTCOMES for p in self.patches
        )

    def patch(self, name: str) -> PatchAbsorption:
        return next(p for p in self.patches if p.patch == name)

    def retirable(self) -> list[PatchAbsorption]:
        return [p for p in self.patches if p.verdict == "retire"]

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "tag": self.tag,
            "tag_commit": self.tag_commit,
            "patches": [p.to_json() for p in self.patches],
        }
        if self.probe_full is not None:
            data["probe"] = {"full": self.probe_full}
        return data
