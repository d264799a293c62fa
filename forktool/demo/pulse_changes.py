"""The changes the demo upstream's history makes: the three fixes a fork carries as
patches (the example fork's patches share their hunks and so their patch-ids), and
the other edits on the way that move, conflict with or surround them.

Each edit is a tuple of ``(old, new)`` replacements; each ``old`` occurs once in the
file it edits.
"""

from __future__ import annotations

F1_SUBJECT = "config: do not crash on an empty config file"
F2_SUBJECT = "engine: retry on timeout"
F3_SUBJECT = "engine: decode input as UTF-8"

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
