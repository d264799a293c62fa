"""Walkthrough steps on retirement: what a release absorbed (ancestry decides), retiring
it, and undoing a wrong retirement."""

from __future__ import annotations

from forktool.demo.session import FORK_MAINTAINER, Demo


def step_absorbed(demo: Demo) -> None:
    demo.step(
        "Which patches did v1.2.0 absorb? Ancestry decides",
        """0001's fix merged before release-1.2 was cut: v1.2.0 contains it (retire).
        0002's fix merged one commit AFTER the cut: v1.2.0 does not contain it, whatever a
        probe says (keep; first release v1.3.0rc0). 0003's fix reached v1.2.0 only as a
        cherry-pick under another commit id: ancestry says no, the cherry-pick says maybe
        (revisit: a human decides).""",
    )
    demo.run(["absorbed", "--tag", "v1.2.0"])


def step_retire(demo: Demo) -> None:
    p1 = "0001-config-do-not-crash-on-an-empty-config-file.patch"
    p2 = "0002-engine-retry-on-timeout.patch"
    demo.step(
        "Retire what v1.2.0 absorbed, and undo a wrong retirement",
        """retire drops exactly the patches whose verdict is 'retire' (series line, patch
        file, note, map line) and appends a row to FORK.md's retirement record; all files
        change together or not at all. Retiring 0002 is refused: v1.2.0 lacks its fix.
        Retiring 0001 is refused too while the fork pins v1.1.0, which lacks its fix (the
        fork would build without it): retire after 'pin bump', or through 'sync'. Forced
        here with a reason to show undo: it restores 0001 from the commit before the
        retirement, byte for byte, and records why.""",
    )
    demo.run(["retire", p2, "--tag", "v1.2.0"], expect=1)
    demo.run(["retire", p1, "--tag", "v1.2.0", "--force", "--reason", "the pin moves next"])
    record = (demo.fork_path / "FORK.md").read_text(encoding="utf-8")
    begin = record.index("<!-- forktool:retirement-record:begin -->")
    end = record.index("<!-- forktool:retirement-record:end -->")
    demo.say("   FORK.md's retirement record now reads:")
    for line in record[begin:end].splitlines()[1:]:
        demo.say(f"   {line}")
    demo.fork.commit(f"fork: retire {p1} (absorbed by v1.2.0)\n", author=FORK_MAINTAINER)
    demo.say("   (committed the retirement; undo now restores from the commit before it)")
    demo.run(["retire", "--undo", p1, "--reason", "the fork still pins v1.1.0"])
    demo.fork.commit(f"fork: restore {p1} until the pin moves\n", author=FORK_MAINTAINER)
    demo.run(["verify"])
