#!/usr/bin/env bash
# Runs the library comparison and prints the benchstat tables: first one row
# per sub-benchmark (one table per metric), then the libraries side by side
# (-col /lib), redsync first so that every "vs base" column is against it.
#
# COUNT (default 5) is the number of rounds; each round runs every selected
# benchmark once (-count 1), so that drift in the machine's background load
# hits every library alike rather than the COUNT runs of one library in a
# row. benchstat wants 6 or more runs for confidence intervals.
# BENCH (default .) selects benchmarks, as go test -bench does; the default
# leaves out BenchmarkCrossDC (minutes per round, through delay proxies):
# BENCH=CrossDC COUNT=1 ./run.sh runs it alone (see README.md), and
# BenchmarkCluster (12 servers, 64 worker processes): BENCH=Cluster
# ./run.sh, whose last table puts Cluster members beside plain nodes.
# Before each round it waits (up to QUIET_WAIT seconds, default 300) until
# other processes use at most QUIET_BUSY % (default 25) of the CPU over 2 s,
# and prints what it saw: results from a busy machine are noise.
# BENCH_NODES, BENCH_WORKERS, BENCH_DURATION, BENCH_IDLE_DURATION,
# BENCH_CYCLES, BENCH_TP_WORKERS, BENCH_LEASES, BENCH_RENEW_TTL and
# BENCH_RENEW_HOLD pass through to the benchmarks, and BENCH_PROFILE,
# BENCH_HANDOFFS and BENCH_FRESH to BenchmarkCrossDC, BENCH_MEMBERS,
# BENCH_SHARDS, BENCH_CLUSTER_WORKERS, BENCH_CLUSTER_NAMES and
# BENCH_CLUSTER_LEASES to BenchmarkCluster (see README.md).
# bash for pipefail: a failed run must not end in tables of a partial out.txt.
set -euo pipefail
cd "$(dirname "$0")"
benchstat=(go run golang.org/x/perf/cmd/benchstat@latest)
go test -c -o bench.test .
skip=()
if [ -z "${BENCH:-}" ]; then
	skip=(-test.skip '^Benchmark(CrossDC|Cluster)$')
fi

# busy prints the % of CPU time not idle over the next 2 s (0 without /proc).
busy() {
	if [ ! -r /proc/stat ]; then
		echo 0
		return
	fi
	local _ u1 n1 s1 i1 w1 q1 sq1 st1 u2 n2 s2 i2 w2 q2 sq2 st2 used idle
	read -r _ u1 n1 s1 i1 w1 q1 sq1 st1 _ </proc/stat
	sleep 2
	read -r _ u2 n2 s2 i2 w2 q2 sq2 st2 _ </proc/stat
	used=$(((u2 + n2 + s2 + q2 + sq2 + st2) - (u1 + n1 + s1 + q1 + sq1 + st1)))
	idle=$(((i2 + w2) - (i1 + w1)))
	echo $((100 * used / (used + idle + 1)))
}

# quiet waits until the CPU is quiet enough, or QUIET_WAIT has passed.
quiet() {
	local waited=0 pct
	pct=$(busy)
	while [ "$pct" -gt "${QUIET_BUSY:-25}" ] && [ "$waited" -lt "${QUIET_WAIT:-300}" ]; do
		sleep 3
		waited=$((waited + 5))
		pct=$(busy)
	done
	echo "CPU ${pct}% busy after waiting ${waited}s"
}
: >out.txt
for round in $(seq "${COUNT:-5}"); do
	state=$(quiet)
	echo "# round $round of ${COUNT:-5}: $state, load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)" >&2
	./bench.test -test.run '^$' -test.bench "${BENCH:-.}" -test.benchtime 1x -test.count 1 \
		"${skip[@]}" -test.timeout 30m | tee -a out.txt
done
"${benchstat[@]}" out.txt
if grep -q 'lib=redsync/' out.txt; then
	others=$(grep -o 'lib=[^/]*' out.txt | cut -d= -f2 | awk '!seen[$0]++' | grep -vx redsync | tr '\n' ' ' || true)
	"${benchstat[@]}" -col "/lib@(redsync ${others% })" out.txt
elif grep -q 'lib=' out.txt; then
	"${benchstat[@]}" -col /lib out.txt
fi
if grep -q '/kind=' out.txt; then
	"${benchstat[@]}" -col '/kind@(plain cluster)' out.txt
fi
