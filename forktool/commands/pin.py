"""``forktool pin show|check|bump``: every place that names the pinned tag."""

from __future__ import annotations

from pathlib import Path

import click

from forktool.app import App, notice
from forktool.engine.release.pin_bump import BumpResult, plan_bump
from forktool.engine.release.pin_sites import read_pins, verify_pin_sites
from forktool.engine.revisions import Upstream, resolve, resolve_tag
from forktool.git import Git
from forktool.options import format_option, pass_app, user_path
from forktool.report import pin as report


@click.group("pin", no_args_is_help=False)
def command() -> None:
    """Read, verify and rewrite every pin site (only the pinned text changes).

    A pin site is a file and a pattern whose (?P<tag>...) group marks the tag
    (pin_sites in forktool.yaml); forktool.yaml's pin.tag is a site too.

    \b
    Examples:
      forktool pin show
      forktool pin check --format json
      forktool pin bump v1.2.0 --dry-run
    """


@command.command("show")
@format_option()
@pass_app
def show(app: App, fmt: str) -> int:
    """List every pin site: file, line and the tag it names.

    Lists problems (a missing file, a pattern that matches twice) without
    judging; 'forktool pin check' is the gate.

    \b
    Example:
      forktool pin show --format json | jq '.sites[] | [.file, .line, .value]'
    """
    result = read_pins(app.config(), app.git())
    app.emit(result, fmt, report.render_show)
    return 0


@command.command("check")
@format_option()
@pass_app
def check(app: App, fmt: str) -> int:
    """Verify the pin: one tag everywhere, locked to its commit, carried by HEAD.

    Fails (exit 1, every problem listed with file and line) when a site's
    pattern matches zero or several times or its file is missing; sites
    disagree with each other or with pin.tag; the tag no longer peels to
    pin.commit (a moved tag: both commits are named); or, for a merged-layout
    fork, HEAD does not contain the pinned commit.

    \b
    Example:
      forktool pin check
    """
    result = verify_pin_sites(app.config(), app.git())
    app.emit(result, fmt, report.render_check)
    return 0 if result.ok else 1


@command.command("bump")
@click.argument("tag")
@click.option("--fetch", is_flag=True, help="Fetch TAG from the upstream remote first.")
@click.option("--dry-run", is_flag=True, help="Show the diff; write nothing.")
@format_option()
@pass_app
def bump(app: App, tag: str, fetch: bool, dry_run: bool, fmt: str) -> int:
    """Pin TAG: rewrite every pin site, pin.tag and pin.commit.

    Only the matched text changes: every other byte of every file (comments,
    quoting, indentation) stays. If any site does not match exactly once, or
    TAG is unknown or not a safe tag name, nothing is written (exit 2). The
    files are written all or nothing.

    A patch FORK.md records as retired whose upstream commits TAG does not
    contain (a pin moved back below a retired fix) is named in a warning
    before anything is written; 'forktool check' then fails until the patch is
    restored (retire --undo) or the pin contains the fix again.

    \b
    Examples:
      forktool pin bump v1.2.0 --dry-run
      forktool pin bump v1.2.0 --fetch
    """
    git = app.git()
    if dry_run and not fetch:
        result = _bump(app, git, tag, fetch=False, dry_run=True)
    else:
        with app.lock(git):  # the config is read under the lock
            result = _bump(app, git, tag, fetch=fetch, dry_run=dry_run)
    for line in result.notices:
        notice(line)
    app.emit(result, fmt, report.render_bump)
    return 0


def _bump(app: App, git: Git, tag: str, *, fetch: bool, dry_run: bool) -> BumpResult:
    config = app.config()
    upstream = Upstream.of(config, "--fetch", fetch=fetch)
    revision, fetched = resolve_tag(git, tag, upstream=upstream, pinning=True)
    return plan_bump(config, git, revision, dry_run=dry_run, fetched=fetched, warn=app.output.warn)


@command.command("import-tarball")
@click.argument("files", nargs=-1, required=True, type=user_path(dir_okay=False))
@click.option(
    "--tag",
    default=None,
    metavar="TAG",
    help="The release tag the tarball was made from (default: pin.tag).",
)
@format_option()
@pass_app
def import_tarball(app: App, files: tuple[Path, ...], tag: str | None, fmt: str) -> int:
    """Import the release tarball as a commit on its tag, and pin its tree.

    The tarball's tree (its single top-level directory stripped; Debian
    component tarballs, pkg_1.2.orig-COMP.tar.xz, under COMP/) becomes one
    commit whose parent is the tag's commit, under refs/forktool/imports/TAG:
    git-buildpackage's upstream-vcs-tag shape. The same tarballs on the same tag
    always give the same commit id. When TAG is the pinned tag the commit is
    recorded as pin.import_commit: verify, check, status and fmt then apply the
    series to the tarball's tree, while retirement and first releases are still
    decided by the tag.

    \b
    Examples:
      forktool pin import-tarball ../curl_7.88.1.orig.tar.gz
      forktool pin import-tarball ../pkg_1.2.orig.tar.xz ../pkg_1.2.orig-docs.tar.xz
    """
    from forktool.engine.release.tarball import import_tarballs

    git = app.git()
    with app.lock(git):  # the config is read under the lock
        config = app.config()
        revision = resolve(git, tag or config.pin_tag, upstream=Upstream.of(config))
        result = import_tarballs(config, git, files, revision)
    app.emit(result, fmt, report.render_import)
    return 0
