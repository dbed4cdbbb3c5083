package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/quorumlock/redlock/redlocktest/checker"
)

func TestMutex_Lock_mutualExclusion(t *testing.T) {
	for _, nodes := range []int{3, 5} {
		t.Run(fmt.Sprintf("%d nodes", nodes), func(t *testing.T) {
			cluster := redlocktest.Start(t, nodes)
			ctx := testContext(t)
			check := checker.New()
			const clients, goroutines, rounds = 2, 8, 15
			counter := 0 // guarded only by the lock: a lost update shows a violation
			var wg sync.WaitGroup
			for range clients {
				c := newClient(t, cluster)
				for range goroutines {
					m := c.Mutex("counter")
					wg.Go(func() {
						for range rounds {
							lease, err := m.Lock(ctx)
							if err != nil {
								t.Errorf("Lock: %v", err)
								return
							}
							acquired := time.Now()
							value := counter
							time.Sleep(100 * time.Microsecond)
							counter = value + 1
							record(check, "counter", lease, acquired)
							if err := lease.Unlock(context.Background()); err != nil {
								t.Errorf("Unlock: %v", err)
								return
							}
						}
					})
				}
			}
			wg.Wait()
			if err := check.Err(); err != nil {
				t.Fatal(err)
			}
			if want := clients * goroutines * rounds; counter != want || check.Len() != want {
				t.Fatalf("counter = %d, grants = %d; want %d", counter, check.Len(), want)
			}
			waitFor(t, time.Second, "no keys left", func() bool { return cluster.KeyCount(t) == 0 })
		})
	}
}

func TestMutex_TryLock_heldByAnotherOwner(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	a, b := newClient(t, cluster), newClient(t, cluster)
	lease := mustLock(t, ctx, a.Mutex("job"))
	_, err := b.Mutex("job").TryLock(ctx)
	if !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryLock on a held lock: %v, want ErrNotAcquired", err)
	}
	// Another goroutine of the same client without the lease's context is
	// another owner too.
	if _, err := a.Mutex("job").TryLock(ctx); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryLock by another owner of the same client: %v, want ErrNotAcquired", err)
	}
	mustUnlock(t, lease)
	other, err := b.Mutex("job").TryLock(ctx)
	if err != nil {
		t.Fatalf("TryLock after Unlock: %v", err)
	}
	mustUnlock(t, other)
}

func TestMutex_Lock_reentrant_viaLeaseContext(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	c := newClient(t, cluster)
	m := c.Mutex("nested")
	outer := mustLock(t, ctx, m)
	inner, err := m.TryLock(outer.Context())
	if err != nil {
		t.Fatalf("re-entering with the lease's context: %v", err)
	}
	if inner.Owner() != outer.Owner() {
		t.Fatalf("inner owner %q, outer %q: want the same", inner.Owner(), outer.Owner())
	}
	admin := cluster.Admin(t, 0)
	// Lock returns at a quorum: node 0 may answer a moment later.
	waitFor(t, time.Second, "two holds on node 0", func() bool {
		return holdCount(t, admin, "redlock:{nested}") == 2
	})
	mustUnlock(t, inner)
	if _, err := c.Mutex("nested").TryLock(ctx); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("after the inner Unlock the outer hold must remain: %v", err)
	}
	if outer.Err() != nil {
		t.Fatalf("outer lease: %v", outer.Err())
	}
	mustUnlock(t, outer)
	again := mustLock(t, ctx, c.Mutex("nested"))
	mustUnlock(t, again)
}

func TestMutex_Lock_reentrant_withOwnerAcrossClients(t *testing.T) {
	cluster := redlocktest.Start(t, 5)
	ctx := redlock.WithOwner(testContext(t), "request-42")
	a, b := newClient(t, cluster), newClient(t, cluster)
	first := mustLock(t, ctx, a.Mutex("order"))
	second, err := b.Mutex("order").TryLock(ctx)
	if err != nil {
		t.Fatalf("the same owner through another client: %v", err)
	}
	if _, err := b.Mutex("order").TryLock(testContext(t)); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("another owner: %v, want ErrNotAcquired", err)
	}
	mustUnlock(t, first)
	if _, err := a.Mutex("order").TryLock(testContext(t)); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("one of two holds released: %v, want still held", err)
	}
	mustUnlock(t, second)
	waitFor(t, time.Second, "no keys left", func() bool { return cluster.KeyCount(t) == 0 })
}

func TestMutex_Lock_ctxCancelledWhileWaiting(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	c := newClient(t, cluster)
	holder := mustLock(t, testContext(t), c.Mutex("busy"))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.Mutex("busy").Lock(ctx)
	if !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock until deadline: %v, want ErrNotAcquired and DeadlineExceeded", err)
	}
	mustUnlock(t, holder)
}

// A ctx cancelled while the acquire scripts are in flight must leave
// nothing locked, whatever the nodes did with the scripts.
func TestMutex_Lock_ctxCancelledMidAttempt_leavesNothingLocked(t *testing.T) {
	cluster := redlocktest.Start(t, 5)
	c := newClient(t, cluster)
	granted := 0
	for i := range 60 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%20)*100*time.Microsecond)
		lease, err := c.Mutex("cancelled").Lock(ctx)
		cancel()
		if err == nil {
			granted++
			mustUnlock(t, lease)
			continue
		}
		if !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Lock: %v, want ErrNotAcquired and DeadlineExceeded", err)
		}
		if keys := cluster.KeyCount(t); keys != 0 {
			t.Fatalf("attempt %d: %d keys left locked after a cancelled Lock", i, keys)
		}
	}
	t.Logf("%d of 60 Locks were granted before their deadline", granted)
}
