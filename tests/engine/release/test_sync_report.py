"""The sync report's JSON, pinned key by key and in order, on the sync fixture fork.

A finished sync (retired, kept and pending patches, a refresh at an offset, pins, the
check's result), the same report read back from report.json and from the state of a
stopped sync, and a plan with decisions to make: each is compared, as emitted text
(key order included), with the JSON written here. Commit ids are named (``<v2>``,
``<sync 1>``, ...) and a check's seconds read 0, so only what forktool decides shows.
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from testing.helpers import run_cli
from testing.sync_fork import _drop_conflicting_patch, v3_with_0002_cherry_picked

from forktool.builder import RepoBuilder
from forktool.engine.patches.refresh_result import RefreshEntry
from forktool.engine.release.check import CheckResult, GateResult
from forktool.engine.release.sync_report import STAGES, PinChange, Retired, SyncReport
from forktool.engine.retirement.absorption import Evidence, PatchAbsorption, ProbeWitness
from forktool.errors import Finding

PR = "https://forge.example/up/pull/7"
SYNC_BRANCH = "forktool/sync-v2"


@pytest.fixture
def pinned_fork(sync_fork: RepoBuilder, monkeypatch: pytest.MonkeyPatch) -> RepoBuilder:
    """The sync fixture with fixed dates, 0004 dropped (no conflict) and 0002 waiting
    for a PR: kept patches of three kinds, and a check with a finding."""
    for key in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):
        monkeypatch.setenv(key, "2024-02-02T00:00:00Z")
    monkeypatch.setenv("FORKTOOL_DATE", "2024-02-02")
    _drop_conflicting_patch(sync_fork)
    umap = sync_fork.read("upstream.map").replace("0002-b.patch none", f"0002-b.patch pending {PR}")
    sync_fork.commit("fork: 0002 waits for a PR\n", {"upstream.map": umap})
    return sync_fork


def _names(fork: RepoBuilder) -> dict[str, str]:
    """Every commit id the reports may name -> the placeholder the pinned JSON uses."""
    tags = fork.git.out(["tag", "--list"], purpose="t").split()
    names = {fork.rev(tag): f"<{tag}>" for tag in tags}
    names[fork.rev("v2~1")] = "<fix>"
    branch = fork.git.branch_commit(SYNC_BRANCH)
    if branch is not None:
        log = fork.git.out(["rev-list", "--reverse", f"main..{SYNC_BRANCH}", "^v2"], purpose="t")
        names.update({c: f"<sync {i}>" for i, c in enumerate(log.split(), 1)})
    return names


def _pinned(data: object, fork: RepoBuilder) -> str:
    """``data`` as text with commit ids named, a check's seconds 0, the repository
    path ``<repo>`` and range-diff's abbreviated ids ``<id>``."""
    names = _names(fork)

    def walk(value: object, key: str = "") -> object:
        if isinstance(value, dict):
            return {k: walk(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        if key == "seconds":
            assert isinstance(value, float | int) and round(value, 3) == value
            return 0.0
        if isinstance(value, str):
            value = value.replace(str(fork.path), "<repo>")
            if key == "range_diff":
                return re.sub(r"\b[0-9a-f]{7,12}\b", "<id>", value)
            return re.sub(r"\b[0-9a-f]{40}\b", lambda m: names.get(m[0], "<unknown>"), value)
        return value

    return json.dumps(walk(data), indent=2)


def _fork_only(patch: str, *evidence: dict[str, object]) -> dict[str, object]:
    """A kept patch mapped to 'none', as ``absorbed`` judges it."""
    return {
        "patch": patch,
        "upstream_commits": [],
        "verdict": "fork-only",
        "ancestor": None,
        "first_release": None,
        "evidence": list(evidence),
        "reason": "mapped to 'none': no upstream commit can retire it",
        "upstream_pr": None,
    }


def _offset(tag: str) -> dict[str, object]:
    return {
        "kind": "offset",
        "commit": None,
        "detail": f"c.py: hunk 1 applies only at offset +3 (line 8) on {tag}; run 'forktool refresh'",
    }


KEPT = [
    {
        "patch": "0002-b.patch",
        "upstream_commits": [],
        "verdict": "pending",
        "ancestor": None,
        "first_release": None,
        "evidence": [],
        "reason": f"waiting for PR {PR}: never retired until its commit is in upstream.map "
        "(forktool upstream resolve)",
        "upstream_pr": PR,
    },
    _fork_only("0003-c.patch", _offset("v2")),
]
RETIRED = [
    {
        "patch": "0001-a.patch",
        "upstream_commits": ["<fix>"],
        "first_release": "v2",
        "witnesses": "ancestry: 21bcb1aabcb7 in v2; content-present",
    }
]
PINS = [
    {"file": "forktool.yaml", "line": 2, "old": "v1", "new": "v2"},
    {"file": "forktool.yaml", "line": 3, "old": "<v1>", "new": "<v2>"},
]
NOTE = (
    f"0002-b.patch: pending: waiting for PR {PR}: never retired until its commit is in "
    "upstream.map (forktool upstream resolve)"
)


def _check(
    title: str, check_id: str, findings: list[object] | None = None, **extra: object
) -> dict[str, object]:
    return {
        "id": check_id,
        "title": title,
        "ok": True,
        "findings": findings or [],
        "seconds": 0.0,
        **extra,
    }


CHECK = {
    "ok": True,
    "ran": 7,
    "checks": [
        _check(
            "config and files",
            "files",
            findings=[
                {
                    "severity": "info",
                    "message": f"'0002-b.patch' is pending (PR {PR}): kept, never retired until "
                    "its upstream commit is written in",
                    "path": "upstream.map",
                    "line": 1,
                }
            ],
        ),
        _check("pinned tag", "pin"),
        _check("exact apply and round trip", "apply"),
        _check("patch files in the fork's form", "format"),
        _check("pin sites", "pins"),
        _check("alignment with the pinned tag", "align"),
        _check(
            "history contract",
            "history",
            skipped="the fork keeps its patches as files (no history.branch in forktool.yaml)",
        ),
        _check("retirement record", "record"),
    ],
}
REPORT_MD = "<repo>/.git/forktool/sync/v2/forktool/sync-v2/report.md"


def _finished(message: str) -> dict[str, object]:
    return {
        "tag": "v2",
        "tag_commit": "<v2>",
        "previous_tag": "v1",
        "branch": SYNC_BRANCH,
        "ok": True,
        "dry_run": False,
        "stage": "done",
        "retired": RETIRED,
        "kept": KEPT,
        "refreshed": [
            {
                "patch": "0002-b.patch",
                "path": "patches/0002-b.patch",
                "status": "unchanged",
                "message": "",
                "bytes_changed": False,
            },
            {
                "patch": "0003-c.patch",
                "path": "patches/0003-c.patch",
                "status": "rebased",
                "message": "c.py: hunk 1 applies only at offset +3 (line 8) on v2; regenerated",
                "bytes_changed": True,
            },
        ],
        "merged": [],
        "range_diff": "1:  <id> = 1:  <id> b: fork change\n2:  <id> = 2:  <id> c: fork change\n",
        "pins": PINS,
        "conflicts": [],
        "notes": [NOTE],
        "check": CHECK,
        "check_ok": True,
        "commits": ["<sync 1>", "<sync 2>", "<sync 3>", "<sync 4>"],
        "worktree": None,
        "message": message,
        "merge_tag": True,
        "decisions": [],
        "decide": "",
    }


def test_a_finished_sync_report_is_the_pinned_json_emitted_written_and_read_back(
    pinned_fork: RepoBuilder,
) -> None:
    root = pinned_fork.path
    done = run_cli("-C", root, "sync", "v2", "--no-fetch", "--format", "json")
    assert done.code == 0, done.out
    said = f"synced to v2 on branch {SYNC_BRANCH} (check passed); report: {REPORT_MD}"
    assert _pinned(done.json(), pinned_fork) == json.dumps(_finished(said), indent=2)
    written = pinned_fork.git.git_dir() / "forktool" / "sync" / "v2" / SYNC_BRANCH / "report.json"
    # report.json is the report before its closing message was added.
    assert _pinned(json.loads(written.read_text()), pinned_fork) == json.dumps(
        _finished(""), indent=2
    )
    again = run_cli("-C", root, "sync", "v2", "--no-fetch", "--format", "json")
    assert again.code == 0, again.out
    nothing = f"already synced: {SYNC_BRANCH} pins v2; nothing to do"
    assert _pinned(again.json(), pinned_fork) == json.dumps(_finished(nothing), indent=2)


def test_a_stopped_sync_reads_its_report_back_from_its_state_unchanged(
    sync_fork: RepoBuilder,
) -> None:
    """The conflict stop saves its report (with the kept patches) in the state; --abort
    reads it back and says the same JSON, only its own message and no worktree."""
    stopped = run_cli("-C", sync_fork.path, "sync", "v2", "--no-fetch", "--format", "json")
    assert stopped.code == 1
    saved = {**stopped.json(), "worktree": None}
    state = json.loads((sync_fork.git.git_dir() / "forktool" / "sync" / "state.json").read_text())
    assert json.dumps(state["report"], indent=2) == json.dumps(saved, indent=2)
    assert [k["patch"] for k in saved["kept"]] == ["0002-b.patch", "0003-c.patch", "0004-d.patch"]  # type: ignore[union-attr,index]
    aborted = run_cli("-C", sync_fork.path, "sync", "--abort", "--format", "json")
    assert aborted.code == 0
    message = f"sync to v2 aborted: branch {SYNC_BRANCH} and its worktree removed"
    assert json.dumps(aborted.json(), indent=2) == json.dumps(
        {**saved, "message": message}, indent=2
    )


PLAN_V3 = {
    "tag": "v3",
    "tag_commit": "<v3>",
    "previous_tag": "v1",
    "branch": None,
    "ok": False,
    "dry_run": True,
    "stage": "retire",
    "retired": [
        {
            "patch": "0001-a.patch",
            "upstream_commits": ["<fix>"],
            "first_release": "v2",
            "witnesses": "ancestry: 21bcb1aabcb7 in v3; content-present",
        }
    ],
    "kept": [
        _fork_only(
            "0002-b.patch",
            {
                "kind": "patch-id",
                "commit": "<v3>",
                "detail": "996542757723 in v3 makes the same change (same patch-id --stable)",
            },
            {
                "kind": "content-present",
                "commit": None,
                "detail": "the patch reverse-applies exactly on v3",
            },
        ),
        _fork_only("0003-c.patch", _offset("v3")),
        _fork_only(
            "0004-d.patch",
            {
                "kind": "no-longer-applies",
                "commit": None,
                "detail": "d.py: hunk 1 does not apply at line 3 on v3: its lines are not there",
            },
        ),
    ],
    "refreshed": [
        {
            "patch": "0002-b.patch",
            "path": "patches/0002-b.patch",
            "status": "conflict",
            "message": "already applied: the change is present on v3 (it reverse-applies exactly); retire it first, or drop it",
            "bytes_changed": False,
        },
        {
            "patch": "0003-c.patch",
            "path": "patches/0003-c.patch",
            "status": "rebased",
            "message": "c.py: hunk 1 applies only at offset +3 (line 8) on v3; would be regenerated",
            "bytes_changed": False,
        },
        {
            "patch": "0004-d.patch",
            "path": "patches/0004-d.patch",
            "status": "conflict",
            "message": "d.py: hunk 1 does not apply at line 3 on v3: its lines are not there; a 3-way merge conflicts too (in d.py)",
            "bytes_changed": False,
        },
    ],
    "merged": [],
    "range_diff": "",
    "pins": [
        {"file": "forktool.yaml", "line": 2, "old": "v1", "new": "v3"},
        {"file": "forktool.yaml", "line": 3, "old": "<v1>", "new": "<v3>"},
    ],
    "conflicts": [
        "0004-d.patch: d.py: hunk 1 does not apply at line 3 on v3: its lines are not there; a 3-way merge conflicts too (in d.py)"
    ],
    "notes": [
        "1 patch(es) already on v3 (each change is there: it reverse-applies, or a 3-way merge of it changes nothing; but no mapped commit proves it): 0002-b.patch; record every decision at once, before the sync: forktool retire 0002-b.patch --tag v3 --force --reason '...' (or map their upstream commits: forktool upstream resolve --write, forktool map suggest --write)"
    ],
    "check": None,
    "check_ok": None,
    "commits": [],
    "worktree": None,
    "message": "DRY RUN: nothing was written",
    "merge_tag": True,
    "decisions": ["0002-b.patch"],
    "decide": "forktool retire 0002-b.patch --tag v3 --force --reason '...'",
}


def test_a_plan_with_decisions_is_the_pinned_json(sync_fork: RepoBuilder) -> None:
    """Upstream v3 carries 0002's change as a cherry-pick: the plan keeps it, with its
    evidence, and names the one decision to record."""
    v3_with_0002_cherry_picked(sync_fork)
    plan = run_cli(
        "-C", sync_fork.path, "sync", "v3", "--no-fetch", "--dry-run", "--format", "json"
    )
    assert plan.code == 1, plan.out
    assert _pinned(plan.json(), sync_fork) == json.dumps(PLAN_V3, indent=2)


def test_an_unreadable_report_json_still_says_already_synced(pinned_fork: RepoBuilder) -> None:
    """report.json is the finished sync's account, not its proof (the branch pins the
    tag): when it cannot be read, a second 'sync' says so without it, never a traceback."""
    root = pinned_fork.path
    assert run_cli("-C", root, "sync", "v2", "--no-fetch").code == 0
    written = pinned_fork.git.git_dir() / "forktool" / "sync" / "v2" / SYNC_BRANCH / "report.json"
    for broken in ("{not json", "[]", '{"tag": "v2"}', '{"stage": "done", "kept": [{}]}'):
        written.write_text(broken)
        again = run_cli("-C", root, "sync", "v2", "--no-fetch", "--format", "json")
        assert again.code == 0, (broken, again.out, again.err)
        data = again.json()
        assert data["message"] == f"already synced: {SYNC_BRANCH} pins v2; nothing to do"
        assert (data["branch"], data["stage"], data["kept"]) == (SYNC_BRANCH, "done", [])


# -- the reader, on any report -------------------------------------------------------------

_text = st.text(max_size=12)
_maybe = st.none() | _text
_said = st.none() | st.text(min_size=1, max_size=12)  # written only when said (not "")
_sha = st.text("0123456789abcdef", min_size=40, max_size=40)
_evidence = st.builds(
    Evidence,
    st.sampled_from(["cherry-pick", "patch-id", "content-present", "hunks-still-apply"]),
    st.none() | _sha,
    _text,
    st.none() | st.tuples(st.integers(0, 9), st.integers(0, 9)),
)
_kept = st.builds(
    PatchAbsorption,
    patch=_text,
    upstream_commits=st.lists(_sha, max_size=2).map(tuple),
    verdict=st.sampled_from(["retire", "keep", "revisit", "fork-only", "pending"]),
    ancestor=st.none() | st.booleans(),
    first_release=_maybe,
    evidence=st.lists(_evidence, max_size=3).map(tuple),
    reason=_text,
    probe=st.none()
    | st.builds(
        ProbeWitness,
        st.sampled_from(["pass", "fail"]),
        st.sampled_from(["retired", "still-required", "now-harmful"]),
        _text,
    ),
    upstream_pr=_maybe,
)
_finding = st.builds(
    Finding,
    st.sampled_from(["error", "warning", "info"]),
    _text,
    _maybe,
    st.none() | st.integers(1, 99),
    _said,
)
_check = st.builds(
    CheckResult,
    _text,
    _text,
    st.lists(_finding, max_size=3).map(tuple),
    st.integers(0, 99999).map(lambda ms: ms / 1000),
    _said,
)
_report = st.builds(
    SyncReport,
    tag=_text,
    tag_commit=_sha,
    previous_tag=_text,
    branch=_maybe,
    stage=st.sampled_from(STAGES),
    retired=st.lists(
        st.builds(Retired, _text, st.lists(_sha, max_size=2).map(tuple), _maybe, _text),
        max_size=2,
    ).map(tuple),
    kept=st.lists(_kept, max_size=3).map(tuple),
    refreshed=st.lists(
        st.builds(
            RefreshEntry,
            _text,
            _text,
            st.sampled_from(["unchanged", "rebased", "merged", "conflict"]),
            _text,
            st.booleans(),
        ),
        max_size=2,
    ).map(tuple),
    range_diff=_text,
    pins=st.lists(st.builds(PinChange, _text, st.integers(1, 99), _text, _text), max_size=2).map(
        tuple
    ),
    conflicts=st.lists(_text, max_size=2).map(tuple),
    notes=st.lists(_text, max_size=2).map(tuple),
    check=st.none() | st.lists(_check, max_size=3).map(lambda c: GateResult(tuple(c))),
    check_ok=st.none() | st.booleans(),
    commits=st.lists(_sha, max_size=2).map(tuple),
    message=_text,
    dry_run=st.booleans(),
    worktree=_maybe,
    merge_tag=st.booleans(),
    decisions=st.lists(_text, max_size=2).map(tuple),
    decide=_text,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_report)
def test_a_saved_report_reads_back_to_the_same_typed_report_and_json(report: SyncReport) -> None:
    text = json.dumps(report.to_json(), indent=2)
    again = SyncReport.from_json(json.loads(text))
    assert again == report
    assert json.dumps(again.to_json(), indent=2) == text


def test_a_state_at_an_unknown_stage_is_refused_and_can_be_aborted(sync_fork: RepoBuilder) -> None:
    """A state naming no stage forktool knows (edited, or written by another version):
    --continue refuses it with exit 2 and the way out, never a traceback; --abort,
    which needs no stage, removes the sync."""
    head = sync_fork.rev("HEAD")
    stopped = run_cli("-C", sync_fork.path, "sync", "v2", "--no-fetch")
    assert stopped.code == 1
    path = sync_fork.git.git_dir() / "forktool" / "sync" / "state.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "stage": "publish"}))
    resumed = run_cli("-C", sync_fork.path, "sync", "--continue")
    assert resumed.code == 2
    assert resumed.error_lines == [
        f"error: the sync state in {path} stopped at an unknown stage 'publish'",
        "hint: drop it with 'forktool sync --abort'",
    ]
    aborted = run_cli("-C", sync_fork.path, "sync", "--abort")
    assert aborted.code == 0, aborted.err
    assert not path.exists() and sync_fork.git.branch_commit(SYNC_BRANCH) is None
    assert sync_fork.rev("HEAD") == head
