"""The demo upstream: a small Python package ``pulse`` with a realistic release history.

The history reproduces the shapes forktool exists for (one commit per line)::

    main         init, ci, env, file sink (merged topic), S, logger, stale-bot, F1, docs,
                 | F2, F3, docs
    release-1.0  cut after "ci": v1.0.0
    release-1.1  cut at the topic merge: v1.1.0, cherry-pick -x S, v1.1.1rc0
    release-1.2  cut at "docs" (the "|"): cherry-pick -x F3, v1.2.0
    release-1.3  cut at main's tip: v1.3.0rc0, v1.3.0

- F1 ("config: do not crash on an empty config file") lands before release-1.2 is
  cut, so v1.2.0 contains it by ancestry.
- F2 ("engine: retry on timeout") lands on main one commit after the release-1.2
  branch point: v1.2.0 does not contain it, v1.3.0rc0 does.
- F3 ("engine: decode input as UTF-8") lands on main after the cut and reaches
  v1.2.0 only as a ``cherry-pick -x`` under another commit id.
- A logger added near the top of ``pulse/engine.py`` between v1.1.0 and v1.2.0
  moves F2's and F3's lines: a patch made on v1.1.0 applies to v1.2.0 at an offset.

Each fix is the same change a fork would carry as a patch on v1.1.0 (same hunks,
same context), so the fork's patches and upstream's commits share a patch-id. The
first commit's files are in :mod:`forktool.demo.pulse_tree`, every later change in
:mod:`forktool.demo.pulse_changes`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from forktool.builder import RepoBuilder
from forktool.demo.pulse_changes import (
    CI_312,
    ENV_EDIT,
    F1_EDIT,
    F1_MESSAGE,
    F2_EDIT,
    F2_MESSAGE,
    F3_EDIT,
    F3_MESSAGE,
    FILE_SINK_EDIT,
    LOGGER_EDIT,
    README_CHANGELOG,
    README_CONFIG,
    README_RETRIES,
    STALE_BOT,
    STALE_BOT_YML,
    WORKERS_EDIT,
)
from forktool.demo.pulse_tree import INITIAL_FILES

ADA = "Ada Marsh <ada@pulse.example>"
BEN = "Ben Okafor <ben@pulse.example>"
CHEN = "Chen Wu <chen@pulse.example>"
BOT = "pulse-release-bot <release-bot@pulse.example>"


@dataclass(frozen=True)
class DemoUpstream:
    """The built repository and the commits the demo and the tests talk about."""

    path: Path
    fix_empty_config: str
    fix_retry_timeout: str
    fix_utf8: str
    fix_utf8_cherry: str
    release_1_2_base: str
    tags: dict[str, str]


def build_demo_upstream(path: Path) -> DemoUpstream:
    """Build the demo upstream in ``path`` (created; must not hold a repository)."""
    repo = RepoBuilder.init(path, branch="main")
    tags: dict[str, str] = {}
    _early_history(repo, tags)
    fix_empty_config, base = _road_to_1_2(repo, tags)
    fix_retry_timeout = repo.commit(
        F2_MESSAGE, _edit(repo, "pulse/engine.py", *F2_EDIT), author=CHEN
    )
    fix_utf8 = repo.commit(F3_MESSAGE, _edit(repo, "pulse/engine.py", *F3_EDIT), author=BEN)
    fix_utf8_cherry = _release_1_2(repo, tags, fix_utf8)
    _release_1_3(repo, tags)
    repo.checkout("main")
    return DemoUpstream(
        path=repo.path,
        fix_empty_config=fix_empty_config,
        fix_retry_timeout=fix_retry_timeout,
        fix_utf8=fix_utf8,
        fix_utf8_cherry=fix_utf8_cherry,
        release_1_2_base=base,
        tags=tags,
    )


# -- the history, step by step ---------------------------------------------------


def _early_history(repo: RepoBuilder, tags: dict[str, str]) -> None:
    """main up to v1.1.1rc0: two releases, a merged topic, a backported fix."""
    repo.commit("Initial import of pulse", dict(INITIAL_FILES), author=ADA)
    repo.commit(
        "ci: test on Python 3.12", _edit(repo, ".github/workflows/ci.yml", *CI_312), author=ADA
    )
    _release(repo, tags, "release-1.0", "1.0.0")
    repo.commit(
        "config: read PULSE_* environment overrides",
        _edit(repo, "pulse/config.py", *ENV_EDIT),
        author=BEN,
    )
    repo.branch("topic/file-sink")
    repo.checkout("topic/file-sink")
    repo.commit(
        "engine: add a JSON-lines file sink",
        _edit(repo, "pulse/engine.py", *FILE_SINK_EDIT),
        author=CHEN,
    )
    repo.checkout("main")
    repo.commit(
        "README: document the configuration file",
        _edit(repo, "README.md", *README_CONFIG),
        author=ADA,
    )
    repo.merge("topic/file-sink", "Merge branch 'topic/file-sink'", author=ADA)
    _release(repo, tags, "release-1.1", "1.1.0")
    small_fix = repo.commit(
        "config: reject a zero worker count",
        _edit(repo, "pulse/config.py", *WORKERS_EDIT),
        author=BEN,
    )
    repo.checkout("release-1.1")
    repo.cherry_pick(small_fix)
    _bump_and_tag(repo, tags, "1.1.1rc0")
    repo.checkout("main")


def _road_to_1_2(repo: RepoBuilder, tags: dict[str, str]) -> tuple[str, str]:
    """main up to the release-1.2 branch point; (F1, the branch point)."""
    repo.commit(
        "engine: add a module logger", _edit(repo, "pulse/engine.py", *LOGGER_EDIT), author=ADA
    )
    repo.commit("ci: close stale issues automatically", {STALE_BOT: STALE_BOT_YML}, author=ADA)
    fix_empty_config = repo.commit(F1_MESSAGE, _edit(repo, "pulse/config.py", *F1_EDIT), author=BEN)
    base = repo.commit(
        "README: describe retries and backoff",
        _edit(repo, "README.md", *README_RETRIES),
        author=ADA,
    )
    repo.branch("release-1.2")
    return fix_empty_config, base


def _release_1_2(repo: RepoBuilder, tags: dict[str, str], fix_utf8: str) -> str:
    """release-1.2 gets F3 as a cherry-pick, then v1.2.0; the cherry-pick's id."""
    repo.checkout("release-1.2")
    cherry = repo.cherry_pick(fix_utf8)
    _bump_and_tag(repo, tags, "1.2.0")
    repo.checkout("main")
    return cherry


def _release_1_3(repo: RepoBuilder, tags: dict[str, str]) -> None:
    repo.commit(
        "README: link the changelog", _edit(repo, "README.md", *README_CHANGELOG), author=ADA
    )
    repo.branch("release-1.3")
    repo.checkout("release-1.3")
    _bump_and_tag(repo, tags, "1.3.0rc0")
    _bump_and_tag(repo, tags, "1.3.0")


def _release(repo: RepoBuilder, tags: dict[str, str], branch: str, version: str) -> None:
    """Cut ``branch`` from the current main commit and release ``version`` on it."""
    repo.branch(branch)
    repo.checkout(branch)
    _bump_and_tag(repo, tags, version)
    repo.checkout("main")


def _bump_and_tag(repo: RepoBuilder, tags: dict[str, str], version: str) -> None:
    current = repo.read("pulse/__init__.py").split('__version__ = "', 1)[1].split('"', 1)[0]
    files = _edit(
        repo, "pulse/__init__.py", (f'__version__ = "{current}"', f'__version__ = "{version}"')
    )
    repo.commit(f"release: {version}", files, author=BOT)
    tags[f"v{version}"] = repo.tag(f"v{version}", message=f"pulse {version}")


def _edit(repo: RepoBuilder, path: str, *changes: tuple[str, str]) -> dict[str, str | bytes | None]:
    """``path`` with each ``old`` replaced by ``new``; each ``old`` must occur once."""
    text = repo.read(path)
    for old, new in changes:
        if text.count(old) != 1:
            raise ValueError(f"demo upstream: {path} holds {text.count(old)} copies of {old!r}")
        text = text.replace(old, new)
    return {path: text}
