package redlock_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest"
)

// keyspaceTTL is the TTL of every lease in TestKeyspace_…: every key the
// library writes lives at most this long after the last call that needed
// it (but the fencing counters).
const keyspaceTTL = time.Second

// keyspaceLeft is what a node may hold once every lease was released and a
// TTL has passed: its marker, and the fencing counters of the names that
// were fenced (an election is fenced), kept on purpose: a token must never
// go backwards (see the table of keys in docs/operations.md).
var keyspaceLeft = []string{"redlock:node", "redlock:{fenced}:fence", "redlock:{leader}:fence"}

// Every kind of operation, then every lease released: one TTL later each
// node holds only its marker and the fencing counters.
func TestKeyspace_nothingLeftOneTTLAfterTheLastRelease(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	a := newClient(t, cluster, redlock.WithTTL(keyspaceTTL))
	b := newClient(t, cluster, redlock.WithTTL(keyspaceTTL))
	for _, step := range []func(*testing.T, context.Context, *redlock.Client, *redlock.Client){
		keyspaceMutex, keyspaceFair, keyspaceFenced, keyspaceRW, keyspaceSemaphore,
		keyspaceElection, keyspaceMulti, keyspaceForced,
	} {
		step(t, ctx, a, b)
	}
	released := time.Now()
	if t.Failed() {
		t.FailNow()
	}
	// The operations did write more than what may stay: the check below
	// can fail.
	if keys := cluster.Keys(t, 0); len(keys) <= len(keyspaceLeft) {
		t.Fatalf("node 0 right after the last release holds only %q", keys)
	}
	time.Sleep(time.Until(released.Add(keyspaceTTL + keyspaceTTL/2)))
	// A fencing counter is raised only where the hold was when its
	// write-back came (a quorum at least): a node whose acquire straggled
	// may have none. The marker is on every node.
	for i := range cluster.Servers {
		keys := cluster.Keys(t, i)
		extra := slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return slices.Contains(keyspaceLeft, k) })
		if len(extra) > 0 || !slices.Contains(keys, "redlock:node") {
			t.Errorf("node %d holds %q a TTL and a half after the last release; want the marker and at most %q", i, keys, keyspaceLeft)
		}
	}
}

// keyspaceMutex: Lock, a reentrant Lock, a refused TryLock, a waiter
// served at the release, a lease renewed by Extend.
func keyspaceMutex(t *testing.T, ctx context.Context, a, b *redlock.Client) {
	outer := mustLock(t, ctx, a.Mutex("plain"))
	inner := mustLock(t, outer.Context(), a.Mutex("plain"))
	if _, err := b.Mutex("plain").TryLock(ctx); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Errorf("TryLock of a held lock: %v; want ErrNotAcquired", err)
	}
	served := lockInBackground(t, ctx, b.Mutex("plain"))
	waitWaiting(t, ctx, a, "plain")
	mustUnlock(t, inner)
	mustUnlock(t, outer)
	if _, ok := served(); !ok {
		t.Error("the plain waiter was not served")
	}
	manual := mustLock(t, ctx, a.Mutex("manual", redlock.WithWatchdog(false)))
	if err := manual.Extend(ctx); err != nil {
		t.Errorf("Extend: %v", err)
	}
	mustUnlock(t, manual)
}

// keyspaceFair: a fair waiter handed the lock, and one that gives up.
func keyspaceFair(t *testing.T, ctx context.Context, a, b *redlock.Client) {
	holder := mustLock(t, ctx, a.Mutex("fair", redlock.WithFair()))
	served := lockInBackground(t, ctx, b.Mutex("fair", redlock.WithFair()))
	waitWaiting(t, ctx, a, "fair")
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := b.Mutex("fair", redlock.WithFair()).Lock(short); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Errorf("a fair waiter whose ctx ended: %v; want ErrNotAcquired", err)
	}
	mustUnlock(t, holder)
	if _, ok := served(); !ok {
		t.Error("the fair waiter was not served")
	}
}

// keyspaceFenced: two fenced leases, the later with the greater token.
func keyspaceFenced(t *testing.T, ctx context.Context, a, b *redlock.Client) {
	first := mustLock(t, ctx, a.Mutex("fenced", redlock.WithFencing()))
	mustUnlock(t, first)
	second := mustLock(t, ctx, b.Mutex("fenced", redlock.WithFencing()))
	mustUnlock(t, second)
	if second.Token() <= first.Token() {
		t.Errorf("tokens %d then %d", first.Token(), second.Token())
	}
}

// keyspaceRW: two readers, a writer queued behind them and handed the
// lock, a reader waiting for that writer.
func keyspaceRW(t *testing.T, ctx context.Context, a, b *redlock.Client) {
	r1, err := a.RWMutex("rw").RLock(ctx)
	if err != nil {
		t.Fatalf("RLock: %v", err)
	}
	r2, err := b.RWMutex("rw").RLock(ctx)
	if err != nil {
		t.Fatalf("RLock: %v", err)
	}
	writer := make(chan *redlock.Lease, 1)
	go func() {
		lease, err := b.RWMutex("rw").Lock(ctx)
		if err != nil {
			t.Errorf("Lock behind two readers: %v", err)
		}
		writer <- lease
	}()
	waitWaiting(t, ctx, a, "rw")
	mustUnlock(t, r1)
	mustUnlock(t, r2)
	w := <-writer
	if w == nil {
		t.FailNow()
	}
	reader := make(chan *redlock.Lease, 1)
	go func() {
		lease, err := a.RWMutex("rw").RLock(ctx)
		if err != nil {
			t.Errorf("RLock behind a writer: %v", err)
		}
		reader <- lease
	}()
	time.Sleep(50 * time.Millisecond)
	mustUnlock(t, w)
	if r := <-reader; r != nil {
		mustUnlock(t, r)
	}
}

// keyspaceSemaphore: every permit taken, a TryAcquire refused, an Acquire
// waiting for a permit.
func keyspaceSemaphore(t *testing.T, ctx context.Context, a, b *redlock.Client) {
	s := a.Semaphore("pool", 2)
	p1, p2 := mustAcquire(t, ctx, s), mustAcquire(t, ctx, s)
	if _, err := b.Semaphore("pool", 2).TryAcquire(ctx); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Errorf("TryAcquire with every permit held: %v; want ErrNotAcquired", err)
	}
	waiting := make(chan *redlock.Lease, 1)
	go func() {
		lease, err := b.Semaphore("pool", 2).Acquire(ctx)
		if err != nil {
			t.Errorf("Acquire behind two permits: %v", err)
		}
		waiting <- lease
	}()
	time.Sleep(50 * time.Millisecond)
	mustUnlock(t, p1)
	if p3 := <-waiting; p3 != nil {
		mustUnlock(t, p3)
	}
	mustUnlock(t, p2)
}

// keyspaceElection: a campaign won, the leader read, leadership resigned.
func keyspaceElection(t *testing.T, ctx context.Context, a, b *redlock.Client) {
	lead, err := a.Election("leader").Campaign(ctx, "a")
	if err != nil {
		t.Fatalf("Campaign: %v", err)
	}
	if leader, err := b.Election("leader").Leader(ctx); err != nil || leader.Value != "a" {
		t.Errorf("Leader: %+v, %v; want a", leader, err)
	}
	mustUnlock(t, lead)
}

// keyspaceMulti: two locks taken and released as one.
func keyspaceMulti(t *testing.T, ctx context.Context, a, _ *redlock.Client) {
	both := mustLock(t, ctx, redlock.Multi(a.Mutex("one"), a.Mutex("two")))
	mustUnlock(t, both)
}

// keyspaceForced: a holder's lock taken by ForceUnlock, its lease lost,
// its Unlock after that.
func keyspaceForced(t *testing.T, ctx context.Context, a, b *redlock.Client) {
	stuck := mustLock(t, ctx, a.Mutex("stuck"))
	if err := b.ForceUnlock(ctx, "stuck"); err != nil {
		t.Fatalf("ForceUnlock: %v", err)
	}
	select {
	case <-stuck.Done():
	case <-time.After(2 * keyspaceTTL):
		t.Fatal("the forced holder's lease was not lost")
	}
	if err := stuck.Unlock(ctx); err == nil {
		t.Error("Unlock of a forced lease: no error")
	}
}

// waitWaiting waits until a waiter is queued for name on some node.
func waitWaiting(t *testing.T, ctx context.Context, c *redlock.Client, name string) {
	t.Helper()
	waitFor(t, 5*time.Second, "a waiter queued for "+name, func() bool {
		info, err := c.Inspect(ctx, name)
		return err == nil && info.Waiting > 0
	})
}
