"""``forktool.yaml`` -> typed, validated settings.

Unknown keys, missing required keys, wrong types and bad ``pin_sites`` patterns are
errors that name the file and line. The package: ``settings`` (the typed values),
``yaml_nodes`` (YAML read node by node, with lines), ``sections`` (one reader per
section), ``remote`` (the remote's name and URL, checked before git sees them); here,
finding, loading and parsing the file. PyYAML is imported only when a file is parsed:
a command that only names the types starts without it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from forktool.config.remote import remote_name_problem, url_problem
from forktool.config.settings import (
    ApplyRule,
    Config,
    HistorySettings,
    ImageSettings,
    Layout,
    PatchForm,
    PinSite,
)
from forktool.errors import FatalError
from forktool.inputs import LINK_HINT, linked_directory, read_input

CONFIG_NAME = "forktool.yaml"
MAX_CONFIG_BYTES = 1 << 20


def parse_config(text: str, path: Path) -> Config:
    """The settings ``text`` (the contents of ``path``) declares, section by section."""
    from forktool.config import sections

    top = sections.document(text, str(path))
    lines = {key: node.line for key, node in top.items()}
    values: dict[str, Any] = {
        **sections.pin(top, lines),
        **sections.upstream(top, lines),
        **sections.rules(top),
        **sections.releases(top),
        **sections.paths(top),
        **sections.pin_sites(top),
        **sections.image(top),
        **sections.history(top),
        **sections.refresh(top),
    }
    return Config(root=path.parent, path=path, lines=lines, **values)


def load_config(path: Path) -> Config:
    if not path.is_file():
        raise FatalError(
            f"{path}: no such file",
            "run 'forktool init --pin TAG' in the fork, or pass -C DIR / --config FILE",
        )
    data = read_input(path, str(path))
    if len(data) > MAX_CONFIG_BYTES:
        raise FatalError(f"{path}: {len(data)} bytes is too large for a config file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FatalError(f"{path}: not valid UTF-8 (byte {exc.start})") from exc
    config = parse_config(text, path.resolve())
    refuse_linked_directories(config)
    return config


def refuse_linked_directories(config: Config) -> None:
    """Every file the fork keeps must be reached without leaving the fork through a
    symlinked directory: forktool would read (and rewrite, and delete) files git does
    not commit, possibly outside the fork."""
    files = [config.series, config.upstream_map, config.ledger, config.record]
    files += [site.file for site in config.pin_sites]
    directories = [config.patches, f"{config.patches}/notes"]
    for rel, itself in [*((f, False) for f in files), *((d, True) for d in directories)]:
        problem = linked_directory(config.root, rel, itself=itself)
        if problem:
            raise FatalError(
                f"{rel}: {problem}; forktool reads and writes the fork's files only inside "
                "the fork",
                LINK_HINT,
            )


def run_location(directory: Path | None, config_file: Path | None) -> tuple[Path, Path | None]:
    """(working directory, config file) of a run given ``-C directory`` and ``--config
    config_file``: the directory resolved (it must exist), a relative config file taken
    against it."""
    cwd = Path.cwd()
    if directory is not None:
        if not directory.is_dir():
            raise FatalError(f"-C {directory}: no such directory")
        cwd = directory.resolve()
    if config_file is not None and not config_file.is_absolute():
        config_file = (cwd / config_file).resolve()
    return cwd, config_file


def config_of(cwd: Path, config_file: Path | None) -> Config:
    """The configuration a run in ``cwd`` uses: ``config_file``, or the nearest
    forktool.yaml at or above ``cwd`` within its repository."""
    path = config_file or find_config(cwd, stop=lambda d: (d / ".git").exists())
    return load_config(path)


def find_config(start: Path, stop: Callable[[Path], bool] | None = None) -> Path:
    """The nearest forktool.yaml at or above ``start`` (not above ``stop``'s directory)."""
    here = start.resolve()
    for directory in (here, *here.parents):
        candidate = directory / CONFIG_NAME
        if candidate.is_file():
            return candidate
        if stop is not None and stop(directory):
            break
    raise FatalError(
        f"no {CONFIG_NAME} found in {here} or above",
        "run 'forktool init --pin TAG' to start a fork here, or pass -C DIR / --config FILE",
    )


__all__ = [
    "CONFIG_NAME",
    "MAX_CONFIG_BYTES",
    "ApplyRule",
    "Config",
    "HistorySettings",
    "ImageSettings",
    "Layout",
    "PatchForm",
    "PinSite",
    "config_of",
    "find_config",
    "load_config",
    "parse_config",
    "refuse_linked_directories",
    "remote_name_problem",
    "run_location",
    "url_problem",
]
