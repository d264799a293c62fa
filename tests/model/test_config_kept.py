"""Parsed configs kept between runs (forktool.config.kept): a run whose forktool.yaml
is unchanged starts without importing PyYAML, and reads exactly what a parse gives.

Each test has its own cache directory (tests/conftest.py sets FORKTOOL_CACHE_DIR).
"""

from __future__ import annotations

import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

from forktool.cache_files import cache_root
from forktool.config import kept, load_config
from forktool.config.yaml_nodes import _parse
from forktool.errors import FatalError

RICH = """\
# a comment
upstream:
  remote: upstream
  url: https://example.org/project.git
pin:
  tag: "v1.10"
  commit: 0123456789abcdef0123456789abcdef01234567
release_tags: 'v*'
release_version: {prefix: 'v', separator: '.'}
prereleases: false
apply_rule: exact
pin_sites:
  - file: Dockerfile
    pattern: 'ARG UPSTREAM_TAG=(?P<tag>\\S+)'
image:
  repository: registry.example.org/project
  dockerfile: Dockerfile
  gate: [[sh, -c, "make test"], [make, check]]
  gate_timeout: 600
history:
  prefixes: [src/, docs]
  gnu_patch: yes
refresh:
  allow_merged: true
"""


def entries() -> list[Path]:
    root = cache_root()
    assert root is not None
    return sorted((root / kept.FOLDER).glob(f"*{kept.SUFFIX}"))


def sealed(entry: object) -> bytes:
    """``entry`` as kept.keep writes one: its payload, then the payload's checksums."""
    data = marshal.dumps(entry)
    return data + kept._seal(data)


def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "forktool.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def load_in_a_new_process(path: Path) -> tuple[str, bool]:
    """(the loaded config's repr, whether PyYAML was imported), from a fresh interpreter."""
    code = (
        "import sys; from pathlib import Path; from forktool.config import load_config; "
        f"c = load_config(Path({str(path)!r})); print(repr(c)); print('yaml' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ)
    )
    assert done.returncode == 0, done.stderr
    shown, imported = done.stdout.rstrip("\n").rsplit("\n", 1)
    return shown, imported == "True"


def test_a_second_run_reads_the_kept_parse_without_pyyaml_and_loads_the_same(
    tmp_path: Path,
) -> None:
    path = write_config(tmp_path, RICH)
    first, imported_first = load_in_a_new_process(path)
    assert imported_first
    assert len(entries()) == 1
    second, imported_second = load_in_a_new_process(path)
    assert not imported_second
    assert second == first


@pytest.mark.parametrize(
    "text",
    [
        RICH,
        "pin: {tag: v1, commit: 0123456789abcdef0123456789abcdef01234567}\n",
        "pin:\n  tag: '1.10'\n  commit: 0123456789abcdef0123456789abcdef01234567\n"
        "series: |\n  odd\n",
        'pin:\n  tag: "caf\\u00e9"\n  commit: 0123456789abcdef0123456789abcdef01234567\n',
    ],
)
def test_the_kept_document_is_exactly_the_parse(tmp_path: Path, text: str) -> None:
    parsed = _parse(text, "forktool.yaml")
    kept.keep(text, parsed)
    assert kept.recall(text) == parsed


def test_an_edited_config_is_parsed_again_and_its_errors_reported(tmp_path: Path) -> None:
    path = write_config(tmp_path, RICH)
    load_config(path)
    write_config(tmp_path, RICH.replace("prereleases: false", "prerelease: false"))
    with pytest.raises(FatalError, match="unknown key 'prerelease'"):
        load_config(path)


def test_a_config_with_an_error_is_never_kept(tmp_path: Path) -> None:
    path = write_config(tmp_path, "pin: [unclosed\n")
    for _ in range(2):
        with pytest.raises(FatalError, match="not valid YAML"):
            load_config(path)
    assert entries() == []
    write_config(tmp_path, "a: &x 1\npin: *x\n")
    with pytest.raises(FatalError, match="anchors and aliases"):
        load_config(path)
    assert entries() == []


def test_the_checks_run_on_a_kept_document_too(tmp_path: Path) -> None:
    text = "pin: {tag: v1, commit: 0123456789abcdef0123456789abcdef01234567}\nbogus: 1\n"
    path = write_config(tmp_path, text)
    for _ in range(2):  # the second load reads the kept parse, and still refuses it
        with pytest.raises(FatalError, match=r"forktool.yaml:2: unknown key 'bogus'"):
            load_config(path)
    assert len(entries()) == 1


def test_an_entry_for_other_text_or_another_pyyaml_is_not_used(tmp_path: Path) -> None:
    text = "pin: {tag: v1, commit: 0123456789abcdef0123456789abcdef01234567}\n"
    other = "pin: {tag: v2, commit: 0123456789abcdef0123456789abcdef01234567}\n"
    kept.keep(text, _parse(text, "forktool.yaml"))
    (entry,) = entries()
    parser = kept.parser_identity()
    planted = (kept.FORMAT, parser, other, _parse(other, "forktool.yaml"))
    entry.write_bytes(sealed(planted))  # another text under this text's name
    assert kept.recall(text) is None
    older = (kept.FORMAT, f"{parser}-older", text, _parse(text, "forktool.yaml"))
    entry.write_bytes(sealed(older))
    assert kept.recall(text) is None
    entry.write_bytes(b"\x00garbage")
    assert kept.recall(text) is None


def test_an_entry_others_can_write_is_not_used(tmp_path: Path) -> None:
    text = "pin: {tag: v1, commit: 0123456789abcdef0123456789abcdef01234567}\n"
    kept.keep(text, _parse(text, "forktool.yaml"))
    (entry,) = entries()
    entry.parent.chmod(0o777)
    assert kept.recall(text) is None


def test_an_empty_cache_dir_setting_keeps_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = cache_root()
    assert own is not None
    monkeypatch.setenv("FORKTOOL_CACHE_DIR", "")
    path = write_config(tmp_path, RICH)
    assert load_config(path) == load_config(path)
    assert not (own / kept.FOLDER).exists()


def test_only_the_most_recently_used_entries_stay(tmp_path: Path) -> None:
    for number in range(kept.KEPT + 3):
        text = f"pin: {{tag: v{number}, commit: 0123456789abcdef0123456789abcdef01234567}}\n"
        kept.keep(text, _parse(text, "forktool.yaml"))
    assert len(entries()) == kept.KEPT
    assert not [p for p in entries()[0].parent.iterdir() if p.name.startswith(".tmp-")]


def test_a_changed_entry_is_parsed_again_never_trusted(tmp_path: Path) -> None:
    """One byte of the kept document changed (v1.3.0 -> v1.1.0): the checksums no longer
    hold, and the config is what its text says."""
    path = write_config(tmp_path, RICH.replace('"v1.10"', "v1.3.0"))
    first = load_config(path)
    (entry,) = entries()
    data = entry.read_bytes()
    at = data.rindex(b"v1.3.0")
    entry.write_bytes(data[:at] + b"v1.1.0" + data[at + 6 :])
    assert kept.recall(path.read_text()) is None
    assert load_config(path) == first
    assert load_config(path).pin_tag == "v1.3.0"


@pytest.mark.parametrize(
    "document",
    [
        (2,),
        (kept.MAPPING, "tag:yaml.org,2002:map", ((1, 2),), None, 1),
        (kept.MAPPING, "tag:yaml.org,2002:map", "not pairs", None, 1),
        (kept.SCALAR, "tag:yaml.org,2002:str", 7, None, 1),
        (kept.SCALAR, "tag:yaml.org,2002:str", "v", None, 0),
        (9, "tag:yaml.org,2002:str", "v", None, 1),
    ],
)
def test_a_sealed_entry_that_is_not_a_document_is_parsed_again(
    tmp_path: Path, document: object
) -> None:
    path = write_config(tmp_path, RICH)
    first = load_config(path)
    (entry,) = entries()
    entry.write_bytes(sealed((kept.FORMAT, kept.parser_identity(), RICH, document)))
    assert kept.recall(RICH) is None
    assert load_config(path) == first
