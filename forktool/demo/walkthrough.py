"""``forktool demo``: a throwaway upstream and fork, and the release cycle on them.

Each step runs a real forktool command in-process against a real repository and
says what the output means. Steps are plain functions of a
:class:`~forktool.demo.session.Demo`, one module per capability in
:mod:`forktool.demo.steps`, run in the order of :data:`STEPS`; a capability adds its
own step.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from rich.text import Text

from forktool.builder import RepoBuilder
from forktool.demo.example import EXAMPLE_FILES, PATCHES_DIR, PIN_TAG, example_root
from forktool.demo.session import FORK_MAINTAINER, Demo, Step
from forktool.demo.steps.image import step_images
from forktool.demo.steps.pin import (
    step_align,
    step_align_bot_workflow,
    step_pin_bump_preview,
    step_pin_check,
    step_pin_show,
)
from forktool.demo.steps.release import step_check_after_sync, step_sync
from forktool.demo.steps.retirement import step_absorbed, step_retire
from forktool.demo.steps.series import (
    step_apply_dir,
    step_refresh,
    step_stale,
    step_status,
    step_verify,
)
from forktool.demo.steps.upstream import step_forecast, step_poll, step_resolve
from forktool.demo.upstream import DemoUpstream, build_demo_upstream
from forktool.errors import FatalError
from forktool.git import run as run_git
from forktool.output import Output

MARKER = ".forktool-demo"


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
