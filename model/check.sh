#!/usr/bin/env bash
# Checks the Promela models with Spin: every property must hold in each
# protocol configuration, and every negative variant must yield a
# counterexample (a check that cannot fail proves nothing). One line per
# check; exits non-zero if any check does not come out as required.
# Needs spin and gcc (apt-get install -y spin gcc).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
command -v spin >/dev/null || { echo "model: spin not found: apt-get install -y spin" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
started=$SECONDS

# check NAME MODEL EXPECT(pass|fail) [-D...]
check() {
	local name=$1 model=$2 expect=$3
	shift 3
	local dir="$work/$name"
	mkdir -p "$dir"
	cp "$here/$model" "$dir/"
	local t0=$SECONDS out errors states memory result
	(cd "$dir" && spin -a "$@" "$model" >spin.out 2>&1 && gcc -O2 -DSAFETY -o pan pan.c >gcc.out 2>&1) || {
		echo "model: $name: spin or gcc failed:"; cat "$dir"/*.out; failed=1; return
	}
	out=$(cd "$dir" && ./pan -E -m10000 2>&1) || true
	errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' <<<"$out" | head -1)
	states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' <<<"$out" | head -1)
	memory=$(sed -n 's/^ *\([0-9.]*\)\s*total actual memory usage.*/\1/p' <<<"$out" | head -1)
	if grep -q "search not completed\|max search depth too small" <<<"$out"; then
		result="INCOMPLETE search"; failed=1
	elif [ "$expect" = pass ] && [ "$errors" = 0 ]; then
		result="ok: holds"
	elif [ "$expect" = fail ] && [ -n "$errors" ] && [ "$errors" -gt 0 ]; then
		local what
		case $(grep -m1 'assertion violated' <<<"$out") in
		*token*) what="a token did not increase" ;;
		*permitted*) what="more than K permits valid at once" ;;
		*agreed*) what="two counts passed the permits check" ;;
		*holding*|*VALID*) what="two valid leases at once" ;;
		*writeLease*) what="a writer overlapped a reader" ;;
		*releasedOn*) what="a released hold granted again" ;;
		*) what="assertion violated" ;;
		esac
		result="ok: counterexample ($what)"
	else
		result="FAILED: expected to $expect, errors: ${errors:-?}"; failed=1
	fi
	printf 'model: %-27s %-45s %9s states %5.0f MB %3ss\n' "$name" "$result" "${states:-?}" "${memory:-?}" $((SECONDS - t0))
}

# Fencing tokens (fencing.pml).
check fencing                   fencing.pml pass
check fencing-restart-empty     fencing.pml pass -DCRASH -DMAXCLOCK=1
check neg-fencing-at-vote-time  fencing.pml fail -DOLDFENCE
check neg-fencing-no-clock-term fencing.pml fail -DCRASH -DNOCLOCK -DMAXCLOCK=1
# The lock (lock.pml).
check lock                      lock.pml pass
check lock-restart-after-ttl    lock.pml pass -DCRASH
check lock-tombstones           lock.pml pass -DLATE -DMAXCLOCK=2
check lock-tombstones-restart   lock.pml pass -DLATE -DMAXCLOCK=2 -DCRASH
check neg-majority-empty        lock.pml fail -DMAJWIPE
check neg-restart-empty-at-once lock.pml fail -DCRASH -DEARLY
check lock-guard-restart-at-once lock.pml pass -DCRASH -DEARLY -DGUARD
check lock-guard-majority-empty lock.pml pass -DMAJWIPE -DGUARD
check neg-guard-shorter-than-ttl lock.pml fail -DMAJWIPE -DGUARD -DDRIFT=0 -DGUARDFOR=1
check lock-clock-check-fast-node lock.pml pass -DFAST -DCLOCKCHECK
check neg-fast-clock-counted    lock.pml fail -DFAST
check neg-quorum-n-over-2       lock.pml fail -DQ=1
check neg-no-tombstones         lock.pml fail -DLATE -DMAXCLOCK=2 -DNOTOMB
# The restart guard against snapshots, empty restarts, flushes, AOF (guard.pml).
check guard-snapshot-restart    guard.pml pass -DSNAPSHOT
check guard-empty-restart       guard.pml pass -DEMPTY
check guard-flush               guard.pml pass -DFLUSH
check guard-aof-restart         guard.pml pass -DAOF
check neg-guard-trusts-marker   guard.pml fail -DSNAPSHOT -DTRUSTMARKER
check neg-guard-declared-forever guard.pml fail -DSNAPSHOT -DDECLFOREVER
check neg-guard-no-flush-check  guard.pml fail -DFLUSH -DNOFLUSHCHECK
check guard-snapshot-undeclared guard.pml pass -DSNAPSHOT -DUNDECLARED
check neg-guard-trusts-made-marker guard.pml fail -DSNAPSHOT -DUNDECLARED -DTRUSTMARKER
# The handoff to the first waiter (handoff.pml).
check handoff                   handoff.pml pass
check neg-handoff-notice-grants handoff.pml fail -DADOPT
# Direct adoption of a handed lock (adopt.pml).
check adopt                     adopt.pml pass
check adopt-short-queue-life    adopt.pml pass -DLIFE=1
check adopt-long-queue-life     adopt.pml pass -DLIFE=3
check neg-adopt-from-notice     adopt.pml fail -DFROMNOTICE
check neg-adopt-older-attempt   adopt.pml fail -DANYATTEMPT
check neg-adopt-pass-any-hold   adopt.pml fail -DPASSANY
check neg-adopt-unheard-refusal adopt.pml fail -DANYREFUSAL
check adopt-leaves-after-release adopt.pml pass -DLEAVES -DMAXCLOCK=2
check neg-adopt-leave-whole-call adopt.pml fail -DLEAVES -DLEAVECALL -DMAXCLOCK=2
check adopt-late-overtaking     adopt.pml pass -DLATE -DOVERTAKE -DMAXCLOCK=2
check neg-adopt-late-claims     adopt.pml fail -DLATE -DOVERTAKE -DNOSTALE -DMAXCLOCK=2
# The semaphore (semaphore.pml).
check semaphore                 semaphore.pml pass
check semaphore-restart-after-ttl semaphore.pml pass -DCRASH -DMAXCLOCK=2
check semaphore-permits-check   semaphore.pml pass -DMISMATCH -DPERMITCHECK -DTWO
check semaphore-permits-check-restart semaphore.pml pass -DMISMATCH -DPERMITCHECK -DTWO -DCRASH -DMAXCLOCK=2
check neg-semaphore-counts      semaphore.pml fail -DCOUNTS
check neg-permits-mismatch      semaphore.pml fail -DMISMATCH
check neg-permits-uncapped      semaphore.pml fail -DMISMATCH -DPERMITCHECK -DTWO -DNOCAP -DMAXCLOCK=2
check neg-permits-restart-at-once semaphore.pml fail -DMISMATCH -DPERMITCHECK -DTWO -DCRASH -DEARLY -DMAXCLOCK=2
check neg-semaphore-shared-owner semaphore.pml fail -DSHARED
# The read-write lock (rwlock.pml).
check rwlock                      rwlock.pml pass
check rwlock-renewals             rwlock.pml pass -DRENEWS2=1 -DWRENEWS=1 -DTRIES=1 -DMAXCLOCK=2
check rwlock-plain-writer         rwlock.pml pass -DPLAIN
check rwlock-restart-after-ttl    rwlock.pml pass -DCRASH -DTRIES=1
check rwlock-late                 rwlock.pml pass -DLATE -DTRIES=1 -DMAXCLOCK=2
check neg-read-ignores-writer     rwlock.pml fail -DREADIGNORESWRITER
check neg-writer-joins-readers    rwlock.pml fail -DWRITERJOINSREADERS
check neg-release-deletes-readers rwlock.pml fail -DRELEASEDELETES
check neg-read-join-keeps-expiry  rwlock.pml fail -DJOINKEEPSEXPIRY
check neg-renew-join-keeps-expiry rwlock.pml fail -DRENEWJOINKEEPSEXPIRY

if [ "$failed" -ne 0 ]; then
	echo "model: FAILED ($((SECONDS - started))s)"
	exit 1
fi
echo "model: every property holds and every negative variant fails ($((SECONDS - started))s)"
