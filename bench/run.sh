#!/usr/bin/env bash
# Runs the library comparison and prints the benchstat tables: first one row
# per sub-benchmark, then the libraries side by side (-col /lib).
# COUNT (default 5) sets -count; benchstat wants 6 or more for confidence
# intervals. BENCH_NODES, BENCH_WORKERS, BENCH_DURATION and
# BENCH_IDLE_DURATION pass through to the benchmarks (see README.md).
# bash for pipefail: a failed run must not end in tables of a partial out.txt.
set -euo pipefail
cd "$(dirname "$0")"
go test -run '^$' -bench . -benchtime 1x -count "${COUNT:-5}" | tee out.txt
go run golang.org/x/perf/cmd/benchstat@latest out.txt
go run golang.org/x/perf/cmd/benchstat@latest -col /lib out.txt
