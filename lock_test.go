package redlock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest"
)

// Two goroutines of one owner waiting for a lock another Client holds
// both get it (re-entering) as soon as it is released.
func TestLock_sameOwnerWaitersBothWakeOnRelease(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	holder, waiters := newClient(t, cluster), newClient(t, cluster)
	held := mustLock(t, ctx, holder.Mutex("shared-owner"))
	owner := redlock.WithOwner(ctx, "batch-17")
	granted := make(chan time.Time, 2)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			lease, err := waiters.Mutex("shared-owner").Lock(owner)
			if err != nil {
				t.Errorf("waiter: %v", err)
				return
			}
			granted <- time.Now()
			time.Sleep(50 * time.Millisecond)
			_ = lease.Unlock(context.Background())
		})
	}
	time.Sleep(200 * time.Millisecond)
	released := time.Now()
	mustUnlock(t, held)
	wg.Wait()
	close(granted)
	for at := range granted {
		if wait := at.Sub(released); wait > time.Second {
			t.Fatalf("a waiter of the same owner got the lock %v after the release", wait)
		}
	}
}

func TestLock_ctxCancelledWithCause_matchesCanceled(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	c := newClient(t, cluster)
	held := mustLock(t, testContext(t), c.Mutex("cause"))
	defer mustUnlock(t, held)
	cause := errors.New("shutting down")
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(50*time.Millisecond, func() { cancel(cause) })
	_, err := c.Mutex("cause").Lock(ctx)
	if !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, context.Canceled) || !errors.Is(err, cause) {
		t.Fatalf("Lock cancelled with a cause: %v; want ErrNotAcquired, context.Canceled and the cause", err)
	}
	// A released lease's Context as the ctx: its cause is ErrReleased.
	other := mustLock(t, testContext(t), newClient(t, cluster).Mutex("cause-2"))
	mustUnlock(t, other)
	if _, err := c.Mutex("cause").Lock(other.Context()); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock with a released lease's Context: %v, want context.Canceled", err)
	}
}
