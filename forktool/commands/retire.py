from __future__ import annotations

import contextlib

import click

from forktool.app import App
from forktool.engine.retirement.absorbed import absorbed
from forktool.engine.retirement.absorption import AbsorbedResult
from forktool.engine.retirement.knowledge import MissingCommit
from forktool.engine.retirement.restore import undo
from forktool.engine.retirement.retire import record_date, retire
from forktool.engine.revisions import Upstream, resolve
from forktool.fork import Fork
from forktool.git import Git
from forktool.model.revision import Revision
from forktool.options import format_option, pass_app
from forktool.report import retirement


@click.command("retire")
@click.argument("patches", nargs=-1, metavar="[PATCH]...")
@click.option("--tag", metavar="TAG", help="The release tag that absorbed the patches.")
@click.option("--dry-run", is_flag=True, help="Decide and show everything; write nothing.")
@click.option(
    "--force",
    is_flag=True,
    help="Retire the named patches whatever their verdict (needs --reason, which is recorded).",
)
@click.option("--reason", metavar="TEXT", help="Why: recorded with --force and with --undo.")
@click.option(
    "--undo",
    "undo_patch",
    metavar="PATCH",
    help="Restore PATCH, retired by mistake, from history (file, note, series and map lines).",
)
@format_option()
@pass_app
def command(
    app: App,
    patches: tuple[str, ...],
    tag: str | None,
    dry_run: bool,
    force: bool,
    reason: str | None,
    undo_patch: str | None,
    fmt: str,
) -> int:
    """Drop absorbed patches: series line, patch file, note, map line, and a record row.

    With no PATCH, retires every patch whose 'absorbed --tag TAG' verdict is 'retire'.
    A named patch with any other verdict is refused (exit 1, nothing changed) unless
    --force --reason TEXT is given; the reason goes into FORK.md's retirement record.
    So is a patch whose fix the pinned tag does not contain yet: retire after
    'forktool pin bump TAG', or through 'forktool sync TAG'. Every file changes
    together or not at all.

    --undo PATCH restores a wrong retirement from the last commit whose series listed
    it (HEAD, if the retirement is not committed yet) and records why.

    Record dates are today's UTC date, or FORKTOOL_DATE (YYYY-MM-DD) when set.

    \b
    Examples:
      forktool retire --tag v1.2.0 --dry-run
      forktool retire --tag v1.2.0
      forktool retire 0003-x.patch --tag v1.2.0 --force --reason "cherry-picked as c349aa4"
      forktool retire --undo 0001-x.patch --reason "the image crash-looped without it"
    """
    _check_options(patches, tag, force, reason, undo_patch)
    today = record_date()
    git = app.git()
    with contextlib.nullcontext() if dry_run else app.lock(git):
        fork = app.fork()  # read under the lock: another run may just have changed it
        if undo_patch is not None:
            restored = undo(fork, git, undo_patch, reason=reason, dry_run=dry_run, today=today)
            app.emit(restored, fmt, retirement.render_undo)
            return 0
        assert tag is not None
        revision = resolve(git, tag, upstream=Upstream.of(fork.config))
        report = _judged(fork, git, revision, patches if force else ())
        result = retire(
            fork,
            git,
            report,
            patches,
            reason=reason if force else None,
            dry_run=dry_run,
            today=today,
        )
    app.emit(result, fmt, retirement.render_retire)
    return 0 if result.ok else 1


def _judged(fork: Fork, git: Git, revision: Revision, forced: tuple[str, ...]) -> AbsorbedResult:
    """absorbed's verdicts at ``revision``. The ``forced`` patches (--force names them)
    are judged alone when another patch's mapped commit is not here (a tarball fork's
    DEP-3 ids, with no upstream history): that commit cannot stop them."""
    try:
        return absorbed(fork, git, revision)
    except MissingCommit as missing:
        if not forced or missing.patch is None or missing.patch in forced:
            raise
        named = tuple(fork.patch(n) for n in dict.fromkeys(forced))
        return absorbed(fork._replace(patches=named), git, revision)


def _check_options(
    patches: tuple[str, ...],
    tag: str | None,
    force: bool,
    reason: str | None,
    undo_patch: str | None,
) -> None:
    """A usage error (exit 2) for options that do not go together: --undo stands alone,
    retiring needs --tag, --force needs --reason, --reason needs --force or --undo."""
    if undo_patch is not None:
        if patches or tag or force:
            raise click.UsageError("--undo takes one PATCH and no --tag, --force or other names")
    elif tag is None:
        raise click.UsageError("--tag TAG is required (or --undo PATCH)")
    if force and not reason:
        raise click.UsageError("--force needs --reason TEXT: the reason is recorded")
    if reason and not force and undo_patch is None:
        raise click.UsageError("--reason goes with --force or --undo")
