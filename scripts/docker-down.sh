#!/usr/bin/env bash
# Stop the engine and registry scripts/docker-up.sh started (by their pid files).
# Keeps the state directory (images survive a restart); pass --purge to delete it.
set -euo pipefail
state=${FORKTOOL_DOCKER_DIR:-/tmp/forktool-docker}

stop() {  # stop PIDFILE NAME
  local pid
  [ -f "$1" ] || return 0
  pid=$(cat "$1")
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
    echo "docker-down: stopped $2 (pid $pid)" >&2
  fi
  rm -f "$1"
}

stop "$state/registry.pid" docker-registry
stop "$state/docker.pid" dockerd
if [ "${1:-}" = --purge ]; then
  umount -R "$state/exec" 2>/dev/null || true
  rm -rf "$state"
  echo "docker-down: removed $state" >&2
fi
