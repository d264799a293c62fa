"""Leave-one-out arms: the series, the series minus each patch, and no patches.

An arm is a probe, never a release: its result is a second witness for
``absorbed --probe-results`` (ancestry stays the first). This module names the
arms, hashes a patch set, reads the waivers file and the arm results file, and
checks that every patch has a result or a waiver.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from forktool.errors import FatalError, Finding
from forktool.fork import Fork, Patch
from forktool.inputs import parse_json, read_input
from forktool.model.arm_results import ArmResults, parse_arm_results
from forktool.model.text import decode_lines

FULL = "full"
PATCHLESS = "patchless"
MINUS = "minus-"
_SERIES_NUMBER = re.compile(r"^(\d{4})-")


@dataclass(frozen=True)
class Arm:
    name: str  # full | minus-<patch> | patchless
    patch: str | None  # the patch left out, for a minus arm
    suffix: str  # candidate tag suffix: "", -minus-NNNN, -patchless

    @property
    def args(self) -> list[str]:
        """The ``forktool image build`` options that build this arm."""
        if self.name == PATCHLESS:
            return ["--patchless"]
        if self.patch is not None:
            return ["--minus", self.patch]
        return []

    def to_json(self) -> dict[str, object]:
        return {"arm": self.name, "patch": self.patch, "args": self.args, "tag_suffix": self.suffix}


def patchset_hash(patches: Sequence[Patch]) -> str:
    """sha256 over each patch's name and bytes, in series order (length-prefixed)."""
    digest = hashlib.sha256()
    for patch in patches:
        name = patch.name.encode("utf-8")
        digest.update(b"%d:" % len(name) + name + b"%d:" % len(patch.data) + patch.data)
    return "sha256:" + digest.hexdigest()


def series_numbers(fork: Fork) -> dict[str, str]:
    """Each patch's number in its minus arm's tag: its 4-digit prefix when every patch
    of the series has one of its own (a format-patch series: a number stays put as the
    patches before it retire); else its 1-based position, for every patch (a series
    named otherwise, as most distributions' are, or with a prefix twice)."""
    names = [patch.name for patch in fork.patches]
    prefixes = [_SERIES_NUMBER.match(Path(name).name) for name in names]
    numbers = [match.group(1) for match in prefixes if match is not None]
    if len(numbers) == len(names) and len(set(numbers)) == len(numbers):
        return dict(zip(names, numbers, strict=True))
    return {name: f"{position:04d}" for position, name in enumerate(names, start=1)}


def all_arms(fork: Fork) -> list[Arm]:
    numbers = series_numbers(fork)
    arms = [Arm(FULL, None, "")]
    for patch in fork.patches:
        arms.append(Arm(MINUS + patch.name, patch.name, f"-minus-{numbers[patch.name]}"))
    arms.append(Arm(PATCHLESS, None, "-patchless"))
    return arms


def choose_arm(fork: Fork, minus: str | None, patchless: bool) -> Arm:
    if minus is not None and patchless:
        raise FatalError("--minus and --patchless cannot be combined")
    arms = all_arms(fork)
    if patchless:
        return arms[-1]
    if minus is None:
        if not fork.patches:
            raise FatalError(
                f"{fork.config.series} lists no patches: a full build would prove nothing",
                "build the upstream image with --patchless if that is what you mean",
            )
        return arms[0]
    fork.patch(minus)  # exit 2 naming the series when unknown
    return next(arm for arm in arms if arm.patch == minus)


def arm_named(fork: Fork, name: str) -> Arm:
    for arm in all_arms(fork):
        if arm.name == name:
            return arm
    raise FatalError(
        f"the candidate was built as arm '{name}', which this series does not have",
        "rebuild the candidate from the current series",
    )


def arm_patches(fork: Fork, arm: Arm) -> tuple[Patch, ...]:
    if arm.name == PATCHLESS:
        return ()
    return tuple(p for p in fork.patches if p.name != arm.patch)


# -- waivers ------------------------------------------------------------------------


@dataclass(frozen=True)
class Waiver:
    patch: str
    reason: str
    line: int

    def to_json(self) -> dict[str, object]:
        return {"patch": self.patch, "reason": self.reason, "line": self.line}


def parse_waivers(data: bytes, path: str, fork: Fork) -> tuple[Waiver, ...]:
    """``<patch> <reason...>`` per line, ``#`` comments. Any problem is exit 2."""
    text = decode_lines(data, path)
    problems = list(text.findings)
    waivers: list[Waiver] = []
    names = set(fork.series.names)
    for number, raw in enumerate(text.lines, start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        patch, _, reason = line.partition(" ")
        reason = reason.strip()
        if patch not in names:
            problems.append(
                Finding("error", f"waives '{patch}', which the series does not list", path, number)
            )
        elif not reason:
            problems.append(
                Finding("error", f"the waiver for '{patch}' gives no reason", path, number)
            )
        elif any(w.patch == patch for w in waivers):
            problems.append(Finding("error", f"'{patch}' is waived twice", path, number))
        else:
            waivers.append(Waiver(patch, reason, number))
    if problems:
        from forktool.errors import InputError

        raise InputError(problems)
    return tuple(waivers)


def load_waivers(fork: Fork, override: Path | None) -> tuple[tuple[Waiver, ...], str | None]:
    settings = fork.config.image
    if override is not None:
        path = override
    elif settings is not None and settings.waivers is not None:
        path = fork.config.file(settings.waivers)
    else:
        return (), None
    shown = fork.config.rel(path)
    if not path.is_file():
        raise FatalError(f"{shown}: no such file (arm waivers)", "create it, or fix image.waivers")
    return parse_waivers(read_input(path, shown, follow=override is not None), shown, fork), shown


def load_arm_results(path: Path, option: str) -> ArmResults:
    """The arm-results file ``option`` (``--results``, ``--probe-results``) names."""
    if not path.is_file():
        raise FatalError(f"{option} {path}: no such file")
    return parse_arm_results(parse_json(read_input(path, str(path)), str(path)), str(path))


@dataclass(frozen=True)
class ArmsReport:
    pin: str
    patch_set: str
    arms: tuple[Arm, ...]  # the arms to run (waived patches have none)
    waivers: tuple[Waiver, ...]
    waivers_file: str | None
    checked: bool = False
    results: ArmResults | None = None
    findings: tuple[Finding, ...] = ()

    @property
    def ok(self) -> bool:
        return not any(f.severity == "error" for f in self.findings)

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "pin": self.pin,
            "patch_set": self.patch_set,
            "include": [arm.to_json() for arm in self.arms],
            "waivers": [w.to_json() for w in self.waivers],
            "waivers_file": self.waivers_file,
        }
        if self.checked:
            data["ok"] = self.ok
            data["results"] = self.results.to_json() if self.results else None
            data["findings"] = [f.to_json() for f in self.findings]
        return data


def list_arms(fork: Fork, waivers: tuple[Waiver, ...], waivers_file: str | None) -> ArmsReport:
    waived = {w.patch for w in waivers}
    arms = tuple(arm for arm in all_arms(fork) if arm.patch is None or arm.patch not in waived)
    return ArmsReport(fork.config.pin_tag, patchset_hash(fork.patches), arms, waivers, waivers_file)


def check_arms(report: ArmsReport, results: ArmResults, results_file: str) -> ArmsReport:
    """Every patch needs an arm result or a waiver; results must name series patches."""
    findings: list[Finding] = []
    waived = {w.patch for w in report.waivers}
    series = [arm.patch for arm in report.arms if arm.patch is not None] + sorted(waived)
    if results.full is None:
        findings.append(
            Finding("error", "no result for the full arm", results_file, None, "run the full arm")
        )
    for arm in report.arms:
        if arm.patch is not None and arm.patch not in results.arms:
            findings.append(
                Finding(
                    "error",
                    f"'{arm.patch}' has neither an arm result nor a waiver",
                    results_file,
                    None,
                    f"run the {arm.name} arm, or waive the patch with a reason",
                )
            )
    for patch in results.arms:
        if patch not in series:
            findings.append(
                Finding(
                    "error",
                    f"has a result for '{patch}', which the series does not list",
                    results_file,
                    None,
                    "the results come from another series: rerun the arms",
                )
            )
    return ArmsReport(
        report.pin,
        report.patch_set,
        report.arms,
        report.waivers,
        report.waivers_file,
        checked=True,
        results=results,
        findings=tuple(findings),
    )
