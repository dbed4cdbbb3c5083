package redlock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/quorumlock/redlock/redlocktest/checker"
)

func TestLock_wokenByReleaseNotice(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	holder := newClient(t, cluster)
	// Only a notice can explain a grant soon after the release: the
	// waiter's retry backoff is 10 s and the holder's TTL 30 s.
	slow := func() backoff.BackOff { return backoff.NewConstantBackOff(10 * time.Second) }
	waiter := newClient(t, cluster, redlock.WithRetry(slow))
	lease := mustLock(t, ctx, holder.Mutex("notice"))
	grant := lockInBackground(t, ctx, waiter.Mutex("notice"))
	time.Sleep(200 * time.Millisecond) // the waiter has tried and is waiting
	released := time.Now()
	mustUnlock(t, lease)
	at, ok := grant()
	if !ok {
		return
	}
	if gap := at.Sub(released); gap > 500*time.Millisecond {
		t.Fatalf("waiter got the lock %v after the release: not woken by the notice", gap)
	} else {
		t.Logf("handoff across clients took %v", gap)
	}
}

// Notices lost while a subscriber connection is down are made up for by
// waking every waiter once it reconnects. The lock is freed here without
// any notice at all (DEL, as if the notices were lost), then the Pub/Sub
// connections are killed: only the reconnect can wake the waiter before
// its 10 s backoff.
func TestLock_subscriberReconnectWakesWaiters(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	slow := func() backoff.BackOff { return backoff.NewConstantBackOff(10 * time.Second) }
	holder := newClient(t, cluster, redlock.WithWatchdog(false))
	waiter := newClient(t, cluster, redlock.WithRetry(slow))
	lease := mustLock(t, ctx, holder.Mutex("reconnect"))
	grant := lockInBackground(t, ctx, waiter.Mutex("reconnect"))
	time.Sleep(200 * time.Millisecond) // the waiter has tried and is waiting
	for i := range cluster.Servers {
		if err := cluster.Admin(t, i).Del(ctx, "redlock:{reconnect}").Err(); err != nil {
			t.Fatal(err)
		}
	}
	freed := time.Now()
	for i := range cluster.Servers {
		if err := cluster.Admin(t, i).Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
			t.Fatal(err)
		}
	}
	at, ok := grant()
	_ = lease.Unlock(ctx) // ErrNotHeld: its key was deleted under it
	if !ok {
		return
	}
	if gap := at.Sub(freed); gap > 3*time.Second {
		t.Fatalf("waiter got the lock %v after it was freed: the reconnect did not wake it", gap)
	} else {
		t.Logf("woken by the reconnect %v after the lock was freed", gap)
	}
}

func TestLock_idleWaitersAreCheap(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	holder := newClient(t, cluster)
	waiters := newClient(t, cluster)
	lease := mustLock(t, ctx, holder.Mutex("idle"))
	waitCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	const count, window = 8, 3 * time.Second
	for range count {
		wg.Go(func() {
			if got, err := waiters.Mutex("idle").Lock(waitCtx); err == nil {
				t.Errorf("waiter acquired a held lock")
				_ = got.Unlock(context.Background())
			}
		})
	}
	time.Sleep(300 * time.Millisecond) // all waiting
	before := make([]int64, len(cluster.Servers))
	for i := range cluster.Servers {
		before[i] = commandsProcessed(t, cluster.Admin(t, i))
	}
	time.Sleep(window)
	var commands int64
	for i := range cluster.Servers {
		commands += commandsProcessed(t, cluster.Admin(t, i)) - before[i] - 1 // less our INFO
	}
	cancel()
	wg.Wait()
	mustUnlock(t, lease)
	perWaiter := float64(commands) / count / window.Seconds()
	t.Logf("%d commands on %d nodes in %v: %.2f per waiter per second (holder's renewals included)",
		commands, len(cluster.Servers), window, perWaiter)
	if perWaiter > 1 {
		t.Fatalf("an idle waiter costs %.2f commands per second, want at most 1", perWaiter)
	}
}

// Sixteen clients with one worker each all contend at every release: split
// votes must resolve without livelock, and mutual exclusion must hold.
func TestLock_sixteenClientsContend_noLivelock(t *testing.T) {
	cluster := redlocktest.Start(t, 5)
	ctx := testContext(t)
	check := checker.New()
	const workers, rounds = 16, 10
	var wg sync.WaitGroup
	for range workers {
		c := newClient(t, cluster)
		wg.Go(func() {
			for range rounds {
				lease, err := c.Mutex("hot").Lock(ctx)
				if err != nil {
					t.Errorf("Lock: %v", err)
					return
				}
				acquired := time.Now()
				time.Sleep(time.Millisecond)
				record(check, "hot", lease, acquired)
				_ = lease.Unlock(context.Background())
			}
		})
	}
	wg.Wait()
	if err := check.Err(); err != nil {
		t.Fatal(err)
	}
	if check.Len() != workers*rounds {
		t.Fatalf("%d grants, want %d", check.Len(), workers*rounds)
	}
}

// A stale hold on one node (a minority: say a grant that landed after its
// release) must not stall contenders: a waiter that lost the lead node
// asks every node next time, and a majority is free.
func TestLock_staleHoldOnLeadNode_doesNotStall(t *testing.T) {
	cluster := redlocktest.Start(t, 5)
	admin := cluster.Admin(t, 0)
	ctx := context.Background()
	if err := admin.HSet(ctx, "redlock:{stale}", "owner", "gone", "gone-hold", 1).Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.PExpire(ctx, "redlock:{stale}", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	check := checker.New()
	// The stale hold lives a minute: a stall outlasts this deadline, which
	// leaves room for contention on a loaded machine (race tests beside).
	deadline, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for range 6 {
		c := newClient(t, cluster)
		wg.Go(func() {
			for range 10 {
				lease, err := c.Mutex("stale").Lock(deadline)
				if err != nil {
					t.Errorf("Lock with a stale hold on node 0: %v", err)
					return
				}
				acquired := time.Now()
				time.Sleep(time.Millisecond)
				record(check, "stale", lease, acquired)
				_ = lease.Unlock(context.Background())
			}
		})
	}
	wg.Wait()
	if err := check.Err(); err != nil {
		t.Fatal(err)
	}
}
