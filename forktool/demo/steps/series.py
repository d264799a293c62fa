"""Walkthrough steps on the series itself: status, verify (and a stale series refused),
apply to a plain directory, canonical patch files and a refresh onto a newer tag."""

from __future__ import annotations

import shutil
import tarfile
from collections.abc import Sequence
from dataclasses import replace
from io import BytesIO
from pathlib import Path

from forktool.builder import RepoBuilder
from forktool.demo.example import PATCHES_DIR, PIN_TAG
from forktool.demo.session import FORK_MAINTAINER, Demo
from forktool.git import run as run_git


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
