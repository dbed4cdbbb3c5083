#!/usr/bin/env bash
# The race tests of `make test`: every package's tests with the race
# detector, on real redis-server nodes, laid out for a 2-core machine.
#
#  1. chaos/ alone. Its safe runs also check that locking makes progress
#     under faults (a minimum of critical sections), and race-instrumented
#     tests of another package at the same time starve it on two cores.
#  2. Then, all at once: the root package's tests, dealt round-robin (in
#     the order `-test.list` gives) to RACE_SHARDS processes of one test
#     binary, and every other package, two at a time (go test -p 2). The
#     root package's tests mostly wait (TTLs, timers, pauses), hardly on
#     the CPU: one after another they took 75 s for 18 s of CPU.
#
# Every test runs exactly once: a shard runs the names listed for it, and
# a test added later lands in one of them. Each process's output is
# printed when it ends; the script fails if any of them failed (a failure
# in chaos/ does not stop the rest from running).
# Environment: GO (default go), RACE_SHARDS (default 3).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
shards=${RACE_SHARDS:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

failed=0
s=$SECONDS
$GO test -race -count=1 ./chaos/ || failed=1
echo "== race: chaos/ alone: $((SECONDS - s))s"

s=$SECONDS
module=$($GO list -m)
others=$($GO list ./... | grep -v -x -e "$module" -e "$module/chaos")
# The root package's test binary, built once for every shard.
$GO test -race -c -o "$work/redlock.test" .
mapfile -t tests < <("$work/redlock.test" -test.list '.*' | grep -E '^(Test|Example|Fuzz)')
if [ ${#tests[@]} -eq 0 ]; then
	echo "race: no tests listed in the root package" >&2
	exit 1
fi

pids=() names=()
for ((k = 0; k < shards; k++)); do
	run=()
	for ((i = k; i < ${#tests[@]}; i += shards)); do
		run+=("${tests[$i]}")
	done
	[ ${#run[@]} -gt 0 ] || continue
	pattern="^($(IFS='|'; echo "${run[*]}"))\$"
	(
		t0=$SECONDS
		if "$work/redlock.test" -test.count=1 -test.timeout=10m -test.paniconexit0 -test.run "$pattern" >"$work/shard$k.out" 2>&1; then
			echo "ok  	$module (shard $((k + 1)) of $shards: ${#run[@]} tests)	$((SECONDS - t0))s" >>"$work/shard$k.out"
		else
			echo "FAIL	$module (shard $((k + 1)) of $shards: ${#run[@]} tests)	$((SECONDS - t0))s" >>"$work/shard$k.out"
			exit 1
		fi
	) &
	pids+=($!) names+=("shard$k")
done
# shellcheck disable=SC2086
$GO test -race -count=1 -p 2 $others >"$work/others.out" 2>&1 &
pids+=($!) names+=(others)

for i in "${!pids[@]}"; do
	if ! wait "${pids[$i]}"; then
		failed=1
	fi
	# A passing shard's output is its PASS line; show the rest as is.
	grep -v -x 'PASS' "$work/${names[$i]}.out" || true
done
echo "== race: the root package in $shards shards, the other packages -p 2: $((SECONDS - s))s"
exit $failed
