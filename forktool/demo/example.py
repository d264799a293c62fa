"""The example fork at the repository root, and how its patches were made.

The example pins the demo upstream's ``v1.1.0`` and carries three upstream fixes and a fork-only patch
as patches, each made on ``v1.1.0`` with the same hunks as the upstream commit.
``tests/commands/test_example.py`` regenerates the patch files from the demo upstream and
requires the committed bytes to match, so the example can never drift.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from forktool.builder import RepoBuilder
from forktool.demo import pulse_changes as fixes
from forktool.demo.upstream import DemoUpstream
from forktool.engine.patches.canonical import FORMAT_PATCH_ARGS
from forktool.git import run as run_git

FORK_AUTHOR = "Dana Okoye <dana@fork.example>"
PIN_TAG = "v1.1.0"

# Files of the example fork, relative to the repository root.
EXAMPLE_FILES = (
    "forktool.yaml",
    "series",
    "upstream.map",
    "alignment.ledger",
    "FORK.md",
    "docker/Dockerfile",
    "ci/build.yml",
)
PATCHES_DIR = "patches"


@dataclass(frozen=True)
class ExamplePatch:
    subject: str
    body: str
    path: str
    edit: tuple[tuple[str, str], ...]
    upstream_attr: str | None  # None: a fork-only patch (mapped to 'none')
    pr: str
    note: str
    new_file: str | None = None  # the whole content, for a patch that adds a file


FORK_MODULE = '''"""Which build of pulse this is: the fork's own builds say so in bug reports."""

FORK = "pulse-fork"
FORK_URL = "https://git.example.org/fork/pulse"


def describe(version: str) -> str:
    """The version as the fork's builds report it, e.g. ``1.1.0+pulse-fork``."""
    return f"{version}+{FORK}"
'''

EXAMPLE_PATCHES = (
    ExamplePatch(
        fixes.F1_SUBJECT,
        fixes.F1_MESSAGE.split("\n", 2)[2],
        "pulse/config.py",
        fixes.F1_EDIT,
        "fix_empty_config",
        "https://git.example.org/pulse/pulls/41",
        "Crash at start-up when the mounted pulse.json is empty (the config map is\n"
        "created before the operator fills it). Upstream fixed it in PR 41.\n",
    ),
    ExamplePatch(
        fixes.F2_SUBJECT,
        fixes.F2_MESSAGE.split("\n", 2)[2],
        "pulse/engine.py",
        fixes.F2_EDIT,
        "fix_retry_timeout",
        "https://git.example.org/pulse/pulls/57",
        "A single sink timeout aborted a whole run in production. Upstream merged the\n"
        "fix on main one commit after release-1.2 was cut: v1.2.0 does NOT contain it,\n"
        "whatever a probe says. Retire only when the pinned release contains it.\n",
    ),
    ExamplePatch(
        fixes.F3_SUBJECT,
        fixes.F3_MESSAGE.split("\n", 2)[2],
        "pulse/engine.py",
        fixes.F3_EDIT,
        "fix_utf8",
        "https://git.example.org/pulse/pulls/60",
        "Inputs failed to decode under LANG=C in the slim image. Upstream's fix reached\n"
        "release-1.2 as a cherry-pick, under another commit id.\n",
    ),
    ExamplePatch(
        "fork: identify the fork's builds",
        "Bug reports must say which build they come from: the fork's images carry\n"
        "this patch series on top of an upstream release. Fork-only: upstream has no\n"
        "use for it.\n",
        "pulse/fork.py",
        (),
        None,
        "",
        "Fork-only and permanent: the fork's images identify themselves in bug\n"
        "reports. Mapped to 'none', so no upstream release ever retires it.\n",
        new_file=FORK_MODULE,
    ),
)


def commit_message(patch: ExamplePatch, commit: str | None) -> str:
    if commit is None:
        return (
            f"{patch.subject}\n\n{patch.body.rstrip()}\n\n"
            "Upstream-Merge: none\n"
            "Exit-Criterion: permanent while the fork ships its own builds\n"
        )
    return (
        f"{patch.subject}\n\n{patch.body.rstrip()}\n\n"
        f"Upstream-PR: {patch.pr}\n"
        f"Upstream-Merge: {commit}\n"
        f"Exit-Criterion: retire when the pinned release contains {commit[:12]}\n"
    )


def upstream_commit(up: DemoUpstream, patch: ExamplePatch) -> str | None:
    return None if patch.upstream_attr is None else str(getattr(up, patch.upstream_attr))


def make_example_patches(up: DemoUpstream, dest: Path) -> list[str]:
    """Write the example's patch files into ``dest`` (created); returns their names."""
    work = Path(tempfile.mkdtemp(prefix="forktool-example-"))
    try:
        repo = RepoBuilder.clone(up.path, work / "fork")
        repo.git.run(["checkout", "-q", "-b", "patches", PIN_TAG], purpose="check out the pin")
        for patch in EXAMPLE_PATCHES:
            text = patch.new_file if patch.new_file is not None else repo.read(patch.path)
            for old, new in patch.edit:
                text = text.replace(old, new)
            message = commit_message(patch, upstream_commit(up, patch))
            repo.commit(message, {patch.path: text}, author=FORK_AUTHOR)
        dest.mkdir(parents=True, exist_ok=True)
        out = run_git(
            [*FORMAT_PATCH_ARGS, "-o", str(dest.resolve()), f"{PIN_TAG}..patches"],
            cwd=repo.path,
            purpose="export the example patches",
        ).out
        return [Path(line).name for line in out.splitlines() if line]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def upstream_map_text(up: DemoUpstream, names: list[str]) -> str:
    lines = ["# <patch-file> <upstream commit(s)> [url or note]"]
    for name, patch in zip(names, EXAMPLE_PATCHES, strict=True):
        commit = upstream_commit(up, patch)
        lines.append(f"{name} {commit or 'none'} {patch.pr}".rstrip())
    return "\n".join(lines) + "\n"


def example_root() -> Path:
    """The repository root that holds the example fork (a source checkout)."""
    root = Path(__file__).resolve().parents[2]
    if not (root / "forktool.yaml").is_file() or not (root / "series").is_file():
        from forktool.errors import FatalError

        raise FatalError(
            "the example fork's files were not found next to the forktool package",
            "run the demo from a source checkout installed with 'pip install -e .'",
        )
    return root
