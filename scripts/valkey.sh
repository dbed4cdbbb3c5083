#!/usr/bin/env bash
# make valkey: the Redis-backed suites again, on valkey-server instead of
# redis-server, as they run on Redis 7.0, with a missing server a failure
# (REDLOCK_REQUIRE_REDIS=1), not a skip. REDLOCK_SERVER names the binary
# that redlocktest/redisproc starts for every node of every test.
#
#  1. Every package of the main module with the race detector, laid out
#     as `make test` lays them out (scripts/race.sh).
#  2. The topology suites (-tags topology ./topology/...: Redis Cluster
#     members, Sentinel-managed members), as `make topology` runs them.
#
# -race, as in `make test`: on a 2-core machine, with the build cache of
# `make test`, 3.5 to 4.5 minutes for the first and about 50 s for the
# second, 4.5 to 5.5 minutes in all.
# Environment: GO (default go), REDLOCK_SERVER (default valkey-server),
# RACE_SHARDS (see scripts/race.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
export REDLOCK_SERVER=${REDLOCK_SERVER:-valkey-server} REDLOCK_REQUIRE_REDIS=1

if ! command -v "$REDLOCK_SERVER" >/dev/null 2>&1; then
	echo "valkey: $REDLOCK_SERVER not found: install it with \`apt-get install -y -t bookworm-backports valkey-server\`" >&2
	exit 1
fi
"$REDLOCK_SERVER" --version

start=$SECONDS failed=0
s=$SECONDS
GO="$GO" bash scripts/race.sh || failed=1
echo "== valkey: race: $((SECONDS - s))s"

s=$SECONDS
$GO test -tags topology -count=1 -timeout 20m ./topology/... || failed=1
echo "== valkey: topology: $((SECONDS - s))s"

if [ $failed -ne 0 ]; then
	echo "== make valkey FAILED after $((SECONDS - start))s" >&2
	exit 1
fi
echo "== make valkey passed in $((SECONDS - start))s on $("$REDLOCK_SERVER" --version | cut -d' ' -f1-3)"
