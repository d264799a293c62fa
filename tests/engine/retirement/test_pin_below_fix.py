"""The pinned tag must contain every fix the series no longer carries: retire refuses
while the pin lacks the fix, and a pin moved back below a retired fix fails check."""

from __future__ import annotations

import pytest
from testing.helpers import MiniFork, make_patch, snapshot_tree

from forktool.builder import RepoBuilder
from forktool.model.record import empty_section, parse_record

APP = "".join(f"line {n}\n" for n in range(1, 21))
FIXED = APP.replace("line 7\n", "line seven\n")
PATCH = "0001-fix.patch"
DATE = "2024-06-01"


@pytest.fixture(autouse=True)
def fixed_date(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORKTOOL_DATE", DATE)


def _fork(builder: RepoBuilder) -> tuple[MiniFork, str]:
    """Pinned at v1.0.0; fix F is in v1.1.0; the fork's files committed."""
    builder.commit("import\n", {"app.py": APP})
    builder.tag("v1.0.0")
    fix = builder.commit("fix line 7\n", {"app.py": FIXED})
    builder.tag("v1.1.0")
    patch = make_patch(builder, "v1.0.0", {"app.py": FIXED}, "fix line 7")
    fork = MiniFork(builder, "v1.0.0")
    fork.write({PATCH: patch}, commits={PATCH: fix}, extra_config="layout: overlay\n")
    (fork.root / "FORK.md").write_text("# Fork\n\n" + empty_section())
    builder.commit("fork: the series\n")
    return fork, fix


def _pin_and_retire(builder: RepoBuilder, fork: MiniFork, tag: str) -> None:
    """Pin ``tag``, retire what it absorbed, commit that: the record check passes."""
    assert fork.cli("pin", "bump", tag).code == 0
    assert fork.cli("retire", "--tag", tag).code == 0
    builder.commit(f"fork: retire the fix, pin {tag}\n")
    assert fork.cli("check", "--only", "record").code == 0


def test_retire_refuses_while_the_pin_lacks_the_fix(builder: RepoBuilder) -> None:
    fork, fix = _fork(builder)
    before = snapshot_tree(fork.root)
    result = fork.cli("retire", "--tag", "v1.1.0", "--format", "json")
    assert result.code == 1, result.err
    assert result.json()["refused"] == [
        {
            "patch": PATCH,
            "verdict": "retire",
            "reason": f"the fork pins v1.0.0, which does not contain {fix[:12]}: the fork "
            "would build without the fix; retire after 'forktool pin bump v1.1.0', or through "
            "'forktool sync v1.1.0'",
        }
    ]
    assert result.json()["retired"] == []
    assert snapshot_tree(fork.root) == before
    assert fork.cli("pin", "bump", "v1.1.0").code == 0
    retired = fork.cli("retire", "--tag", "v1.1.0", "--format", "json")
    assert retired.code == 0, retired.out
    assert [(r["patch"], r["forced"]) for r in retired.json()["retired"]] == [(PATCH, False)]  # type: ignore[index, union-attr, attr-defined]
    assert retired.json()["warnings"] == []


def test_forced_retirement_without_the_fix_in_the_pin_fails_check(builder: RepoBuilder) -> None:
    fork, fix = _fork(builder)
    result = fork.cli(
        "retire", PATCH, "--tag", "v1.1.0", "--force", "--reason", "bump next", "--format", "json"
    )
    assert result.code == 0, result.err
    assert result.json()["retired"][0]["forced"] is True  # type: ignore[index]
    record = parse_record((fork.root / "FORK.md").read_text())
    assert record.entries[0].witnesses == (
        f"ancestry: {fix[:12]} in v1.1.0; content-present; FORCED with the pin at v1.0.0, "
        "which lacks it: bump next"
    )
    check = fork.cli("check", "--only", "record", "--format", "json")
    assert check.code == 1, check.out
    findings = check.json()["checks"][0]["findings"]  # type: ignore[index]
    assert findings == [
        {
            "severity": "error",
            "message": f"'{PATCH}' was retired at v1.1.0, but v1.0.0 does not contain "
            f"{fix[:12]}: a fork pinned there ships without the fix",
            "path": "FORK.md",
            "line": None,
            "hint": f"pin a tag that contains it, or restore the patch: forktool retire "
            f"--undo {PATCH}",
        }
    ]


def test_pin_moved_back_below_a_retired_fix_warns_and_fails_check(builder: RepoBuilder) -> None:
    fork, fix = _fork(builder)
    _pin_and_retire(builder, fork, "v1.1.0")

    back = fork.cli("pin", "bump", "v1.0.0", "--format", "json")
    assert back.code == 0, back.err
    assert back.err.splitlines() == [
        f"warning: '{PATCH}' was retired at v1.1.0, but v1.0.0 does not contain {fix[:12]}: "
        f"a fork pinned there ships without the fix; pin a tag that contains it, or restore "
        f"the patch: forktool retire --undo {PATCH}"
    ]
    assert back.json()["lost_fixes"] == [{"patch": PATCH, "commits": [fix], "retired_at": "v1.1.0"}]
    assert fork.cli("check", "--only", "record").code == 1

    # A restoration cancels the retirement: the pin may stay below the fix.
    restored = fork.cli("retire", "--undo", PATCH, "--reason", "back to v1.0.0")
    assert restored.code == 0, restored.err
    assert fork.cli("check", "--only", "record").code == 0
    again = fork.cli("pin", "bump", "v1.0.0", "--dry-run")
    assert again.err == ""


def test_a_sync_plan_to_a_tag_without_a_retired_release_branch_fix_needs_hands(
    builder: RepoBuilder,
) -> None:
    """A fix retired at a release-branch tag (its commit only on that branch, as
    openssh's V_9_9 fixes are) is lost at the next main-line tag: the sync's check
    would fail on it, so the plan and the poll say so first (needs hands, exit 4),
    with what to do, instead of "clean plan"."""
    builder.commit("import\n", {"app.py": APP})
    builder.tag("v1.0.0")
    builder.branch("release-1.0")
    builder.commit("main moves on\n", {"other.txt": "x\n"})
    builder.tag("v1.1.0")
    builder.checkout("release-1.0")
    fix = builder.commit("fix line 7 on the branch\n", {"app.py": FIXED})
    builder.tag("v1.0.1")
    builder.checkout("main")
    patch = make_patch(builder, "v1.0.0", {"app.py": FIXED}, "fix line 7")
    fork = MiniFork(builder, "v1.0.0")
    fork.write(
        {PATCH: patch, "0002-fork.patch": make_patch(builder, "v1.0.0", {"fork.txt": "f\n"}, "f")},
        commits={PATCH: fix, "0002-fork.patch": "none"},
        extra_config="layout: overlay\nupstream:\n  remote: origin\n",
    )
    (fork.root / "FORK.md").write_text("# Fork\n\n" + empty_section())
    builder.commit("fork: the series\n")
    _pin_and_retire(builder, fork, "v1.0.1")

    plan = fork.cli("sync", "v1.1.0", "--dry-run", "--format", "json")
    assert plan.code == 0, plan.err
    lost = (
        f"'{PATCH}' was retired at v1.0.1, but v1.1.0 does not contain {fix[:12]}: a fork "
        "pinned there ships without the fix; pin a tag that contains it, or restore the "
        f"patch: forktool retire --undo {PATCH}"
    )
    assert plan.json()["notes"] == [lost]
    text = fork.cli("sync", "v1.1.0", "--dry-run")
    assert f"needs a human: {lost}" in text.out
    poll = fork.cli("upstream", "poll", "--no-fetch", "--format", "json")
    assert poll.code == 4, poll.out
    assert poll.json()["plan"]["notes"] == [lost]  # type: ignore[index]
