#!/usr/bin/env bash
# make test: every phase of the README's test command, laid out for a
# 2-core machine. The CPU-bound phases that make no timing assertions (the
# fuzz run, the model's small tier) run beside the race tests at idle
# priority (SCHED_IDLE: they get only CPU time the tests leave unused, so
# the fault tier's progress checks see the machine they saw alone); the
# others run one after another. Each phase prints its wall time as it
# ends, and the run its total and every phase's time.
#
# Environment: GO (default go), TEST_PHASES and TEST_BESIDE (the phases,
# Makefile targets, run in turn and beside the race tests), MAKE.
set -euo pipefail
cd "$(dirname "$0")/.."
MAKE=${MAKE:-make}
phases=${TEST_PHASES:-fmt-check vet race examples contrib}
beside=${TEST_BESIDE:-fuzz model-small}
work=$(mktemp -d)
start=$SECONDS times="" failed=""
pids=() fg=

# Background phases end with the run, whatever ends it.
cleanup() {
	local pid
	[ -z "$fg" ] || kill -- -"$fg" 2>/dev/null || true
	for pid in "${pids[@]}"; do
		kill -- -"$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# idle COMMAND...: runs COMMAND at the lowest CPU priority there is.
idle() {
	if chrt --idle 0 true 2>/dev/null; then
		chrt --idle 0 "$@"
	else
		nice -n 19 "$@"
	fi
}

# start_beside: starts each phase of $beside in the background, at idle
# priority, its output kept for later, its time in $work/NAME.time.
start_beside() {
	local p
	set -m # each in a process group of its own, so that cleanup ends it all
	for p in $beside; do
		(
			s=$SECONDS rc=0
			idle "$MAKE" --no-print-directory "$p" </dev/null >"$work/$p.out" 2>&1 || rc=$?
			echo "$((SECONDS - s)) $rc" >"$work/$p.time"
		) &
		pids+=($!)
	done
	set +m
}

# finish_beside: waits for the background phases, then prints each one's
# output and time.
finish_beside() {
	local p t rc
	wait "${pids[@]}" 2>/dev/null || true
	pids=()
	for p in $beside; do
		echo "== phase $p (beside race, at idle priority)"
		cat "$work/$p.out"
		read -r t rc <"$work/$p.time" || { t=? rc=1; }
		if [ "$rc" != 0 ]; then
			echo "== phase $p FAILED after ${t}s"
			failed+=" $p"
		else
			echo "== phase $p: ${t}s (beside race)"
		fi
		times+=" $p ${t}s (beside),"
	done
}

# Without race among the phases, the others run in turn after them.
[[ " $phases " == *" race "* ]] || { phases+=" $beside"; beside=""; }

for phase in $phases; do
	[ "$phase" != race ] || [ -z "$beside" ] || start_beside
	s=$SECONDS
	echo "== phase $phase"
	# In a process group of its own, waited for: a signal's trap runs at
	# once, and ends the phase with everything it started.
	set -m
	"$MAKE" --no-print-directory "$phase" </dev/null &
	fg=$!
	set +m
	rc=0
	wait "$fg" || rc=$?
	fg=
	if [ $rc -ne 0 ]; then
		echo "== phase $phase FAILED after $((SECONDS - s))s"
		failed+=" $phase"
		break
	fi
	times+=" $phase $((SECONDS - s))s,"
	echo "== phase $phase: $((SECONDS - s))s"
done
# Phases started beside race are waited for even when a phase failed.
if [ ${#pids[@]} -gt 0 ]; then
	finish_beside
fi
if [ -n "$failed" ]; then
	echo "== make test FAILED after $((SECONDS - start))s: failed:$failed;${times%,}"
	exit 1
fi
echo "== make test passed in $((SECONDS - start))s:${times%,}"
