#!/usr/bin/env bash
# Build an offline base image WITH Python for the image tier's real-Python tests:
# a Debian bookworm root file system (python3-minimal, git, patch) made by
# mmdebstrap from Debian's package archive, then `docker import`ed.
#
#   eval "$(scripts/python-base-image.sh)"   # exports FORKTOOL_PYTHON_IMAGE
#
# Needs the engine scripts/docker-up.sh starts (DOCKER_HOST), root and mmdebstrap.
# The tarball is cached in $FORKTOOL_PYTHON_CACHE (default: $FORKTOOL_DOCKER_DIR or
# /tmp/forktool-docker); an image already in the engine is reused. Prints the
# export on stdout, everything else on stderr; exit 1 with the reason on failure.
set -euo pipefail

image=${FORKTOOL_PYTHON_IMAGE:-forktool/python:bookworm}
cache=${FORKTOOL_PYTHON_CACHE:-${FORKTOOL_DOCKER_DIR:-/tmp/forktool-docker}}
rootfs="$cache/python-rootfs.tar"

die() { echo "python-base-image: $*" >&2; exit 1; }
log() { echo "python-base-image: $*" >&2; }

command -v docker >/dev/null 2>&1 || die "docker (the CLI) is not installed"
[ -n "${DOCKER_HOST:-}" ] || die "DOCKER_HOST is not set: run scripts/docker-up.sh first"

if docker image inspect "$image" >/dev/null 2>&1; then
  log "base image $image present"
else
  if [ ! -s "$rootfs" ]; then
    command -v mmdebstrap >/dev/null 2>&1 || die "mmdebstrap is not installed (apt-get install -y mmdebstrap)"
    mkdir -p "$cache"
    log "building a bookworm rootfs with python3-minimal, git, patch (about a minute)"
    mmdebstrap --quiet --format=tar --variant=apt --include=python3-minimal,git,patch \
      bookworm "$rootfs.part" >&2 || { rm -f "$rootfs.part"; die "mmdebstrap failed"; }
    mv "$rootfs.part" "$rootfs"
  fi
  docker import --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' --change 'CMD ["/bin/sh"]' \
    "$rootfs" "$image" >/dev/null || die "docker import of $rootfs failed"
  log "imported $image from $rootfs"
fi
echo "export FORKTOOL_PYTHON_IMAGE=$image"
