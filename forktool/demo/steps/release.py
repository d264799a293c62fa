"""Walkthrough steps on a release: sync to a newer tag, merge the sync branch, and the
gate on the result."""

from __future__ import annotations

from forktool.demo.session import Demo
from forktool.git import run as run_git


def step_sync(demo: Demo) -> None:
    demo.step(
        "Sync to v1.3.0: retire, refresh, bump, merge the tag, check",
        """sync works on a new branch in a temporary worktree (this checkout is not
        touched): it retires what v1.3.0 absorbed (ancestry only), refreshes the rest,
        bumps every pin site, merges the release TAG (never upstream's main branch),
        runs check, and writes a report for the pull request.""",
    )
    demo.run(["sync", "v1.3.0"])
    report = demo.fork_path / ".git/forktool/sync/v1.3.0/forktool/sync-v1.3.0/report.md"
    demo.say(f"   the pull-request body is in {report}")


def step_check_after_sync(demo: Demo) -> None:
    demo.step(
        "Merge the sync branch; the gate passes on the result",
        """After review the sync branch is merged (a fast-forward here). check runs every
        gate that needs no network: files, pin, exact apply and round trip, canonical
        format, pin sites, alignment with v1.3.0, the retirement record.""",
    )
    run_git(
        ["merge", "--quiet", "--ff-only", "forktool/sync-v1.3.0"],
        cwd=demo.fork_path,
        purpose="merge the sync branch",
    )
    demo.run(["check"])
    demo.run(["status"])
