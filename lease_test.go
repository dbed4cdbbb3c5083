package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest"
)

// Unreachable nodes are not "another owner": Unlock and Extend report
// ErrNoQuorum, not ErrNotHeld.
func TestLease_unreachableMajority_isNoQuorumNotNotHeld(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	c := newClient(t, cluster, redlock.WithWatchdog(false), redlock.WithNodeTimeout(100*time.Millisecond))
	lease := mustLock(t, ctx, c.Mutex("cut-off"))
	for _, i := range []int{0, 1} {
		if err := cluster.Servers[i].Kill(); err != nil {
			t.Fatal(err)
		}
	}
	if err := lease.Extend(ctx); !errors.Is(err, redlock.ErrNoQuorum) || errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("Extend with 2 of 3 nodes dead: %v, want ErrNoQuorum only", err)
	}
	if err := lease.Unlock(ctx); !errors.Is(err, redlock.ErrNoQuorum) || errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("Unlock with 2 of 3 nodes dead: %v, want ErrNoQuorum only", err)
	}
}

func TestLease_Unlock_twice(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	lease := mustLock(t, testContext(t), newClient(t, cluster).Mutex("twice"))
	mustUnlock(t, lease)
	if err := lease.Unlock(context.Background()); !errors.Is(err, redlock.ErrReleased) {
		t.Fatalf("second Unlock: %v, want ErrReleased", err)
	}
	if !errors.Is(lease.Err(), redlock.ErrReleased) || !errors.Is(context.Cause(lease.Context()), redlock.ErrReleased) {
		t.Fatalf("Err() = %v, cause = %v; want ErrReleased", lease.Err(), context.Cause(lease.Context()))
	}
	select {
	case <-lease.Done():
	default:
		t.Fatal("Done() not closed after Unlock")
	}
}

func TestLease_Unlock_expiredWhileAnotherHolds(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	short := []redlock.Option{redlock.WithTTL(150 * time.Millisecond), redlock.WithWatchdog(false)}
	a, b := newClient(t, cluster, short...), newClient(t, cluster)
	stale := mustLock(t, ctx, a.Mutex("expiring"))
	select {
	case <-stale.Done():
	case <-time.After(time.Second):
		t.Fatal("a lease without renewal did not end at its TTL")
	}
	if !errors.Is(stale.Err(), redlock.ErrLost) {
		t.Fatalf("expired lease Err() = %v, want ErrLost", stale.Err())
	}
	holder := mustLock(t, ctx, b.Mutex("expiring"))
	if err := stale.Unlock(context.Background()); !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("Unlock of the expired lease: %v, want ErrNotHeld", err)
	}
	if _, err := a.Mutex("expiring").TryLock(ctx); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("the new holder's lock was released by the stale lease: %v", err)
	}
	mustUnlock(t, holder)
}

func TestLease_Extend_withoutWatchdog(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	c := newClient(t, cluster, redlock.WithTTL(300*time.Millisecond), redlock.WithWatchdog(false))
	lease := mustLock(t, ctx, c.Mutex("extended"))
	for range 5 {
		time.Sleep(150 * time.Millisecond)
		before := lease.Until()
		if err := lease.Extend(ctx); err != nil {
			t.Fatalf("Extend: %v", err)
		}
		if !lease.Until().After(before) {
			t.Fatalf("Until did not move: %v -> %v", before, lease.Until())
		}
	}
	if lease.Err() != nil {
		t.Fatalf("extended lease: %v", lease.Err())
	}
	mustUnlock(t, lease)
	if err := lease.Extend(ctx); !errors.Is(err, redlock.ErrReleased) {
		t.Fatalf("Extend after Unlock: %v, want ErrReleased", err)
	}
}
