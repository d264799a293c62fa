#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the demo on the embedded example fork.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/forktool demo "$@"
