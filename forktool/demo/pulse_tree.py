"""The demo upstream's first commit: the ``pulse`` package, its README and its CI."""

from __future__ import annotations

INIT_PY = '''"""pulse: move JSON-lines records from a file to a sink, in batches."""

from pulse.config import Config, ConfigError, load
from pulse.engine import Engine, EngineError

__version__ = "0.0.0.dev0"

__all__ = ["Config", "ConfigError", "Engine", "EngineError", "__version__", "load"]
'''

CONFIG_PY = '''"""pulse configuration: defaults, a JSON file, then PULSE_* environment overrides."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields, replace
from pathlib import Path

DEFAULT_PATH = Path("pulse.json")
ENV_PREFIX = "PULSE_"


class ConfigError(ValueError):
    """The configuration cannot be used."""


@dataclass(frozen=True)
class Config:
    batch_size: int = 100
    workers: int = 4
    retries: int = 3
    backoff: float = 0.5
    timeout: float = 30.0
    sink: str = "-"


def load_file(path: Path) -> dict[str, object]:
    """The settings in the JSON file at ``path``; a missing file means defaults."""
    if not path.exists():
        return {}
    text = path.read_text(encoding="utf-8")
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data


def coerce(name: str, value: object) -> object:
    """``value`` converted to the type of the ``name`` field."""
    kind = {f.name: f.type for f in fields(Config)}[name]
    try:
        if kind == "int":
            return int(str(value))
        if kind == "float":
            return float(str(value))
    except ValueError as exc:
        raise ConfigError(f"{name}: expected {kind}, got {value!r}") from exc
    return str(value)


def validate(config: Config) -> Config:
    if config.batch_size < 1:
        raise ConfigError("batch_size must be at least 1")
    if config.workers < 0:
        raise ConfigError("workers must not be negative")
    if config.retries < 0:
        raise ConfigError("retries must not be negative")
    if config.timeout <= 0:
        raise ConfigError("timeout must be positive")
    return config


def load(path: Path = DEFAULT_PATH) -> Config:
    """The effective configuration: defaults < file."""
    settings = load_file(path)
    unknown = sorted(set(settings) - {f.name for f in fields(Config)})
    if unknown:
        raise ConfigError(f"{path}: unknown setting(s): {', '.join(unknown)}")
    values = {name: coerce(name, value) for name, value in settings.items()}
    return validate(replace(Config(), **values))
'''

ENGINE_PY = '''"""The pulse engine: read JSON-lines records and write them to a sink in batches."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from pulse.config import Config

Record = dict[str, object]


class EngineError(Exception):
    """A run could not complete."""


class SinkTimeout(EngineError):
    """The sink did not accept a batch in time."""


class Sink(Protocol):
    def write(self, batch: list[Record]) -> None: ...


@dataclass
class Stats:
    read: int = 0
    written: int = 0
    batches: int = 0
    retries: int = 0
    elapsed: float = 0.0
    errors: list[str] = field(default_factory=list)


def read_records(path: Path) -> Iterator[Record]:
    """One record per non-blank line of the JSON-lines file at ``path``."""
    with open(path) as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError as exc:
                raise EngineError(f"{path}:{number}: {exc.msg}") from exc


def batches(records: Iterable[Record], size: int) -> Iterator[list[Record]]:
    batch: list[Record] = []
    for record in records:
        batch.append(record)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


class StdoutSink:
    def write(self, batch: list[Record]) -> None:
        for record in batch:
            sys.stdout.write(json.dumps(record, sort_keys=True) + "\\n")


class Engine:
    def __init__(self, config: Config, sink: Sink | None = None) -> None:
        self.config = config
        self.sink = sink or StdoutSink()
        self.stats = Stats()

    def run(self, source: Path) -> Stats:
        started = time.monotonic()
        for batch in batches(read_records(source), self.config.batch_size):
            self.stats.read += len(batch)
            self._send(batch)
        self.stats.elapsed = time.monotonic() - started
        return self.stats

    def _send(self, batch: list[Record]) -> None:
        try:
            self.sink.write(batch)
        except SinkTimeout as exc:
            self.stats.errors.append(str(exc))
            raise
        self.stats.written += len(batch)
        self.stats.batches += 1
'''

README_MD = """# pulse

pulse moves JSON-lines records from a file to a sink, in batches.

## Install

    pip install pulse

## Usage

```python
from pathlib import Path

import pulse

stats = pulse.Engine(pulse.load()).run(Path("events.jsonl"))
print(stats.written, "records written")
```

## License

Apache-2.0
"""

CI_YML = """name: ci

on:
  push:
    branches: [main, "release-*"]
  pull_request:

jobs:
  test:
    runs-on: ubuntu-latest
    strategy:
      matrix:
        python-version: ["3.10", "3.11"]
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: ${{ matrix.python-version }}
      - run: pip install -e . pytest
      - run: pytest -q
"""

INITIAL_FILES: dict[str, str | bytes | None] = {
    "pulse/__init__.py": INIT_PY,
    "pulse/config.py": CONFIG_PY,
    "pulse/engine.py": ENGINE_PY,
    "README.md": README_MD,
    ".github/workflows/ci.yml": CI_YML,
}
