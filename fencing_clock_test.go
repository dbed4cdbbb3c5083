package redlock_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/quorumlock/redlock/redlocktest/checker"
)

// aheadBy is how far the skewed node's wall clock runs ahead: far more
// than any TTL, as a misconfigured clock can be.
const aheadBy = 3 * time.Hour

// notInflated is how far above the test's own wall clock a token may be:
// a round's time and the nodes' skew (all on this machine), not aheadBy.
const notInflated = time.Minute

// clockAhead restarts node i of cluster (empty) with its wall clock
// aheadBy ahead (libfaketime: an offset, its rate true, so the clock check
// does not quarantine it) and declares it new, so that it votes at once.
func clockAhead(t *testing.T, cluster *redlocktest.Nodes, i int) {
	t.Helper()
	libfaketime := redlocktest.RequireFaketime(t)
	cluster.Servers[i].SetEnv([]string{
		"LD_PRELOAD=" + libfaketime + " libc.so.6", // glibc's malloc: see redlocktest.FastClock
		fmt.Sprintf("FAKETIME=+%d", int(aheadBy.Seconds())),
		"FAKETIME_DONT_FAKE_MONOTONIC=1",
	})
	if err := cluster.Servers[i].Restart(false); err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t)
	if err := node.Declare(ctx, cluster.Admin(t, i), "redlock:"); err != nil {
		t.Fatal(err)
	}
	now, err := cluster.Admin(t, i).Time(ctx).Result()
	if err != nil || time.Until(now) < aheadBy-time.Minute {
		t.Fatalf("node %d's clock reads %v (%v); want %v ahead", i, now, err, aheadBy)
	}
}

// inflated reports, as an error message, a token further above this
// process's wall clock than notInflated ("" if it is not).
func inflated(what string, token uint64) string {
	now := uint64(time.Now().UnixMicro())
	if token <= now || time.Duration(token-now)*time.Microsecond <= notInflated {
		return ""
	}
	return fmt.Sprintf("%s: token %d is %v ahead of this machine's clock: one node's clock carried it",
		what, token, time.Duration(token-now)*time.Microsecond)
}

// One node whose clock is hours ahead, in every grant's quorum (the third
// node is down): the tokens follow the other node's clock. With the plain
// maximum of the clocks each token was hours of microseconds ahead.
func TestFencing_clockHoursAhead_doesNotInflateTokens(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	clockAhead(t, cluster, 2)
	if err := cluster.Servers[1].Kill(); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, cluster, redlock.WithFencing(), redlock.WithWatchdog(false))
	ctx := testContext(t)
	var last uint64
	for i := range 5 {
		lease := mustLock(t, ctx, c.Mutex("ledger")) // quorum {0, 2}
		mustUnlock(t, lease)
		if message := inflated(fmt.Sprintf("grant %d", i), lease.Token()); message != "" {
			t.Fatal(message)
		}
		if lease.Token() <= last {
			t.Fatalf("grant %d: token %d after %d", i, lease.Token(), last)
		}
		last = lease.Token()
	}
}

// The node whose clock is hours ahead leaves after a grant, and a node of
// that grant's write-back quorum restarts empty: the next quorum holds
// none of its token (counters lost, or on the node gone), so only the
// clock term can put the next token above it. With the plain maximum the
// first token was the ahead clock's, and the next (the correct clocks')
// came out hours lower.
func TestFencing_tokensIncreaseAfterTheClockAheadLeft(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	clockAhead(t, cluster, 2)
	if err := cluster.Servers[1].Kill(); err != nil {
		t.Fatal(err)
	}
	// A short TTL and restart guard: the nodes restarted empty wait it out
	// before the second Lock can count them.
	c := newClient(t, cluster, redlock.WithFencing(), redlock.WithWatchdog(false),
		redlock.WithNodeTimeout(200*time.Millisecond), redlock.WithTTL(time.Second), redlock.WithRestartGuard(time.Second))
	ctx := testContext(t)
	first := mustLock(t, ctx, c.Mutex("ledger")) // quorum and write-back {0, 2}
	mustUnlock(t, first)
	if err := cluster.Servers[2].Kill(); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 1} {
		if err := cluster.Servers[i].Restart(false); err != nil {
			t.Fatal(err)
		}
	}
	second := mustLock(t, ctx, c.Mutex("ledger")) // quorum {0, 1}: counters 0
	defer mustUnlock(t, second)
	if second.Token() <= first.Token() {
		t.Fatalf("tokens %d then %d: the first came from the clock ahead, which the second quorum lacks",
			first.Token(), second.Token())
	}
	if message := inflated("first grant", first.Token()); message != "" {
		t.Fatal(message)
	}
}

// Tokens stay strictly increasing in grant order, and none is carried by
// the clock hours ahead of one node of five, while clients contend and
// that node restarts empty halfway (back with its clock still ahead, its
// counter from zero, not voting for the restart guard).
func TestFencing_tokensIncreaseWithAClockAheadAcrossAnEmptyRestart(t *testing.T) {
	cluster := redlocktest.Start(t, 5)
	clockAhead(t, cluster, 4)
	check := checker.New()
	var reported atomic.Bool // the first inflated token only
	fencedGrantsAcrossARestart(t, cluster, 4, 3, 3, 150, check, func(lease *redlock.Lease) {
		if message := inflated("a grant", lease.Token()); message != "" && !reported.Swap(true) {
			t.Error(message)
		}
	})
	requireGrants(t, check, 150)
}
