"""The arm-results file: what a leave-one-out run found, pass or fail per arm.

One format, one parser, two readers: ``arms --check --results FILE`` (every patch
needs a result or a waiver) and ``absorbed --probe-results FILE`` (the second
witness beside ancestry). ``{"full": v, "arms": {patch: v}, "patchless": v,
"tag": TAG}`` with v ``"pass"`` or ``"fail"``; every key may be left out, an
unknown key is an error; each reader says which keys it needs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from forktool.errors import FatalError

GateVerdict = Literal["pass", "fail"]
KEYS = ("full", "arms", "patchless", "tag")


@dataclass(frozen=True)
class ArmResults:
    """The gate verdict of each arm that ran: the full series, the series minus each
    patch (``arms``), no patches at all; ``tag``, when given, is where they ran."""

    full: GateVerdict | None
    arms: dict[str, GateVerdict]
    patchless: GateVerdict | None = None
    tag: str | None = None
    source: str = "arm results"

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "full": self.full,
            "arms": dict(self.arms),
            "patchless": self.patchless,
        }
        if self.tag is not None:
            data["tag"] = self.tag
        return data


def parse_arm_results(doc: object, source: str) -> ArmResults:
    """The results in ``doc``, a JSON document already parsed (``source`` names it)."""
    if not isinstance(doc, dict):
        raise FatalError(f"{source}: expected a JSON object with {', '.join(KEYS)}")
    unknown = sorted(set(doc) - set(KEYS))
    if unknown:
        raise FatalError(
            f"{source}: unknown key(s) {', '.join(unknown)}", f"known: {', '.join(KEYS)}"
        )
    arms = doc.get("arms", {})
    if not isinstance(arms, dict):
        raise FatalError(f'{source}: \'arms\' must map each patch to "pass" or "fail"')
    tag = doc.get("tag")
    if tag is not None and not isinstance(tag, str):
        raise FatalError(f"{source}: 'tag' must be a string")
    return ArmResults(
        full=_optional(doc.get("full"), "'full'", source),
        arms={str(k): _verdict(v, f"arm '{k}'", source) for k, v in arms.items()},
        patchless=_optional(doc.get("patchless"), "'patchless'", source),
        tag=tag,
        source=source,
    )


def _optional(value: object, where: str, source: str) -> GateVerdict | None:
    return None if value is None else _verdict(value, where, source)


def _verdict(value: object, where: str, source: str) -> GateVerdict:
    if value == "pass":
        return "pass"
    if value == "fail":
        return "fail"
    raise FatalError(f'{source}: {where} must be "pass" or "fail", not {json.dumps(value)}')
