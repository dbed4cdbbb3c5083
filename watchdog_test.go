package redlock_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/redis/go-redis/v9"
)

// commandsProcessed is the node's total_commands_processed.
func commandsProcessed(t *testing.T, admin *redis.Client) int64 {
	t.Helper()
	info, err := admin.Info(context.Background(), "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if value, ok := strings.CutPrefix(strings.TrimSpace(line), "total_commands_processed:"); ok {
			n, _ := strconv.ParseInt(value, 10, 64)
			return n
		}
	}
	t.Fatal("no total_commands_processed in INFO stats")
	return 0
}

func TestWatchdog_holdsAcrossManyTTLs(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	const ttl = 200 * time.Millisecond
	holder := newClient(t, cluster, redlock.WithTTL(ttl))
	other := newClient(t, cluster)
	lease := mustLock(t, ctx, holder.Mutex("long"))
	firstUntil := lease.Until()
	deadline := time.Now().Add(12 * ttl)
	for time.Now().Before(deadline) {
		if _, err := other.Mutex("long").TryLock(ctx); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("TryLock while the watchdog renews: %v, want ErrNotAcquired", err)
		}
		time.Sleep(ttl / 4)
	}
	if lease.Err() != nil {
		t.Fatalf("lease after 12 TTLs: %v", lease.Err())
	}
	if !lease.Until().After(firstUntil.Add(10 * ttl)) {
		t.Fatalf("Until moved from %v to %v: not renewed", firstUntil, lease.Until())
	}
	mustUnlock(t, lease)
	// No renewal may re-create the key after Unlock.
	time.Sleep(2 * ttl)
	if keys := cluster.KeyCount(t); keys != 0 {
		t.Fatalf("%d keys after Unlock: a renewal re-created the lock", keys)
	}
	mustUnlock(t, mustLock(t, ctx, other.Mutex("long")))
}

func TestWatchdog_majorityKilled_lost(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	const ttl = 300 * time.Millisecond
	c := newClient(t, cluster, redlock.WithTTL(ttl), redlock.WithNodeTimeout(50*time.Millisecond))
	lease := mustLock(t, testContext(t), c.Mutex("fragile"))
	killed := time.Now()
	for _, i := range []int{0, 1} {
		if err := cluster.Servers[i].Kill(); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-lease.Done():
	case <-time.After(ttl + 200*time.Millisecond):
		t.Fatal("lease not lost within the TTL after a majority died")
	}
	if lost := time.Since(killed); lost > ttl+50*time.Millisecond {
		t.Fatalf("lost after %v, later than the TTL", lost)
	}
	if !errors.Is(lease.Err(), redlock.ErrLost) || !errors.Is(context.Cause(lease.Context()), redlock.ErrLost) {
		t.Fatalf("Err() = %v, cause = %v; want ErrLost", lease.Err(), context.Cause(lease.Context()))
	}
}

func TestWatchdog_majorityPaused_lostByUntil(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	const ttl = 300 * time.Millisecond
	c := newClient(t, cluster, redlock.WithTTL(ttl), redlock.WithNodeTimeout(50*time.Millisecond))
	lease := mustLock(t, testContext(t), c.Mutex("frozen"))
	for _, i := range []int{1, 2} {
		if err := cluster.Servers[i].Pause(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cluster.Servers[i].Resume() })
	}
	<-lease.Done()
	// Done closes at Until at the latest: a few ms of timer slack at most.
	if late := time.Since(lease.Until()); late > 20*time.Millisecond {
		t.Fatalf("lost %v after Until", late)
	}
	if !errors.Is(context.Cause(lease.Context()), redlock.ErrLost) {
		t.Fatalf("cause %v, want ErrLost", context.Cause(lease.Context()))
	}
}

func TestWatchdog_repairsNodeRestartedEmpty(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	const ttl = 300 * time.Millisecond
	c := newClient(t, cluster, redlock.WithTTL(ttl))
	lease := mustLock(t, testContext(t), c.Mutex("repaired"))
	if err := cluster.Servers[2].Restart(false); err != nil {
		t.Fatal(err)
	}
	admin := cluster.Admin(t, 2)
	// The node's breaker opened while it was down and closes at its next
	// ping (every 250 ms): the renewal after that re-creates the key.
	waitFor(t, ttl+250*time.Millisecond, "the renewal to re-create the key on the restarted node", func() bool {
		return holdCount(t, admin, "redlock:{repaired}") == 1
	})
	mustUnlock(t, lease)
}

func TestWatchdog_batchesRenewals(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	const ttl, leases, held = 600 * time.Millisecond, 500, 2 * time.Second
	c := newClient(t, cluster, redlock.WithTTL(ttl))
	var all []*redlock.Lease
	for i := range leases {
		all = append(all, mustLock(t, ctx, c.Mutex("batch-"+strconv.Itoa(i))))
	}
	admin := cluster.Admin(t, 0)
	before := redlocktest.ScriptCalls(t, admin)
	time.Sleep(held)
	calls := redlocktest.ScriptCalls(t, admin) - before
	for _, lease := range all {
		if lease.Err() != nil {
			t.Fatalf("lease lost while renewed: %v", lease.Err())
		}
		mustUnlock(t, lease)
	}
	// One call per lease per renewal would be 500 × (2s / 200ms) = 5,000.
	renewalsPerLease := float64(held) / float64(ttl/3)
	perLease := float64(calls) / leases / renewalsPerLease
	t.Logf("node 0 ran %d renew calls for %d leases in %v: %.3f calls per lease per renewal", calls, leases, held, perLease)
	if perLease > 0.1 {
		t.Fatalf("%.3f calls per lease per renewal: renewals are not batched", perLease)
	}
}
