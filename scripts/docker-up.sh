#!/usr/bin/env bash
# Start a private Docker engine and a local registry for forktool's image commands,
# tests and demo (no network needed). Idempotent: a second run reuses what runs.
#
#   eval "$(scripts/docker-up.sh)"      # exports DOCKER_HOST
#   scripts/docker-down.sh              # stops both
#
# State lives in $FORKTOOL_DOCKER_DIR (default /tmp/forktool-docker): the engine's
# socket, data and exec roots, pid files, logs, the registry's storage and config,
# and an env file (env.sh) with the exports. Needs root, dockerd (docker.io),
# docker-registry and busybox-static. Prints 'export DOCKER_HOST=...' on stdout;
# everything else goes to stderr. Exit 1 with the reason when anything cannot start.
set -euo pipefail

state=${FORKTOOL_DOCKER_DIR:-/tmp/forktool-docker}
registry_addr=${FORKTOOL_REGISTRY:-127.0.0.1:5000}
base_image=${FORKTOOL_BUSYBOX_IMAGE:-forktool/busybox:1}
sock="$state/docker.sock"
host="unix://$sock"

die() { echo "docker-up: $*" >&2; exit 1; }
log() { echo "docker-up: $*" >&2; }

for tool in dockerd docker docker-registry busybox curl; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool is not installed (apt-get install -y docker.io docker-registry busybox-static curl)"
done
[ "$(id -u)" = 0 ] || die "dockerd needs root here (rootless Docker is not set up by this script)"
mkdir -p "$state"

engine_up() { docker -H "$host" version --format '{{.Server.Version}}' >/dev/null 2>&1; }
registry_up() { curl -fsS -o /dev/null "http://$registry_addr/v2/" 2>/dev/null; }
wait_for() {  # wait_for CHECK SECONDS WHAT LOG
  local i
  for ((i = 0; i < $2 * 10; i++)); do "$1" && return 0; sleep 0.1; done
  tail -n 20 "$4" >&2 2>/dev/null || true
  die "$3 did not come up within $2 s (log: $4)"
}

if engine_up; then
  log "engine already running at $host"
else
  rm -f "$sock"
  mkdir -p "$state/data" "$state/exec"
  # No bridge, no iptables: containers run with network_mode=none anyway, and
  # this machine (and CI) may not allow changing the host's network.
  setsid dockerd \
    --host "$host" \
    --data-root "$state/data" \
    --exec-root "$state/exec" \
    --pidfile "$state/docker.pid" \
    --bridge=none --iptables=false --ip6tables=false --ip-forward=false --ip-masq=false \
    >"$state/dockerd.log" 2>&1 </dev/null &
  wait_for engine_up 60 "dockerd" "$state/dockerd.log"
  log "engine started at $host (log: $state/dockerd.log)"
fi

if registry_up; then
  log "registry already answering at $registry_addr"
else
  mkdir -p "$state/registry"
  cat >"$state/registry.yml" <<YAML
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $state/registry
  delete:
    enabled: true
http:
  addr: $registry_addr
YAML
  setsid docker-registry serve "$state/registry.yml" >"$state/registry.log" 2>&1 </dev/null &
  echo $! >"$state/registry.pid"
  wait_for registry_up 30 "docker-registry" "$state/registry.log"
  log "registry started at $registry_addr (log: $state/registry.log)"
fi

if docker -H "$host" image inspect "$base_image" >/dev/null 2>&1; then
  log "base image $base_image present"
else
  # The only base image there is offline: a busybox rootfs, imported.
  rootfs=$(mktemp -d)
  trap 'rm -rf "$rootfs"' EXIT
  mkdir -p "$rootfs/bin" "$rootfs/etc" "$rootfs/tmp" "$rootfs/root"
  chmod 1777 "$rootfs/tmp"
  cp "$(command -v busybox)" "$rootfs/bin/busybox"
  for applet in $(busybox --list); do
    [ -e "$rootfs/bin/$applet" ] || ln -s busybox "$rootfs/bin/$applet"
  done
  printf 'root:x:0:0:root:/root:/bin/sh\n' >"$rootfs/etc/passwd"
  printf 'root:x:0:\n' >"$rootfs/etc/group"
  tar -C "$rootfs" -cf "$rootfs.tar" .
  docker -H "$host" import --change 'ENV PATH=/bin' --change 'CMD ["/bin/sh"]' \
    "$rootfs.tar" "$base_image" >/dev/null
  rm -f "$rootfs.tar"
  log "imported $base_image from $(command -v busybox)"
fi

cat >"$state/env.sh" <<ENV
export DOCKER_HOST=$host
export FORKTOOL_REGISTRY=$registry_addr
export FORKTOOL_BUSYBOX_IMAGE=$base_image
ENV
echo "export DOCKER_HOST=$host"
