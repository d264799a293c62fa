#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the demo on the embedded example fork.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
echo "demo: building a throwaway upstream and fork, then walking the release cycle" >&2
exec .venv/bin/forktool demo "$@"
