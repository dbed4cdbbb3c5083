#!/usr/bin/env bash
# Builds redlock-demo:local: cmd/redlock compiled statically on the host
# (CGO_ENABLED=0, so it needs no libc in the image) on an empty base, for
# the `demo` service of docker-compose.yml. Needs Go and a Docker engine.
#
# Idempotent and fast: Go's build cache makes the compile cheap, and the
# image carries a hash of the binary and the Dockerfile, so docker build
# runs only when either changed.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
image="${REDLOCK_DEMO_IMAGE:-redlock-demo:local}"

say() { echo "build-demo-image: $*" >&2; }
die() { say "$*"; exit 1; }

command -v go >/dev/null 2>&1 || die "go not found: the demo binary is built on the host"
command -v docker >/dev/null 2>&1 || die "docker CLI not found: install Docker Engine"
docker version --format '{{.Server.Version}}' >/dev/null 2>&1 ||
  die "no Docker engine reachable (is dockerd running? is DOCKER_HOST right?)"

stage="$(mktemp -d "${TMPDIR:-/tmp}/redlock-demo-image.XXXXXX")"
trap 'rm -rf "$stage"' EXIT
say "compiling cmd/redlock statically (CGO_ENABLED=0; the first time takes a while)"
(cd "$repo" && CGO_ENABLED=0 GOOS=linux go build -trimpath -o "$stage/redlock" ./cmd/redlock)
cp "$here/demo/Dockerfile" "$stage/"

hash="$(cat "$stage/redlock" "$stage/Dockerfile" | sha256sum | cut -c1-64)"
current="$(docker image inspect --format '{{ index .Config.Labels "redlock.build-hash" }}' "$image" 2>/dev/null || true)"
if [ "$current" = "$hash" ]; then
  say "$image is up to date"
  exit 0
fi
say "building $image"
docker build --quiet --label "redlock.build-hash=$hash" --tag "$image" "$stage" >/dev/null
say "built $image"
