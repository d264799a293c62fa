"""``forktool check``: the CI gate. Every check that needs no network, one verdict.

Each check is a function from a :class:`CheckContext` to findings, registered in
:data:`CHECKS` with an id users can select or skip. The gate fails closed: a
missing or empty input is a finding, never a pass, and a check that cannot run
(an unknown pin tag, say) reports why as an error finding instead of passing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from forktool.config import Config
from forktool.errors import FatalError, Finding
from forktool.fork import Fork, load_fork
from forktool.git import Git
from forktool.inputs import read_text
from forktool.model.record import parse_record, section_state
from forktool.model.upstream_map import MapEntry

if TYPE_CHECKING:
    from forktool.engine.apply.early import EarlyStart


@dataclass
class CheckContext:
    """What checks share; expensive facts are computed once."""

    config: Config
    git: Git
    early: EarlyStart | None = None  # the apply check's git work, started at once

    @cached_property
    def fork(self) -> Fork:
        return load_fork(self.config, strict=False)

    @cached_property
    def pin_commit(self) -> str:
        from forktool.engine.release.pin_state import require_pin

        return require_pin(self.config, self.git)

    @cached_property
    def tree(self) -> tuple[str, str]:
        """(name, commit) the series applies on: the pin, or its imported tarball."""
        from forktool.engine.release.pin_state import require_tree

        return require_tree(self.config, self.git)


CheckFn = Callable[[CheckContext], list[Finding]]


@dataclass(frozen=True)
class CheckSpec:
    id: str
    title: str
    run: CheckFn
    # None when the check applies to this fork, else why it is skipped.
    skip_reason: Callable[[CheckContext], str | None] = lambda ctx: None


@dataclass(frozen=True)
class CheckResult:
    id: str
    title: str
    findings: tuple[Finding, ...]
    seconds: float
    skipped: str | None = None

    @property
    def ok(self) -> bool:
        return not any(f.severity == "error" for f in self.findings)

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "id": self.id,
            "title": self.title,
            "ok": self.ok,
            "findings": [f.to_json() for f in self.findings],
            "seconds": round(self.seconds, 3),
        }
        if self.skipped:
            data["skipped"] = self.skipped
        return data


NOTHING_RAN = "no check ran: every selected check was skipped or none was selected"


@dataclass(frozen=True)
class GateResult:
    checks: tuple[CheckResult, ...]

    @property
    def ran(self) -> int:
        """How many checks ran (were neither skipped nor deselected)."""
        return sum(1 for c in self.checks if not c.skipped)

    @property
    def nothing_ran(self) -> str | None:
        """Why the gate fails though no check failed: a gate that ran no check proves
        nothing, and must not pass."""
        return NOTHING_RAN if self.ran == 0 else None

    @property
    def ok(self) -> bool:
        return self.ran > 0 and all(c.ok for c in self.checks)

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "ok": self.ok,
            "ran": self.ran,
            "checks": [c.to_json() for c in self.checks],
        }
        if self.nothing_ran:
            data["failure"] = self.nothing_ran
        return data


# -- the checks ------------------------------------------------------------------------


def check_files(ctx: CheckContext) -> list[Finding]:
    """Config and files: series, map, ledger, trailers, patch syntax and path safety."""
    return (
        ctx.fork.all_findings()
        + _mapped_non_commits(ctx)
        + _pending_notices(ctx.fork)
        + _ignored_files(ctx)
    )


def _ignored_files(ctx: CheckContext) -> list[Finding]:
    """A warning for each fork file git ignores and does not track: a commit leaves it
    out, and CI's fresh clone has none (a file ``init`` wrote under a ``*.map`` rule)."""
    config = ctx.config
    files = [config.path, config.series_path, config.map_path, config.ledger_path]
    files += [patch.path for patch in ctx.fork.patches]
    shown = [config.rel(f) for f in files if f.is_file()]
    return [
        Finding(
            "warning",
            f"{name} is ignored by git (a .gitignore rule): a commit leaves it out, and a "
            "fresh clone has none",
            name,
            None,
            f"add it anyway: git add -f {name}",
        )
        for name in ctx.git.ignored(shown)
    ]


def _mapped_non_commits(ctx: CheckContext) -> list[Finding]:
    """A map entry naming a tree, blob or tag object: no commit can retire the patch.
    A commit this repository lacks is one warning for all of them: the gate needs no
    network, so it cannot tell whether a release has them (``absorbed`` fetches them or
    refuses), and never reads the absence as a "no"."""
    entries = [e for e in ctx.fork.upstream_map.entries if e.commits]
    types = ctx.git.object_types(c for e in entries for c in e.commits)
    missing = [(e, c) for e in entries for c in e.commits if types.get(c) is None]
    return _missing_commits(ctx, missing) + [
        Finding(
            "error",
            f"{commit} is a {kind}, not a commit",
            ctx.config.upstream_map,
            entry.line,
            "map the patch to the upstream commit that carries the fix",
        )
        for entry in entries
        for commit in entry.commits
        if (kind := types.get(commit)) not in (None, "commit")
    ]


def _missing_commits(ctx: CheckContext, missing: list[tuple[MapEntry, str]]) -> list[Finding]:
    if not missing:
        return []
    shown = "; ".join(f"{e.patch}: {c[:12]}" for e, c in missing[:3])
    more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
    return [
        Finding(
            "warning",
            f"{len(missing)} mapped commit(s) not in this repository ({shown}{more}): "
            "whether a release absorbed them cannot be told here",
            ctx.config.upstream_map,
            missing[0][0].line,
            "fetch them: forktool absorbed --tag TAG --fetch (check itself never fetches); "
            "a commit upstream does not have is a mapping mistake",
        )
    ]


def _pending_notices(fork: Fork) -> list[Finding]:
    """One notice per patch waiting for upstream with its PR, and one for all of those
    with no PR named (a distribution's own patches, often): never retired until resolved."""
    found = []
    silent = []
    for patch in fork.patches:
        if not patch.pending or patch.mapping is None:
            continue
        if not patch.upstream_pr:
            silent.append(patch)
            continue
        found.append(
            Finding(
                "info",
                f"'{patch.name}' is pending (PR {patch.upstream_pr}): kept, never retired until "
                "its upstream commit is written in",
                fork.config.upstream_map,
                patch.mapping.line,
            )
        )
    if silent:
        found.append(
            Finding(
                "info",
                f"{no_pr_line(p.name for p in silent)}: kept, never retired until an upstream "
                "commit is written in",
                fork.config.upstream_map,
                silent[0].mapping.line if silent[0].mapping else None,
                NO_PR_HINT,
            )
        )
    return found


NO_PR_HINT = (
    "a patch upstream will never take is 'none' in upstream.map (DEP-3 'Forwarded: "
    "not-needed' says so to 'forktool map suggest'); one sent upstream is 'pending <URL>'"
)


def no_pr_line(names: Iterable[str]) -> str:
    """The one line for every pending patch with no PR named."""
    listed = list(names)
    return f"{len(listed)} patch(es) pending with no PR named: {', '.join(listed)}"


def check_pin(ctx: CheckContext) -> list[Finding]:
    """The pinned tag exists and still peels to the recorded commit (and an imported
    tarball, when the fork has one, is a commit on it)."""
    ctx.tree  # noqa: B018 - raises FatalError, reported as a finding
    return []


def check_apply(ctx: CheckContext) -> list[Finding]:
    """Exact apply (under the fork's ``apply_rule``) and exact round trip on the pin."""
    from forktool.engine.apply.verdict import acceptable
    from forktool.engine.apply.verify import verify_series

    fork = ctx.fork
    name, commit = ctx.tree
    result = verify_series(fork, ctx.git, base=name, base_commit=commit, early=ctx.early)
    if result.message:
        return [Finding("error", result.message, ctx.config.series, None)]
    findings = []
    for verdict in result.patches:
        patch = fork.patch(verdict.patch)
        if acceptable(verdict.status, result.allow_offset) and verdict.message:
            # accepted under the fork's rule (an offset, a hand-edited hunk header): said once
            findings.append(
                Finding("info", f"{verdict.status}: {verdict.message}", patch.rel, verdict.line)
            )
        elif verdict.status not in ("exact", "not-tried"):  # not tried: the culprit says why
            findings.append(
                Finding("error", f"{verdict.status}: {verdict.message}", patch.rel, verdict.line)
            )
    if not result.round_trip and not findings:
        findings.append(
            Finding("error", "reverting the series did not restore the pinned tree exactly")
        )
    return findings


def check_record(ctx: CheckContext) -> list[Finding]:
    """The retirement record is readable and no retired patch is still in the series."""
    config = ctx.config
    path = config.record_path
    if not path.is_file():
        return [
            Finding(
                "error",
                f"{config.record} does not exist",
                config.record,
                None,
                "run 'forktool init' or restore the file",
            )
        ]
    text = read_text(path, config.record, follow=False)
    if section_state(text) == "missing":
        return [
            Finding(
                "info",
                "has no retirement record section yet (nothing is retired): "
                "'forktool retire' and 'sync' append it, or run 'forktool init'",
                config.record,
                None,
            )
        ]
    try:
        record = parse_record(text, config.record)
    except FatalError as exc:
        return [Finding("error", exc.message, config.record, None, exc.hint)]
    findings = []
    for name in sorted(record.retired() & set(ctx.fork.series.names)):
        entry = ctx.fork.series.entry(name)
        findings.append(
            Finding(
                "error",
                f"'{name}' was retired (see {config.record}) but is still in the series",
                config.series,
                entry.line if entry else None,
                "remove it, or record its restoration with 'forktool retire --undo'",
            )
        )
    return findings + _lost_fix_findings(ctx)


def _lost_fix_findings(ctx: CheckContext) -> list[Finding]:
    """A pin moved back below a retired fix: the shipped tree has lost it."""
    from forktool.engine.retirement.retire import lost_fixes

    try:
        pin = ctx.pin_commit
    except FatalError:
        return []  # the pin check reports it
    config = ctx.config
    try:
        lost_now = lost_fixes(config, ctx.git, pin)
    except FatalError as exc:
        return [Finding("error", exc.message, config.record, None, exc.hint)]
    return [
        Finding(
            "error",
            lost.describe(config.pin_tag),
            config.record,
            None,
            lost.remedy(),
        )
        for lost in lost_now
    ]


def check_pin_sites(ctx: CheckContext) -> list[Finding]:
    """Every pin site names the pinned tag exactly once; the tag is locked to its commit."""
    from forktool.engine.release.pin_sites import verify_pin_sites

    return list(verify_pin_sites(ctx.config, ctx.git).findings)


def check_align(ctx: CheckContext) -> list[Finding]:
    """Divergence from the pinned tag is exactly what the ledger declares."""
    from forktool.engine.release.align import align

    return list(align(ctx.config, ctx.git).findings)


def check_format(ctx: CheckContext) -> list[Finding]:
    """Every patch file is byte-identical to its form on the pin (the fork's patch_form)."""
    from forktool.engine.patches.fmt import fmt_fork

    name, commit = ctx.tree
    result = fmt_fork(ctx.fork, ctx.git, base=name, base_commit=commit, check=True)
    if result.message:
        return [Finding("error", result.message, ctx.config.series, None)]
    # In the maintainers' form the format is theirs: a patch that cannot be regenerated
    # does not apply, which the apply check reports (once, not again here).
    unapplied = ("error", "pending") if ctx.config.patch_form == "maintainers" else ()
    return [
        Finding(
            "error",
            f"{entry.status}: {entry.message}",
            entry.path,
            None,
            "run 'forktool fmt'",
        )
        for entry in result.entries
        if entry.status != "canonical" and entry.status not in unapplied
    ]


def check_history_contract(ctx: CheckContext) -> list[Finding]:
    """The commits of ``history.branch`` keep the commit contract (one per patch, trailers)."""
    from forktool.engine.patches.history_contract import check_history
    from forktool.engine.revisions import resolve

    branch = ctx.config.history.branch
    assert branch is not None
    result = check_history(ctx.config, ctx.git, resolve(ctx.git, branch, kind="revision"))
    findings = [
        Finding("error", f"{v.commit[:12]} {v.subject}: {v.message}", None, None)
        for v in result.violations
    ]
    if result.message:
        findings.append(Finding("error", result.message))
    return findings


def _no_history_branch(ctx: CheckContext) -> str | None:
    if ctx.config.history.branch is None:
        return "the fork keeps its patches as files (no history.branch in forktool.yaml)"
    return None


CHECKS: list[CheckSpec] = [
    CheckSpec("files", "config and files", check_files),
    CheckSpec("pin", "pinned tag", check_pin),
    CheckSpec("apply", "exact apply and round trip", check_apply),
    CheckSpec("format", "patch files in the fork's form", check_format),
    CheckSpec("pins", "pin sites", check_pin_sites),
    CheckSpec("align", "alignment with the pinned tag", check_align),
    CheckSpec("history", "history contract", check_history_contract, _no_history_branch),
    CheckSpec("record", "retirement record", check_record),
]


def check_ids() -> list[str]:
    return [spec.id for spec in CHECKS]


def select_checks(only: Sequence[str], skip: Sequence[str]) -> list[CheckSpec]:
    known = check_ids()
    for name in (*only, *skip):
        if name not in known:
            raise FatalError(f"unknown check '{name}'", f"checks: {', '.join(known)}")
    return [s for s in CHECKS if (not only or s.id in only) and s.id not in skip]


def run_checks(
    config: Config,
    git: Git,
    specs: Sequence[CheckSpec],
    progress: Callable[[int], None] | None = None,
) -> GateResult:
    ctx = CheckContext(config, git)
    with ExitStack() as stack:
        if any(spec.id == "apply" for spec in specs):
            ctx.early = _apply_started(stack, ctx)
        return GateResult(tuple(_results(ctx, specs, progress)))


def _apply_started(stack: ExitStack, ctx: CheckContext) -> EarlyStart | None:
    """The apply check's git work started at once, on the series file alone, so that
    it runs while the checks before it read the fork (as ``verify`` starts it:
    :mod:`forktool.engine.apply.early`); None when the pin does not resolve (the pin
    check says why)."""
    from forktool.engine.apply.early import default_jobs, early_start

    try:
        _, commit = ctx.tree
    except FatalError:
        return None
    return stack.enter_context(early_start(ctx.git, ctx.config, commit, default_jobs()))


def _results(
    ctx: CheckContext, specs: Sequence[CheckSpec], progress: Callable[[int], None] | None
) -> list[CheckResult]:
    results = []
    for spec in specs:
        started = time.perf_counter()
        reason = spec.skip_reason(ctx)
        if reason is not None:
            findings: list[Finding] = []
        else:
            try:
                findings = spec.run(ctx)
            except FatalError as exc:
                findings = [Finding("error", exc.message, hint=exc.hint)]
        elapsed = time.perf_counter() - started
        results.append(CheckResult(spec.id, spec.title, tuple(findings), elapsed, reason))
        if progress:
            progress(1)
    return results
