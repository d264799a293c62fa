"""Walkthrough steps on the pin: every site that names it, its checks, alignment with the
pinned tag, and a bump (previewed here, made in a scratch clone)."""

from __future__ import annotations

import shutil
from dataclasses import replace

from forktool.builder import RepoBuilder
from forktool.demo.session import FORK_MAINTAINER, Demo
from forktool.git import run as run_git


def step_pin_show(demo: Demo) -> None:
    demo.step(
        "Every place that names the pinned tag",
        """forktool.yaml's pin.tag, the Dockerfile's ARG and the CI workflow's env all name
        v1.1.0. pin show lists each site with its file and line.""",
    )
    demo.run(["pin", "show"])


def step_pin_check(demo: Demo) -> None:
    demo.step(
        "The pin is consistent and locked",
        """pin check fails if a site drifts, matches twice or is missing, if the tag was moved
        upstream (it must still peel to pin.commit), or if the fork's HEAD does not contain
        the pinned commit.""",
    )
    demo.run(["pin", "check"])


def step_align(demo: Demo) -> None:
    demo.step(
        "The fork diverges from v1.1.0 only as declared",
        """align compares HEAD with the pinned tag (never a merge-base with upstream's main):
        every file the fork adds is declared in alignment.ledger, and no upstream file is
        edited in place; changes to upstream files are carried as patches.""",
    )
    demo.run(["align"])


def step_pin_bump_preview(demo: Demo) -> None:
    demo.step(
        "A pin bump rewrites only the tag",
        """pin bump edits exactly the matched text of every site plus pin.tag and pin.commit;
        comments, quoting and indentation stay byte for byte. --dry-run shows the diff and
        writes nothing (the release procedure, sync, does the real bump later).""",
    )
    demo.run(["pin", "bump", "v1.2.0", "--dry-run"])


def step_align_bot_workflow(demo: Demo) -> None:
    from forktool.demo.pulse_changes import STALE_BOT

    scratch_path = demo.root / "align-scratch"
    if scratch_path.exists():
        shutil.rmtree(scratch_path)
    scratch = RepoBuilder.clone(demo.fork_path, scratch_path)
    there = replace(demo, fork=scratch)
    demo.step(
        "Upstream adds a bot workflow; the fork deletes it, and must say why",
        f"""In a scratch clone ({scratch_path.name}/) the fork merges v1.2.0 and bumps its pin.
        v1.2.0 added {STALE_BOT},
        which the fork deletes: align names it as undeclared until a 'del' line in
        alignment.ledger says why. The demo's fork itself stays on v1.1.0.""",
    )
    # The fork never edits upstream files, so upstream's side wins every conflict
    # (here: the version line both release branches bumped).
    run_git(
        ["merge", "--quiet", "--no-ff", "--no-commit", "-X", "theirs", "v1.2.0"],
        cwd=scratch.path,
        purpose="merge v1.2.0 into the scratch fork",
        env={
            "GIT_AUTHOR_NAME": "Dana Okoye",
            "GIT_AUTHOR_EMAIL": "dana@fork.example",
            "GIT_COMMITTER_NAME": "Dana Okoye",
            "GIT_COMMITTER_EMAIL": "dana@fork.example",
        },
    )
    scratch.commit("Merge upstream v1.2.0\n", author=FORK_MAINTAINER)
    there.run(["pin", "bump", "v1.2.0"])
    scratch.commit("fork: pin v1.2.0\n", author=FORK_MAINTAINER)
    scratch.commit(
        "fork: we do not run upstream's bots\n", {STALE_BOT: None}, author=FORK_MAINTAINER
    )
    there.run(["align"], expect=1)
    ledger = scratch.path / "alignment.ledger"
    line = f"del {STALE_BOT} permanent we do not run upstream's bots\n"
    scratch.commit(
        "ledger: declare the deleted bot workflow\n",
        {"alignment.ledger": ledger.read_bytes() + line.encode()},
        author=FORK_MAINTAINER,
    )
    demo.say(f"   appended to alignment.ledger: {line.strip()}")
    there.run(["align"])
