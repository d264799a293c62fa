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
same context), so the fork's patches and upstream's commits share a patch-id.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from forktool.builder import RepoBuilder

ADA = "Ada Marsh <ada@pulse.example>"
BEN = "Ben Okafor <ben@pulse.example>"
CHEN = "Chen Wu <chen@pulse.example>"
BOT = "pulse-release-bot <release-bot@pulse.example>"

F1_SUBJECT = "config: do not crash on an empty config file"
F2_SUBJECT = "engine: retry on timeout"
F3_SUBJECT = "engine: decode input as UTF-8"

DEV_VERSION = "0.0.0.dev0"


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


# -- the fixes -------------------------------------------------------------------

F1_MESSAGE = f"""{F1_SUBJECT}

An empty pulse.json made load() fail with "Expecting value: line 1
column 1 (char 0)". Treat a blank file like a missing one: defaults.
"""

F1_EDIT = (
    (
        '    text = path.read_text(encoding="utf-8")\n',
        '    text = path.read_text(encoding="utf-8")\n'
        "    if not text.strip():\n"
        "        return {}\n",
    ),
)

F2_MESSAGE = f"""{F2_SUBJECT}

The retries and backoff settings were read but never used: a single
SinkTimeout aborted the whole run. Retry the batch up to `retries`
times, sleeping `backoff * attempt` seconds in between.
"""

F2_EDIT = (
    (
        """        try:
            self.sink.write(batch)
        except SinkTimeout as exc:
            self.stats.errors.append(str(exc))
            raise
""",
        """        for attempt in range(1, self.config.retries + 2):
            try:
                self.sink.write(batch)
                break
            except SinkTimeout as exc:
                self.stats.errors.append(str(exc))
                if attempt > self.config.retries:
                    raise
                self.stats.retries += 1
                time.sleep(self.config.backoff * attempt)
""",
    ),
)

F3_MESSAGE = f"""{F3_SUBJECT}

open() used the locale's encoding, so a UTF-8 input failed under
LANG=C. JSON-lines files are UTF-8 by definition.
"""

F3_EDIT = (
    ("    with open(path) as handle:\n", '    with open(path, encoding="utf-8") as handle:\n'),
)

# -- other changes on the way --------------------------------------------------------

CI_312 = (('python-version: ["3.10", "3.11"]', 'python-version: ["3.10", "3.11", "3.12"]'),)

ENV_EDIT = (
    ("import json\n", "import json\nimport os\n"),
    (
        "    return data\n\n\n",
        '''    return data


def from_env(environ: dict[str, str]) -> dict[str, object]:
    """Settings named ``PULSE_<FIELD>`` in ``environ``."""
    names = {f.name for f in fields(Config)}
    found: dict[str, object] = {}
    for key, value in environ.items():
        name = key[len(ENV_PREFIX):].lower()
        if key.startswith(ENV_PREFIX) and name in names:
            found[name] = value
    return found


''',
    ),
    (
        '''def load(path: Path = DEFAULT_PATH) -> Config:
    """The effective configuration: defaults < file."""
    settings = load_file(path)
''',
        '''def load(path: Path = DEFAULT_PATH, environ: dict[str, str] | None = None) -> Config:
    """The effective configuration: defaults < file < environment."""
    settings = load_file(path)
    settings.update(from_env(dict(os.environ) if environ is None else environ))
''',
    ),
)

FILE_SINK_EDIT = (
    (
        "\n\nclass Engine:\n",
        '''

class FileSink:
    def __init__(self, path: Path) -> None:
        self.path = path

    def write(self, batch: list[Record]) -> None:
        with open(self.path, "a", encoding="utf-8") as handle:
            for record in batch:
                handle.write(json.dumps(record, sort_keys=True) + "\\n")


def make_sink(target: str) -> Sink:
    """``-`` is standard output; anything else is a file to append to."""
    return StdoutSink() if target == "-" else FileSink(Path(target))


class Engine:
''',
    ),
    ("self.sink = sink or StdoutSink()", "self.sink = sink or make_sink(config.sink)"),
)

WORKERS_EDIT = (
    ("if config.workers < 0:", "if config.workers < 1:"),
    ('"workers must not be negative"', '"workers must be at least 1"'),
)

LOGGER_EDIT = (
    ("import json\nimport sys\n", "import json\nimport logging\nimport sys\n"),
    (
        "Record = dict[str, object]\n",
        "log = logging.getLogger(__name__)\n\nRecord = dict[str, object]\n",
    ),
)

README_CONFIG = (
    (
        "## Usage\n",
        """## Configuration

pulse reads `pulse.json` from the working directory, then `PULSE_<SETTING>`
environment variables. Settings: `batch_size`, `workers`, `retries`,
`backoff`, `timeout`, `sink` (`-` for standard output, or a file path).

## Usage
""",
    ),
)

README_RETRIES = (
    (
        "## Usage\n",
        """A batch the sink does not accept within `timeout` seconds is retried
`retries` times, waiting `backoff * attempt` seconds between attempts.

## Usage
""",
    ),
)

README_CHANGELOG = (
    ("## License\n", "## Changes\n\nSee the release notes on each tag.\n\n## License\n"),
)

# -- the initial tree --------------------------------------------------------------

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

STALE_BOT = ".github/workflows/stale-bot.yml"

STALE_BOT_YML = """name: stale-bot

on:
  schedule:
    - cron: "30 1 * * *"

permissions:
  issues: write
  pull-requests: write

jobs:
  stale:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/stale@v9
        with:
          days-before-stale: 60
          days-before-close: 14
          stale-issue-label: stale
"""

INITIAL_FILES: dict[str, str | bytes | None] = {
    "pulse/__init__.py": INIT_PY,
    "pulse/config.py": CONFIG_PY,
    "pulse/engine.py": ENGINE_PY,
    "README.md": README_MD,
    ".github/workflows/ci.yml": CI_YML,
}
