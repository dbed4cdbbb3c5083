#!/usr/bin/env bash
# Builds redlock-redis:local, the Redis node image of the integration tests,
# the chaos runner and docker-compose.yml, without a container registry: the
# image is FROM scratch and holds the host's own redis-server, every library
# ldd lists for it (at the same paths), the loader, libfaketime, and
# fastclock.so, a shim compiled here from redis/fastclock.c that gives a node
# a fast wall clock (LD_PRELOAD=/usr/lib/redlock/fastclock.so
# FASTCLOCK_RATE=10) for the chaos runner's negative control. libfaketime is
# there as asked for, but it hangs this jemalloc-linked redis-server at
# startup (see fastclock.c), so the chaos runner uses the shim.
#
# Idempotent and fast: the image carries a label with a hash of everything
# that goes into it, and the build is skipped when that hash is unchanged.
#
# REDLOCK_REDIS_IMAGE picks the image (default redlock-redis:local). Any
# other value (e.g. redis:7, where a registry exists) is used as is and
# nothing is built.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
default_image="redlock-redis:local"
image="${REDLOCK_REDIS_IMAGE:-$default_image}"
faketime_lib="/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"

say() { echo "build-image: $*" >&2; }
die() { say "$*"; exit 1; }

if [ "$image" != "$default_image" ]; then
  say "REDLOCK_REDIS_IMAGE=$image: using it as is, nothing to build"
  exit 0
fi

command -v docker >/dev/null 2>&1 || die "docker CLI not found: install Docker Engine"
docker version --format '{{.Server.Version}}' >/dev/null 2>&1 ||
  die "no Docker engine reachable (is dockerd running? is DOCKER_HOST right?)"

# install_pkg installs a Debian package when we can (root with apt-get);
# otherwise it fails with what to do.
install_pkg() {
  local pkg="$1" why="$2"
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "$why not found: installing $pkg"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg" >/dev/null
  else
    die "$why not found: install it with: apt-get install -y $pkg"
  fi
}

redis_bin="$(command -v redis-server || true)"
if [ -z "$redis_bin" ]; then
  install_pkg redis-server "redis-server"
  redis_bin="$(command -v redis-server)" || die "redis-server still not on PATH after installing it"
fi
[ -f "$faketime_lib" ] || install_pkg libfaketime "$faketime_lib"
[ -f "$faketime_lib" ] || die "$faketime_lib still missing after installing libfaketime"
command -v cc >/dev/null 2>&1 || install_pkg gcc "a C compiler (cc, for fastclock.so)"

# libs_of prints the absolute paths ldd lists for a binary: "name => /path"
# entries and the loader, which ldd prints bare.
libs_of() {
  ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// { print $3; next } $1 ~ /^\// { print $1 }'
}
mapfile -t libs < <({ libs_of "$redis_bin"; libs_of "$faketime_lib"; echo /lib64/ld-linux-x86-64.so.2; } | sort -u)
for lib in "${libs[@]}"; do
  [ -e "$lib" ] || die "ldd lists $lib but it does not exist"
done

# The hash covers each file's path in the image and its content, and the
# Dockerfile, redis.conf and sentinel.conf: any change to them rebuilds.
hash="$(
  {
    for f in "${libs[@]}" "$faketime_lib"; do echo "$f"; sha256sum <"$f"; done
    echo /usr/bin/redis-server; sha256sum <"$redis_bin"
    cat "$here/redis/Dockerfile" "$here/redis/redis.conf" "$here/redis/sentinel.conf" "$here/redis/fastclock.c"
  } | sha256sum | cut -c1-64
)"
current="$(docker image inspect --format '{{ index .Config.Labels "redlock.build-hash" }}' "$image" 2>/dev/null || true)"
if [ "$current" = "$hash" ]; then
  say "$image is up to date"
  exit 0
fi

stage="$(mktemp -d "${TMPDIR:-/tmp}/redlock-image.XXXXXX")"
trap 'rm -rf "$stage"' EXIT
root="$stage/rootfs"
mkdir -p "$root/usr/bin" "$root/data" "$root/tmp"
chmod 1777 "$root/tmp"
# cp -L: /usr/bin/redis-server is a symlink to redis-check-rdb, and Redis
# picks its mode from argv[0], so the copy must be a file named redis-server.
cp -L "$redis_bin" "$root/usr/bin/redis-server"
for f in "${libs[@]}" "$faketime_lib"; do
  mkdir -p "$root$(dirname "$f")"
  cp -L "$f" "$root$f"
done
mkdir -p "$root/usr/lib/redlock"
cc -O2 -Wall -shared -fPIC -o "$root/usr/lib/redlock/fastclock.so" "$here/redis/fastclock.c"
cp "$here/redis/Dockerfile" "$here/redis/redis.conf" "$here/redis/sentinel.conf" "$stage/"

say "building $image ($("$redis_bin" --version | awk '{print $3}'), ${#libs[@]} libraries)"
docker build --quiet --label "redlock.build-hash=$hash" --tag "$image" "$stage" >/dev/null
say "built $image"
