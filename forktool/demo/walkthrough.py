"""``forktool demo``: a throwaway upstream and fork, and the release cycle on them.

Each step runs a real forktool command in-process against a real repository and
says what the output means. Steps are plain functions in :data:`STEPS`, in order;
a capability adds its own step.
"""

from __future__ import annotations

import shutil
import tarfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path

from forktool.builder import RepoBuilder
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
        self.out.print(f"[bold cyan]== {self.steps_done}. {title}[/]")
        for line in why.strip().splitlines():
            self.out.print(f"   {line.strip()}", markup=False)

    def run(self, args: Sequence[str], *, expect: int = 0) -> int:
        """Run one forktool command on the fork, echoing it; record a surprise."""
        from forktool.cli import run as cli_run

        shown = " ".join(args)
        self.out.print(f"[bold]$ forktool {shown}[/]")
        code = cli_run(["-C", str(self.fork_path), *args])
        if code != expect:
            self.failures.append(f"forktool {shown}: exit {code}, expected {expect}")
            self.out.print(f"[red]   (unexpected exit {code}; expected {expect})[/]")
        else:
            self.out.print(f"[dim]   exit {code}[/]")
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
    fork.commit("fork: carry three upstream fixes on v1.1.0\n", files, author=FORK_MAINTAINER)
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
        """The fork pins upstream v1.1.0 and carries three patches, each mapped to the
        upstream commit that will make it unnecessary.""",
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
        "A stale series is refused, with the offset it needed",
        """On v1.2.0 upstream added a logger near the top of engine.py, so the retry patch
        only lands 3 lines lower: an offset. Fixes 1 and 3 are already in v1.2.0, so their
        patches no longer apply at all. forktool names each patch, file, hunk and line.""",
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
        The fork still pins v1.1.0, so this retirement is premature (retire warns): undo
        restores 0001 from the commit before the retirement, byte for byte, and records
        why.""",
    )
    demo.run(["retire", "--tag", "v1.2.0", "--dry-run"])
    demo.run(["retire", p2, "--tag", "v1.2.0"], expect=1)
    demo.run(["retire", "--tag", "v1.2.0"])
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


STEPS: list[Step] = [
    step_status,
    step_verify,
    step_stale,
    step_apply_dir,
    step_absorbed,
    step_retire,
]


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
            out.print(f"[red]unexpected: {failure}[/]")
        return 1
    out.print(
        f"[green]Demo complete.[/] Everything is in {root}: upstream/, fork/, site-packages/."
    )
    out.print(f"Try it yourself: forktool -C {fork.path} status")
    return 0
