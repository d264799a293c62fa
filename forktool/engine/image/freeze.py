"""``image freeze``: an annotated tag ``fork/<pin-tag>`` that pins a release down.

The tag sits on the release commit (HEAD) and its message records three values as
trailers: the image digest that was promoted, the patch-set hash, and the pin.
Running freeze again with the same values does nothing; a tag that records
anything else is a finding (exit 1) naming both values, and is never moved.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from forktool.config import Config
from forktool.engine.apply.arms import patchset_hash
from forktool.engine.image.build import L_PATCH_SET, L_REVISION, fork_at, require_image_settings
from forktool.engine.image.gate import read_record
from forktool.errors import FatalError
from forktool.git import Git

TAG_PREFIX = "fork/"
FIELDS = ("Image-Digest", "Patch-Set", "Pin")
_DIGEST = re.compile(r"(?:[^\s@]+@)?sha256:[0-9a-f]{64}")


@dataclass(frozen=True)
class FreezeResult:
    tag: str
    commit: str
    values: dict[str, str]
    created: bool
    ok: bool
    conflicts: dict[str, tuple[str, str]]  # field -> (recorded, wanted)

    def to_json(self) -> dict[str, object]:
        return {
            "tag": self.tag,
            "commit": self.commit,
            "values": self.values,
            "created": self.created,
            "ok": self.ok,
            "conflicts": {k: {"recorded": r, "wanted": w} for k, (r, w) in self.conflicts.items()},
        }


def tag_message(tag: str, values: Mapping[str, str]) -> str:
    lines = [f"{tag}: the fork's release on upstream {values['Pin'].split()[0]}", ""]
    lines += [f"{name}: {values[name]}" for name in FIELDS]
    return "\n".join(lines) + "\n"


def parse_trailers(message: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for line in message.splitlines():
        name, sep, value = line.partition(": ")
        if sep and name in FIELDS:
            found[name] = value.strip()
    return found


def promotions(config: Config) -> list[tuple[str, dict[str, object]]]:
    """Every ``promoted-*.json`` under image.records: (shown path, record)."""
    records = config.file(require_image_settings(config).records)
    found = []
    for path in sorted(records.glob("promoted-*.json")) if records.is_dir() else []:
        shown = config.rel(path)
        found.append((shown, read_record(path, shown, "promotion record")))
    return found


def promoted_reference(
    config: Config, revision: str, patch_set: str, digest: str | None = None
) -> str:
    """The reference a promotion of ``revision`` with ``patch_set`` recorded (newest first).

    With ``digest`` (``--digest``), only a promotion that names it counts: freeze
    records what was promoted from this very commit and series, nothing else.
    """
    best: tuple[str, str] | None = None
    other_patch_set: str | None = None
    for _shown, data in promotions(config):
        labels = data.get("labels")
        labels = labels if isinstance(labels, dict) else {}
        reference = data.get("reference")
        if labels.get(L_REVISION) != revision or data.get("ok") is not True:
            continue
        if not isinstance(reference, str) or not _DIGEST.fullmatch(reference):
            continue
        if digest is not None and digest not in (reference, data.get("digest")):
            continue
        if labels.get(L_PATCH_SET) != patch_set:
            other_patch_set = str(labels.get(L_PATCH_SET))
            continue
        stamp = str(data.get("time", ""))
        if best is None or stamp > best[0]:
            best = (stamp, reference)
    if best is not None:
        return best[1]
    records = require_image_settings(config).records
    if other_patch_set is not None:
        raise FatalError(
            f"the promotion of {revision[:12]} was built from patch set {other_patch_set}, "
            f"but HEAD carries {patch_set}",
            "rebuild, gate and promote a candidate of HEAD",
        )
    if digest is not None:
        raise FatalError(
            f"--digest {digest}: no promotion of {revision[:12]} with patch set "
            f"{patch_set[:19]}... names it (under {records})",
            "freeze only what 'forktool image promote' published from this commit",
        )
    raise FatalError(
        f"no promotion of {revision[:12]} is recorded under {records}",
        "promote the gated candidate first (forktool image promote)",
    )


def freeze_release(
    config: Config, git: Git, identity: Mapping[str, str], digest: str | None = None
) -> FreezeResult:
    revision = git.require_commit("HEAD", what="release commit (HEAD)")
    with fork_at(git, config, revision) as fork:
        patch_set = patchset_hash(fork.patches)
        pin = f"{fork.config.pin_tag} {fork.config.pin_commit}"
        tag = TAG_PREFIX + fork.config.pin_tag
    if digest is not None and not _DIGEST.fullmatch(digest):
        raise FatalError(
            f"--digest {digest}: expected sha256:<64 hex> or <repository>@sha256:<64 hex>"
        )
    reference = promoted_reference(config, revision, patch_set, digest)
    values = {"Image-Digest": reference, "Patch-Set": patch_set, "Pin": pin}
    existing = git.annotated_tag(tag)
    if existing is not None:
        commit, message = existing
        recorded = parse_trailers(message)
        conflicts = {
            name: (recorded.get(name, "(nothing)"), values[name])
            for name in FIELDS
            if recorded.get(name) != values[name]
        }
        if commit != revision:
            conflicts["commit"] = (commit, revision)
        return FreezeResult(tag, commit, values, False, not conflicts, conflicts)
    if not identity.get("GIT_COMMITTER_NAME") or not identity.get("GIT_COMMITTER_EMAIL"):
        raise FatalError(
            f"creating the tag {tag} needs a tagger identity",
            "set user.name and user.email in the fork's .git/config "
            "(git config --local user.name ...) or in your own git config (git config "
            "--global ...), or GIT_COMMITTER_NAME/GIT_COMMITTER_EMAIL",
        )
    git.create_annotated_tag(tag, revision, tag_message(tag, values), identity)
    return FreezeResult(tag, revision, values, True, True, {})


def tagger_identity(git: Git, env: Mapping[str, str]) -> dict[str, str]:
    """GIT_COMMITTER_* (or GIT_AUTHOR_*) from ``env``, else user.* as git finds it (the
    repository's, then the user's own)."""
    name = env.get("GIT_COMMITTER_NAME") or env.get("GIT_AUTHOR_NAME")
    email = env.get("GIT_COMMITTER_EMAIL") or env.get("GIT_AUTHOR_EMAIL")
    name = name or git.identity_config("user.name")
    email = email or git.identity_config("user.email")
    identity = {}
    if name and email:
        identity = {"GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email}
        if env.get("GIT_COMMITTER_DATE"):
            identity["GIT_COMMITTER_DATE"] = env["GIT_COMMITTER_DATE"]
    return identity
