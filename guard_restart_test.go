package redlock_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest"
)

// undeclare removes the marker the harness set on each node: the nodes are
// as nobody prepared them.
func undeclare(t *testing.T, cluster *redlocktest.Nodes) {
	t.Helper()
	for i := range cluster.Servers {
		if err := cluster.Admin(t, i).Del(context.Background(), "redlock:node").Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// A majority restarted from a snapshot older than a live lease (Redis's
// default persistence): the marker is back, the lease is not. No second
// owner gets the lock while the first lease is valid.
func TestGuard_snapshotMajorityGrantsNoSecondOwner(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	for i := range cluster.Servers {
		if err := cluster.Admin(t, i).Save(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	a := mustLock(t, ctx, newClient(t, cluster, redlock.WithTTL(3*time.Second), redlock.WithWatchdog(false)).Mutex("snap"))
	for _, i := range []int{0, 1} {
		if err := cluster.Servers[i].Restart(true); err != nil { // loads the snapshot
			t.Fatal(err)
		}
	}
	b := newClient(t, cluster, redlock.WithTTL(3*time.Second)).Mutex("snap")
	for time.Now().Before(a.Until()) {
		lease, err := b.TryLock(ctx)
		if err == nil {
			t.Fatalf("second owner granted %v before the first lease ends", time.Until(a.Until()))
		}
		if !errors.Is(err, redlock.ErrQuarantined) || !strings.Contains(err.Error(), "restarted") {
			t.Fatalf("TryLock after a snapshot restart = %v, %v; want the restart quarantine", lease, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Nodes nobody declared, up longer than the guard: the first Lock of a
// new Client is granted at once.
func TestGuard_nodesUpLongerThanTheGuardVoteAtOnce(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	undeclare(t, cluster)
	time.Sleep(2500 * time.Millisecond) // the guard (the TTL, 1 s), rounded up to the node's second
	ctx := testContext(t)
	began := time.Now()
	lease := mustLock(t, ctx, newClient(t, cluster, redlock.WithTTL(time.Second)).Mutex("first"))
	if took := time.Since(began); took > 500*time.Millisecond {
		t.Fatalf("first Lock took %v; want it at once", took)
	}
	mustUnlock(t, lease)
}

// A majority restarted empty: the quarantine counts from the restart, not
// from the first call after it.
func TestGuard_emptyRestartEndsAtRestartPlusGuard(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	const guard = 3 * time.Second
	restarting := time.Now() // the processes start after this
	for _, i := range []int{0, 1} {
		if err := cluster.Servers[i].Restart(false); err != nil {
			t.Fatal(err)
		}
	}
	restarted := time.Now()
	time.Sleep(2 * time.Second)
	ctx := testContext(t)
	lease := mustLock(t, ctx, newClient(t, cluster, redlock.WithTTL(guard)).Mutex("empty"))
	// The node knows its start to the second, rounded up.
	if at := time.Since(restarting); at < guard {
		t.Fatalf("granted %v after the restarts began; want the guard (%v) first", at, guard)
	}
	if at := time.Since(restarted); at > guard+1300*time.Millisecond {
		t.Fatalf("granted %v after the restart; want from the guard (%v) to a second later", at, guard)
	}
	mustUnlock(t, lease)
}

// FLUSHALL on a majority of long-running nodes while a lease is held: no
// second owner until the guard has passed since the flush.
func TestGuard_flushedMajorityGrantsNoSecondOwner(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	const ttl = 2 * time.Second
	a := mustLock(t, ctx, newClient(t, cluster, redlock.WithTTL(ttl), redlock.WithWatchdog(false)).Mutex("flush"))
	for _, i := range []int{0, 1} {
		if err := cluster.Admin(t, i).FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	flushed := time.Now()
	b := newClient(t, cluster, redlock.WithTTL(ttl)).Mutex("flush")
	for time.Now().Before(a.Until()) {
		if lease, err := b.TryLock(ctx); err == nil || !errors.Is(err, redlock.ErrQuarantined) {
			t.Fatalf("TryLock after a majority flush = %v, %v; want the quarantine", lease, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	lease := mustLock(t, ctx, b)
	if at := time.Since(flushed); at < ttl {
		t.Fatalf("granted %v after the flush; want the guard (%v) first", at, ttl)
	}
	mustUnlock(t, lease)
}

// A Lock whose every quorum is quarantined past its deadline returns at
// once; one whose nodes vote again before it sleeps until then instead of
// calling them.
func TestGuard_lockWaitsOutQuarantinesWithoutCalls(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	// Taken before node 0 starts again: its quarantine ends at least TTL later.
	restarted := time.Now()
	for _, i := range []int{0, 1} {
		if err := cluster.Servers[i].Restart(false); err != nil {
			t.Fatal(err)
		}
	}
	c := newClient(t, cluster, redlock.WithTTL(4*time.Second))
	// The Client's warm-up first: what is timed is the wait's decision.
	waitFor(t, 5*time.Second, "every node's first answer", func() bool {
		return !slices.Contains(redlock.NodeRTTs(c), 0)
	})
	short, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	began := time.Now()
	_, err := c.Mutex("q").Lock(short)
	// At once: one round, not the 2 s sleep to the deadline (300 ms leaves
	// room for make valkey's load under -race, where 103 ms was seen).
	if took := time.Since(began); took > 300*time.Millisecond || !errors.Is(err, redlock.ErrNotAcquired) ||
		!errors.Is(err, redlock.ErrNoQuorum) || !errors.Is(err, redlock.ErrQuarantined) {
		t.Fatalf("Lock quarantined past its deadline: %v after %v; want ErrNotAcquired, ErrNoQuorum, ErrQuarantined at once", err, took)
	}
	admin := cluster.Admin(t, 0)
	before := int(redlocktest.ScriptCalls(t, admin))
	lease := mustLock(t, testContext(t), c.Mutex("q"))
	calls, waited := int(redlocktest.ScriptCalls(t, admin))-before, time.Since(began)
	if limit := int(waited/time.Second) + 3; calls > limit {
		t.Fatalf("node 0 ran %d scripts while Lock waited %v; want at most %d", calls, waited, limit)
	}
	if at := time.Since(restarted); at < 4*time.Second {
		t.Fatalf("granted %v after the restart", at)
	}
	mustUnlock(t, lease)
}
