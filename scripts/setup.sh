#!/usr/bin/env bash
# Create .venv with forktool (editable) and its development tools. Idempotent: when
# .venv was set up from this very pyproject.toml, nothing is reinstalled.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
for tool in git patch; do command -v "$tool" >/dev/null 2>&1 || missing+=("$tool"); done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing ${missing[*]} (apt-get)" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "error: forktool needs ${missing[*]}; install them first" >&2
    exit 2
  fi
fi
stamp=.venv/.forktool-setup
want="$(python3 --version 2>&1) $(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ -x .venv/bin/forktool ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "setup: .venv is up to date with pyproject.toml; nothing to install" >&2
  exit 0
fi
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv" >&2
  python3 -m venv .venv
fi
echo "setup: installing forktool (editable) and its development tools into .venv; this takes a minute the first time" >&2
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e ".[dev]"
echo "$want" > "$stamp"
echo "setup: done" >&2
