"""Walkthrough steps on upstream: the forecast of newer releases, the nightly poll, and a
fix sent upstream resolved to the commit that merged it."""

from __future__ import annotations

from forktool.builder import RepoBuilder
from forktool.demo.session import FORK_MAINTAINER, Demo, fork_config


def step_forecast(demo: Demo) -> None:
    demo.step(
        "The forecast: what will each newer release absorb, and what will it break?",
        """forecast judges every release newer than the pin at once: each cell is what
        'absorbed --tag' says there, and how the patch meets that release when the patches
        that remain are applied in order. On v1.2.0 the retry patch lands only at an
        offset: forecast bisects the commits that touched engine.py and names the one
        after which it stopped applying exactly (the logger). --format html writes the
        same matrix as one self-contained page for a CI artifact.""",
    )
    demo.run(["forecast"])
    page = demo.root / "forecast.html"
    from forktool.engine.upstream.forecast import forecast
    from forktool.engine.upstream.targets import choose_targets
    from forktool.fork import load_fork
    from forktool.report.forecast import forecast_html

    fork = load_fork(fork_config(demo))
    targets = choose_targets(fork.config, demo.fork.git, None, None)
    page.write_text(forecast_html(forecast(fork, demo.fork.git, targets)), encoding="utf-8")
    demo.say(f"   (also written as {page}: open it in a browser)")


def step_poll(demo: Demo) -> None:
    demo.step(
        "The nightly job: is there a newer release, and what would a sync do?",
        """upstream poll fetches upstream's tags, lists the releases newer than the pin in
        version order, and plans a sync to the newest: v1.3.0 contains all three upstream
        fixes by ancestry, so they retire; the fork-only patch refreshes cleanly. Exit 3
        tells the scheduler the plan is clean (0: nothing new; 4: needs hands).""",
    )
    demo.run(["upstream", "poll"], expect=3)


PENDING_PATCH = "0005-sink-flush-the-file-sink-on-exit.patch"


PENDING_PR = "https://git.example.org/pulse/pulls/64"


FLUSH_FILE = "pulse/flush.py"


FLUSH_TEXT = '''"""Flush every open sink when the process exits."""

import atexit

SINKS: list[object] = []


@atexit.register
def flush_all() -> None:
    for sink in SINKS:
        getattr(sink, "flush", lambda: None)()
'''


def _pending_patch(demo: Demo, pin: str) -> bytes:
    """The fix the fork sent upstream, made on ``pin`` as a canonical patch."""
    from forktool.engine.patches.canonical import FORMAT_PATCH_ARGS

    git = demo.fork.git
    git.run(["checkout", "-q", "--detach", pin], purpose="detach at the pin")
    try:
        demo.fork.commit(
            "sink: flush the file sink on exit\n\nUpstream-PR: " + PENDING_PR + "\n",
            {FLUSH_FILE: FLUSH_TEXT},
            author=FORK_MAINTAINER,
        )
        return git.run([*FORMAT_PATCH_ARGS, "-1", "--stdout"], purpose="export the fix").stdout
    finally:
        git.run(["checkout", "-q", "-f", "main"], purpose="return to main")


def step_resolve(demo: Demo) -> None:
    demo.step(
        "A fix sent upstream: pending until its PR merges, then resolved to the commit",
        """The fork carries a new fix while its PR is open, mapped 'pending <PR-url>' (never
        retired while pending). Upstream then squash-merges it as '... (#64)' and a
        follow-up mentions '(#64)'. upstream resolve reads upstream's main once, finds the
        commit that MERGED the PR (not the follow-up) and, with --write, records it in
        upstream.map; forecast --branch main then shows the patch absorbed there.""",
    )
    pin = fork_config(demo).pin_tag
    patch = _pending_patch(demo, pin)
    series = (demo.fork_path / "series").read_text(encoding="utf-8")
    umap = (demo.fork_path / "upstream.map").read_text(encoding="utf-8")
    demo.fork.commit(
        f"fork: carry {PENDING_PATCH} while upstream reviews it\n",
        {
            f"patches/{PENDING_PATCH}": patch,
            "series": series + PENDING_PATCH + "\n",
            "upstream.map": umap + f"{PENDING_PATCH} pending {PENDING_PR}\n",
        },
        author=FORK_MAINTAINER,
    )
    demo.run(["upstream", "resolve"])
    upstream = RepoBuilder(demo.upstream.path)
    upstream.commit(
        "sink: flush the file sink on exit (#64)\n",
        {FLUSH_FILE: FLUSH_TEXT},
        author=FORK_MAINTAINER,
    )
    upstream.commit(
        "docs: describe the exit flush from (#64)\n",
        {"docs/flush.md": "Sinks are flushed when pulse exits.\n"},
    )
    demo.say("   upstream merged PR #64 as a squash commit, then a follow-up that mentions it")
    demo.run(["upstream", "resolve", "--write"])
    demo.fork.commit(f"fork: {PENDING_PATCH} merged upstream\n", author=FORK_MAINTAINER)
    demo.run(["forecast", "--branch", "main"])
