"""``forktool demo``: a throwaway upstream and fork, and the release cycle on them.

Each step runs a real forktool command in-process against a real repository and
says what the output means. Steps are plain functions in :data:`STEPS`, in order;
a capability adds its own step.
"""

from __future__ import annotations

import secrets
import shutil
import tarfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from io import BytesIO
from pathlib import Path

from rich.text import Text

from forktool.builder import RepoBuilder
from forktool.config import Config
from forktool.demo.example import EXAMPLE_FILES, PATCHES_DIR, PIN_TAG, example_root
from forktool.demo.upstream import DemoUpstream, build_demo_upstream
from forktool.errors import FatalError
from forktool.git import run as run_git
from forktool.output import Output

MARKER = ".forktool-demo"
FORK_MAINTAINER = "Dana Okoye <dana@fork.example>"


@dataclass
class Demo:
    root: Path
    out: Output
    upstream: DemoUpstream
    fork: RepoBuilder
    failures: list[str]
    steps_done: int = 0

    @property
    def fork_path(self) -> Path:
        return self.fork.path

    def say(self, text: str) -> None:
        self.out.print(text, markup=False)

    def step(self, title: str, why: str) -> None:
        self.steps_done += 1
        self.out.print()
        self.out.print(Text(f"== {self.steps_done}. {title}", style="bold cyan"))
        for line in why.strip().splitlines():
            self.out.print(f"   {line.strip()}", markup=False)

    def run(self, args: Sequence[str], *, expect: int = 0) -> int:
        """Run one forktool command on the fork, echoing it; record a surprise."""
        from forktool.cli import run as cli_run

        shown = " ".join(args)
        self.out.print(Text(f"$ forktool {shown}", style="bold"))
        code = cli_run(["-C", str(self.fork_path), *args])
        if code != expect:
            self.failures.append(f"forktool {shown}: exit {code}, expected {expect}")
            self.out.print(Text(f"   (unexpected exit {code}; expected {expect})", style="red"))
        else:
            self.out.print(Text(f"   exit {code}", style="dim"))
        return code


Step = Callable[[Demo], None]


def prepare_dir(root: Path) -> None:
    """Create ``root``, or clear one that an earlier demo made; never anything else."""
    if root.exists():
        if not (root / MARKER).is_file():
            if any(root.iterdir()):
                raise FatalError(
                    f"{root} exists and was not made by 'forktool demo'",
                    "pick another directory: forktool demo DIR",
                )
        else:
            shutil.rmtree(root)
    root.mkdir(parents=True, exist_ok=True)
    (root / MARKER).write_text("made by forktool demo; safe to delete\n")


def setup_fork(root: Path, upstream: DemoUpstream) -> RepoBuilder:
    """A merged-layout fork: upstream's v1.1.0 plus the example fork's files."""
    fork = RepoBuilder.clone(upstream.path, root / "fork")
    run_git(
        ["remote", "rename", "origin", "upstream"],
        cwd=fork.path,
        purpose="name the upstream remote",
    )
    run_git(
        ["checkout", "-q", "-B", "main", PIN_TAG],
        cwd=fork.path,
        purpose="start the fork at the pin",
    )
    source = example_root()
    files: dict[str, str | bytes | None] = {}
    for name in EXAMPLE_FILES:
        files[name] = (source / name).read_bytes()
    for path in sorted((source / PATCHES_DIR).rglob("*")):
        if path.is_file():
            files[path.relative_to(source).as_posix()] = path.read_bytes()
    fork.commit(
        "fork: carry three upstream fixes and a fork-only patch on v1.1.0\n",
        files,
        author=FORK_MAINTAINER,
    )
    for key, value in (("user.name", "Dana Okoye"), ("user.email", "dana@fork.example")):
        run_git(["config", key, value], cwd=fork.path, purpose=f"set {key} for the demo fork")
    return fork


def pristine_site(demo: Demo, name: str, tag: str = PIN_TAG) -> Path:
    """The upstream package as an image would install it: a plain directory, no git."""
    site = demo.root / name
    if site.exists():
        shutil.rmtree(site)
    site.mkdir()
    archive = run_git(
        ["archive", "--format=tar", tag, "pulse"], cwd=demo.upstream.path, purpose="export pulse"
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(site, filter="data")
    return site


# -- the steps -----------------------------------------------------------------------


def step_status(demo: Demo) -> None:
    demo.step(
        "The fork at a glance",
        """The fork pins upstream v1.1.0 and carries four patches: three upstream fixes,
        each mapped to the upstream commit that will make it unnecessary, and one
        fork-only patch (mapped to 'none': no release ever retires it).""",
    )
    demo.run(["status"])


def step_verify(demo: Demo) -> None:
    demo.step(
        "Every patch applies exactly, and reverts exactly",
        """verify applies the whole series onto v1.1.0 in a temporary index (the checkout
        is never touched), reverts it, and compares tree ids with the tag.""",
    )
    demo.run(["verify"])


def step_stale(demo: Demo) -> None:
    demo.step(
        "A stale series is refused at its first failure",
        """Fix 1 is already in v1.2.0, so its patch no longer applies: verify names the
        patch, the file and the line, and stops there. The patches after it were never
        tried on a tree the series could not build, so they are 'not-tried', never
        guessed at (the retry patch would land 3 lines lower on v1.2.0, an offset:
        'forktool forecast' and 'absorbed' judge each patch on its own).""",
    )
    demo.run(["verify", "--base", "v1.2.0"], expect=1)


def step_apply_dir(demo: Demo) -> None:
    site = pristine_site(demo, "site-packages")
    demo.step(
        "Apply the series to an installed package, fail-closed",
        f"""An image build applies the series to the installed package ({site.name}/ here,
        a plain directory with no git). Then --verify proves the directory carries exactly
        the series; a second apply is refused rather than silently reversed.""",
    )
    demo.run(["apply", "--target", str(site)])
    demo.run(["apply", "--target", str(site), "--verify"])
    demo.run(["apply", "--target", str(site)], expect=1)
    demo.run(["apply", "--target", str(site), "--except", "0002-engine-retry-on-timeout.patch"])


def _retire_by_hand(fork: RepoBuilder, names: Sequence[str]) -> None:
    """Drop patches from a fork's files the way retirement does (series, map, file, note)."""
    from forktool.model.series import parse_series
    from forktool.model.upstream_map import parse_map

    series = parse_series((fork.path / "series").read_bytes())
    umap = parse_map((fork.path / "upstream.map").read_bytes())
    files: dict[str, str | bytes | None] = {}
    for name in names:
        series, umap = series.without(name), umap.without(name)
        files[f"{PATCHES_DIR}/{name}"] = None
        files[f"{PATCHES_DIR}/notes/{Path(name).stem}.md"] = None
    files["series"], files["upstream.map"] = series.to_bytes(), umap.to_bytes()
    fork.commit("fork: retire the fixes v1.2.0 contains\n", files, author=FORK_MAINTAINER)


def step_refresh(demo: Demo) -> None:
    scratch = RepoBuilder.clone(demo.fork_path, demo.root / "fork-refresh")
    run_git(
        ["fetch", "-q", "origin", "refs/tags/*:refs/tags/*"],
        cwd=scratch.path,
        purpose="copy the tags",
    )
    demo.step(
        "Canonical patch files, and a refresh onto a newer tag",
        f"""fmt --check regenerates every patch on the pin in a temporary index and requires
        the same bytes: it catches offset drift, index-line churn and stray signatures.
        Then, in a scratch clone ({scratch.path.name}/, so the fork above stays as it is),
        the two fixes v1.2.0 already contains are retired by hand and the remaining patch
        is refreshed onto v1.2.0: it applied only at an offset, so it is 'rebased' and
        regenerated, with a range-diff for review. The pin still names v1.1.0, so fmt
        --check there fails until 'pin bump v1.2.0' (sync = retire, refresh, bump).""",
    )
    demo.run(["fmt", "--check"])
    _retire_by_hand(
        scratch,
        [
            "0001-config-do-not-crash-on-an-empty-config-file.patch",
            "0003-engine-decode-input-as-UTF-8.patch",
        ],
    )
    there = replace(demo, fork=scratch)
    there.run(["refresh", "--onto", "v1.2.0"])
    there.run(["verify", "--base", "v1.2.0"])
    there.run(["fmt", "--check"], expect=1)


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


def run_demo(root: Path, out: Output) -> int:
    prepare_dir(root)
    out.print(f"Building the demo upstream (pulse) in {root / 'upstream'} ...")
    upstream = build_demo_upstream(root / "upstream")
    for tag, commit in upstream.tags.items():
        out.print(f"   {tag:<10} {commit[:10]}", markup=False)
    fork = setup_fork(root, upstream)
    out.print(f"Fork: {fork.path} (branch main = v1.1.0 + the example fork's files)")
    demo = Demo(root, out, upstream, fork, [])
    for step in STEPS:
        step(demo)
    out.print()
    if demo.failures:
        for failure in demo.failures:
            out.print(Text(f"unexpected: {failure}", style="red"))
        return 1
    out.print(
        Text.assemble(
            ("Demo complete.", "green"),
            f" Everything is in {root}: upstream/, fork/, site-packages/.",
        )
    )
    out.print(f"Try it yourself: forktool -C {fork.path} status")
    return 0


# -- images: candidates, the gate, promotion by digest (needs a Docker engine) ------


def step_images(demo: Demo) -> None:
    from forktool.config import load_config
    from forktool.demo.images import REGISTRY, ensure_upstream_image, registry_answers
    from forktool.docker_client import connect

    demo.step(
        "Images: build a candidate, gate it, promote its digest, freeze the release",
        """A build only makes a candidate (<repo>:<pin>-cand-<sha7>). The gate runs in that
        exact image with no network and records its verdict by image id; promote moves
        that id, never a rebuild; freeze tags the release commit with digest and patch set.""",
    )
    try:
        engine = connect()
    except FatalError as exc:
        demo.say(f"   SKIPPED: {exc.message}")
        demo.say('   Start one with: eval "$(scripts/docker-up.sh)" and run the demo again.')
        return
    if not registry_answers(REGISTRY):
        demo.say(f"   SKIPPED: a Docker engine answers, but no registry at {REGISTRY}.")
        demo.say("   scripts/docker-up.sh starts both.")
        return
    config = load_config(demo.fork_path / "forktool.yaml")
    if config.image is None:
        demo.say("   SKIPPED: the fork has no image: block")
        return
    base = ensure_upstream_image(engine, demo.upstream.path, config.pin_tag)
    demo.say(f"   upstream image: {base} (busybox + pulse at /opt/pulse; see docs/images.md)")
    # A repository of this run's own: promote never moves a release tag, and an
    # earlier demo run may have published one in the same registry.
    text = (demo.fork_path / "forktool.yaml").read_text()
    repository = f"{config.image.repository}-demo-{secrets.token_hex(4)}"
    text = text.replace(f"repository: {config.image.repository}\n", f"repository: {repository}\n")
    demo.fork.commit(
        "fork: publish the demo image\n", {"forktool.yaml": text}, author=FORK_MAINTAINER
    )
    for key, value in (("user.name", "Dana Okoye"), ("user.email", "dana@fork.example")):
        run_git(["config", key, value], cwd=demo.fork_path, purpose=f"set {key}")
    candidate = f"{repository}:{config.pin_tag}-cand-{demo.fork.rev('HEAD')[:7]}"
    demo.run(["image", "build"])
    demo.run(["image", "promote", candidate, "--tag", config.pin_tag], expect=1)
    demo.run(["image", "gate", candidate])
    demo.run(["image", "promote", candidate, "--tag", config.pin_tag, "--latest"])
    demo.run(["image", "freeze"])
    demo.run(["image", "freeze"])
    patch = "0001-config-do-not-crash-on-an-empty-config-file.patch"
    if patch in (demo.fork_path / "series").read_text():
        demo.say("   A leave-one-out arm: the image without the empty-config fix fails its gate.")
        demo.run(["arms"])
        demo.run(["image", "build", "--minus", patch])
        demo.run(["image", "gate", f"{candidate}-minus-0001"], expect=1)
        demo.say(
            "   A gate judges committed configuration only: an uncommitted gate: [[true]]"
            " cannot turn that failure into a pass."
        )
        config_file = demo.fork_path / "forktool.yaml"
        committed = config_file.read_text()
        lines = committed.splitlines(keepends=True)
        lines = ['  gate: [["true"]]\n' if ln.startswith("  gate: ") else ln for ln in lines]
        config_file.write_text("".join(lines))
        try:
            demo.run(["image", "gate", f"{candidate}-minus-0001"], expect=2)
        finally:
            config_file.write_text(committed)


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
    from forktool.engine.upstream.forecast import choose_targets, forecast
    from forktool.fork import load_fork
    from forktool.report.forecast import forecast_html

    fork = load_fork(_config(demo))
    targets = choose_targets(fork.config, demo.fork.git, None, None)
    page.write_text(forecast_html(forecast(fork, demo.fork.git, targets)), encoding="utf-8")
    demo.say(f"   (also written as {page}: open it in a browser)")


def _config(demo: Demo) -> Config:
    from forktool.config import load_config

    return load_config(demo.fork_path / "forktool.yaml")


def step_poll(demo: Demo) -> None:
    demo.step(
        "The nightly job: is there a newer release, and what would a sync do?",
        """upstream poll fetches upstream's tags, lists the releases newer than the pin in
        version order, and plans a sync to the newest: v1.3.0 contains all three upstream
        fixes by ancestry, so they retire; the fork-only patch refreshes cleanly. Exit 3
        tells the scheduler the plan is clean (0: nothing new; 4: needs hands).""",
    )
    demo.run(["upstream", "poll"], expect=3)


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
    pin = _config(demo).pin_tag
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


STEPS: list[Step] = [
    step_status,
    step_verify,
    step_stale,
    step_apply_dir,
    step_absorbed,
    step_retire,
    step_refresh,
    step_pin_show,
    step_pin_check,
    step_align,
    step_pin_bump_preview,
    step_align_bot_workflow,
    step_images,
    step_forecast,
    step_poll,
    step_sync,
    step_check_after_sync,
    step_resolve,
]
