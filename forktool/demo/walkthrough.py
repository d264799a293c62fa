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


STEPS: list[Step] = [step_status, step_verify, step_stale, step_apply_dir]


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


STEPS.append(step_images)
