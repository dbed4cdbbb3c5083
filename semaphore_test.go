package redlock_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/quorumlock/redlock/redlocktest/checker"
)

// Many Clients, each with several goroutines, on one semaphore of 3
// permits: never more than 3 holders at once (the checker and a gauge
// under the permits agree), and 3 at once do happen.
func TestSemaphore_Acquire_neverMoreThanPermits(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	check := checker.New()
	const permits, clients, goroutines, rounds = 3, 3, 3, 8
	check.Limit("jobs", permits)
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	for range clients {
		c := newClient(t, cluster)
		s := c.Semaphore("jobs", permits)
		for range goroutines {
			wg.Go(func() {
				for range rounds {
					lease, err := s.Acquire(ctx)
					if err != nil {
						t.Errorf("Acquire: %v", err)
						return
					}
					acquired := time.Now()
					now := inside.Add(1)
					for seen := most.Load(); now > seen && !most.CompareAndSwap(seen, now); seen = most.Load() {
					}
					time.Sleep(20 * time.Millisecond) // long enough that all permits are in use at some point
					inside.Add(-1)
					record(check, "jobs", lease, acquired)
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
	if want := clients * goroutines * rounds; check.Len() != want {
		t.Fatalf("%d grants, want %d", check.Len(), want)
	}
	if got := most.Load(); got != permits {
		t.Fatalf("at most %d holders at once, want %d (the bound, reached)", got, permits)
	}
	// Only the count is left.
	waitFor(t, time.Second, "only the permit count left", func() bool { return cluster.KeyCount(t) == 3 })
}

func TestSemaphore_TryAcquire_whenFullAndAfterUnlock(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	s := newClient(t, cluster).Semaphore("pool", 2)
	first, err := s.TryAcquire(ctx)
	if err != nil {
		t.Fatalf("TryAcquire 1: %v", err)
	}
	second, err := s.TryAcquire(ctx)
	if err != nil {
		t.Fatalf("TryAcquire 2: %v", err)
	}
	if first.Owner() == second.Owner() {
		t.Fatalf("two permits of one owner %q: permits are holders of their own", first.Owner())
	}
	// Another Client, and a permit's own Context (not reentrant): both full.
	other := newClient(t, cluster).Semaphore("pool", 2)
	for _, try := range []func() (*redlock.Lease, error){
		func() (*redlock.Lease, error) { return other.TryAcquire(ctx) },
		func() (*redlock.Lease, error) { return s.TryAcquire(first.Context()) },
	} {
		if lease, err := try(); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("TryAcquire with both permits held = %v, %v; want ErrNotAcquired", lease, err)
		}
	}
	mustUnlock(t, first)
	third, err := other.TryAcquire(ctx)
	if err != nil {
		t.Fatalf("TryAcquire after an Unlock: %v", err)
	}
	mustUnlock(t, second)
	mustUnlock(t, third)
}

// A waiter is woken by the release notice: the TTL is long, so a waiter
// that only polled or waited for expiry would time out.
func TestSemaphore_Acquire_wakesOnUnlock(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	s := newClient(t, cluster, redlock.WithTTL(20*time.Second)).Semaphore("one", 1)
	held, err := s.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waiter := newClient(t, cluster, redlock.WithTTL(20*time.Second)).Semaphore("one", 1)
	got := make(chan error, 1)
	var unlocked atomic.Int64
	go func() {
		wait, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		lease, err := waiter.Acquire(wait)
		if err == nil {
			if unlocked.Load() == 0 {
				err = errors.New("granted before the holder unlocked")
			}
			_ = lease.Unlock(context.Background())
		}
		got <- err
	}()
	time.Sleep(200 * time.Millisecond)
	unlocked.Store(time.Now().UnixNano())
	mustUnlock(t, held)
	if err := <-got; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	if waited := time.Duration(time.Now().UnixNano() - unlocked.Load()); waited > 2*time.Second {
		t.Fatalf("waiter got the permit %v after the Unlock", waited)
	}
}

// A holder that crashed (no Unlock, no renewal) gives its permit back at
// its TTL.
func TestSemaphore_crashedHolderPermitComesBackAtTTL(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	const ttl = 600 * time.Millisecond
	crashed := newClient(t, cluster, redlock.WithTTL(ttl), redlock.WithWatchdog(false)).Semaphore("one", 1)
	if _, err := crashed.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	lease, err := newClient(t, cluster).Semaphore("one", 1).Acquire(ctx)
	if err != nil {
		t.Fatalf("Acquire after the holder crashed: %v", err)
	}
	defer mustUnlock(t, lease)
	if waited := time.Since(began); waited < ttl/2 || waited > ttl+2*time.Second {
		t.Fatalf("waited %v for a crashed holder's permit, TTL %v", waited, ttl)
	}
}

// A waiter whose ctx ends gives up with ErrNotAcquired and ctx's error,
// and leaves nothing held: the permit is free for the next one at once.
func TestSemaphore_Acquire_ctxEndsWhileWaiting_leavesNothingHeld(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	c := newClient(t, cluster)
	s := c.Semaphore("two", 2)
	a, b := mustAcquire(t, ctx, s), mustAcquire(t, ctx, s)
	wait, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if lease, err := newClient(t, cluster).Semaphore("two", 2).Acquire(wait); !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire with both permits held until its deadline = %v, %v", lease, err)
	}
	mustUnlock(t, a)
	mustUnlock(t, b)
	waitFor(t, time.Second, "only the permit count left", func() bool { return cluster.KeyCount(t) == 3 })
	for range 2 {
		if _, err := newClient(t, cluster).Semaphore("two", 2).TryAcquire(ctx); err != nil {
			t.Fatalf("TryAcquire after the waiter gave up: %v", err)
		}
	}
}

// Two counts for one name: the later one gets ErrConfig, and takes nothing.
func TestSemaphore_mismatchedPermits(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	lease := mustAcquire(t, ctx, newClient(t, cluster).Semaphore("pool", 2))
	defer mustUnlock(t, lease)
	for _, permits := range []int{1, 3} {
		larger := newClient(t, cluster).Semaphore("pool", permits)
		if got, err := larger.TryAcquire(ctx); !errors.Is(err, redlock.ErrConfig) {
			t.Fatalf("permits %d against a stored 2: %v, %v; want ErrConfig", permits, got, err)
		}
		if _, err := larger.Acquire(ctx); !errors.Is(err, redlock.ErrConfig) {
			t.Fatalf("Acquire with permits %d against a stored 2: %v; want ErrConfig", permits, err)
		}
	}
	// One node that disagrees is enough.
	if err := cluster.Admin(t, 2).Set(ctx, "redlock:{other}:permits", "5", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := newClient(t, cluster).Semaphore("other", 4).TryAcquire(ctx); !errors.Is(err, redlock.ErrConfig) {
		t.Fatalf("permits 4 against 5 on one node: %v; want ErrConfig", err)
	}
}

func TestSemaphore_badInput(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	c := newClient(t, cluster)
	ctx := testContext(t)
	for _, tt := range []struct {
		name string
		s    *redlock.Semaphore
	}{
		{"no permits", c.Semaphore("s", 0)},
		{"negative permits", c.Semaphore("s", -1)},
		{"too many permits", c.Semaphore("s", math.MaxInt)},
		{"empty name", c.Semaphore("", 2)},
		{"fair", c.Semaphore("s", 2, redlock.WithFair())},
		{"fencing", c.Semaphore("s", 2, redlock.WithFencing())},
		{"NaN drift", c.Semaphore("s", 2, redlock.WithDriftFactor(math.NaN()))},
	} {
		if _, err := tt.s.TryAcquire(ctx); !errors.Is(err, redlock.ErrConfig) {
			t.Errorf("%s: TryAcquire = %v; want ErrConfig", tt.name, err)
		}
		if _, err := tt.s.Acquire(ctx); !errors.Is(err, redlock.ErrConfig) {
			t.Errorf("%s: Acquire = %v; want ErrConfig", tt.name, err)
		}
	}
	//lint:ignore SA1012 a nil context is the bad input under test
	if _, err := c.Semaphore("s", 2).Acquire(nil); !errors.Is(err, redlock.ErrConfig) { //nolint:staticcheck
		t.Errorf("nil ctx: %v; want ErrConfig", err)
	}
	// A count key of the wrong type: a key conflict, not a panic.
	if err := cluster.Admin(t, 0).HSet(ctx, "redlock:{typed}:permits", "a", "b").Err(); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Admin(t, 1).HSet(ctx, "redlock:{typed}:permits", "a", "b").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Semaphore("typed", 2).TryAcquire(ctx); !errors.Is(err, redlock.ErrNoQuorum) || !errors.Is(err, redlock.ErrKeyConflict) {
		t.Errorf("count key a hash on 2 of 3 nodes: %v; want ErrNoQuorum and ErrKeyConflict", err)
	}
	// The 2 planted, and the count stored on the third node: no slot taken.
	if n := cluster.KeyCount(t); n != 3 {
		t.Errorf("%d keys after the failed calls, want 3", n)
	}
}

func mustAcquire(t *testing.T, ctx context.Context, s *redlock.Semaphore) *redlock.Lease {
	t.Helper()
	lease, err := s.Acquire(ctx)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	return lease
}

// rollingRestartEmpty restarts every node without its data, one after
// another, each once the one before votes again (the restart guard, a TTL,
// has passed), so that the locks themselves survive.
func rollingRestartEmpty(t *testing.T, cluster *redlocktest.Nodes, guard time.Duration) {
	t.Helper()
	for i, n := range cluster.Servers {
		if err := n.Restart(false); err != nil {
			t.Fatalf("restart node %d: %v", i, err)
		}
		time.Sleep(guard + guard/2)
	}
}

// The count is kept while permits are out: after every node lost it (and
// got the permits' slots back from their renewals), a Semaphore with
// another count is still refused.
func TestSemaphore_countSurvivesARollingRestart(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	const ttl = 600 * time.Millisecond
	s := newClient(t, cluster, redlock.WithTTL(ttl)).Semaphore("pool", 2)
	a, b := mustAcquire(t, ctx, s), mustAcquire(t, ctx, s)
	rollingRestartEmpty(t, cluster, ttl)
	if a.Err() != nil || b.Err() != nil {
		t.Fatalf("permits lost in a rolling restart: %v, %v", a.Err(), b.Err())
	}
	if lease, err := newClient(t, cluster, redlock.WithTTL(ttl)).Semaphore("pool", 3).TryAcquire(ctx); !errors.Is(err, redlock.ErrConfig) {
		t.Fatalf("permits 3 after the restart, 2 held: %v, %v; want ErrConfig", lease, err)
	}
	mustUnlock(t, a)
	mustUnlock(t, b)
}

// An ended ctx: ErrNotAcquired and ctx's error, even on a value's first
// call (the count not checked yet).
func TestSemaphore_ctxEndedBeforeTheCall(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx, cancel := context.WithCancel(testContext(t))
	cancel()
	s := newClient(t, cluster).Semaphore("pool", 2)
	for _, try := range []func(context.Context) (*redlock.Lease, error){s.Acquire, s.TryAcquire} {
		if _, err := try(ctx); !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, context.Canceled) {
			t.Errorf("with a cancelled ctx: %v; want ErrNotAcquired and context.Canceled", err)
		}
	}
	if n := cluster.KeyCount(t); n > 3 {
		t.Errorf("%d keys after calls with a cancelled ctx", n)
	}
}

// Acquire waits through a moment without a quorum, as Lock does.
func TestSemaphore_Acquire_waitsOutAMissingQuorum(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	s := newClient(t, cluster, redlock.WithNodeTimeout(100*time.Millisecond)).Semaphore("pool", 2)
	for _, i := range []int{1, 2} {
		if err := cluster.Servers[i].Pause(); err != nil {
			t.Fatal(err)
		}
	}
	resumed := time.AfterFunc(500*time.Millisecond, func() {
		for _, i := range []int{1, 2} {
			_ = cluster.Servers[i].Resume()
		}
	})
	defer resumed.Stop()
	lease, err := s.Acquire(ctx)
	if err != nil {
		t.Fatalf("Acquire across half a second without a quorum: %v", err)
	}
	mustUnlock(t, lease)
}

// WithFair and WithFencing as the Client's defaults leave its semaphores
// usable; a key of another type on one slot leaves the other slots usable.
func TestSemaphore_clientDefaultsAndABadSlot(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	c := newClient(t, cluster, redlock.WithFair(), redlock.WithFencing())
	for i := range 3 {
		if err := cluster.Admin(t, i).Set(ctx, "redlock:{pool:permit0}", "x", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	s := c.Semaphore("pool", 2)
	for range 6 { // the scan starts at a random slot: both orders are tried
		lease, err := s.TryAcquire(ctx)
		if err != nil {
			t.Fatalf("TryAcquire with slot 0 a string: %v", err)
		}
		mustUnlock(t, lease)
	}
	held := mustAcquire(t, ctx, s)
	if _, err := s.TryAcquire(ctx); !errors.Is(err, redlock.ErrNotAcquired) && !errors.Is(err, redlock.ErrKeyConflict) {
		t.Fatalf("TryAcquire with slot 1 held and slot 0 a string: %v", err)
	}
	mustUnlock(t, held)
}

// countTTLs reads the permit count's remaining life on every node (as
// go-redis reports PTTL: -2 ns absent, -1 ns no expiry).
func countTTLs(t *testing.T, cluster *redlocktest.Nodes, name string) []time.Duration {
	t.Helper()
	ttls := make([]time.Duration, len(cluster.Servers))
	for i := range cluster.Servers {
		ttl, err := cluster.Admin(t, i).PTTL(context.Background(), "redlock:{"+name+"}:permits").Result()
		if err != nil {
			t.Fatalf("PTTL on node %d: %v", i, err)
		}
		ttls[i] = ttl
	}
	return ttls
}

// The count is kept while a permit is held, for many TTLs (a count stored
// without expiry, as older versions did, gets one), and is gone a TTL
// after the last permit ended: then another count may be used.
func TestSemaphore_countKeptWhileHeldGoneATTLAfter(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	const ttl = 500 * time.Millisecond
	if err := cluster.Admin(t, 0).Set(ctx, "redlock:{pool}:permits", "2", 0).Err(); err != nil {
		t.Fatal(err)
	}
	s := newClient(t, cluster, redlock.WithTTL(ttl)).Semaphore("pool", 2)
	lease := mustAcquire(t, ctx, s)
	for range 4 * 3 { // four TTLs, looking every third of one
		time.Sleep(ttl / 3)
		for i, left := range countTTLs(t, cluster, "pool") {
			if left <= 0 || left > ttl {
				t.Fatalf("node %d: the count's life %v while a permit is held; want in (0, %v]", i, left, ttl)
			}
		}
	}
	if err := lease.Err(); err != nil || time.Until(lease.Until()) <= 0 {
		t.Fatalf("the permit after four TTLs: %v, until %v", err, lease.Until())
	}
	mustUnlock(t, lease)
	time.Sleep(ttl + ttl/2)
	for i, left := range countTTLs(t, cluster, "pool") {
		if left != -2 {
			t.Errorf("node %d: the count's life %v a TTL after the last permit ended; want it gone", i, left)
		}
	}
	if lease, err := newClient(t, cluster, redlock.WithTTL(ttl)).Semaphore("pool", 3).TryAcquire(ctx); err != nil {
		t.Errorf("another count once the old one expired: %v", err)
	} else {
		mustUnlock(t, lease)
	}
}

// A permit is valid no longer than its count is confirmed on a quorum:
// when another count took its place on the nodes (set by hand here; the
// same as the count lost and stored afresh by another Client), the permit
// is lost within a TTL, though its slot's renewals still succeed.
func TestSemaphore_permitLostWhenItsCountIsNotConfirmed(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	const ttl = 600 * time.Millisecond
	s := newClient(t, cluster, redlock.WithTTL(ttl)).Semaphore("pool", 2)
	lease := mustAcquire(t, ctx, s)
	if until := time.Until(lease.Until()); until <= 0 || until > ttl {
		t.Fatalf("a new permit's Until is %v away; want in (0, %v]", until, ttl)
	}
	for i := range cluster.Servers {
		if err := cluster.Admin(t, i).Set(ctx, "redlock:{pool}:permits", "3", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	replaced := time.Now()
	select {
	case <-lease.Done():
	case <-time.After(2 * ttl):
		t.Fatalf("the permit is still valid %v after its count was replaced (Until %v away)",
			time.Since(replaced), time.Until(lease.Until()))
	}
	if lost := time.Since(replaced); lost > ttl+ttl/5 {
		t.Errorf("lost %v after the count was replaced; want within a TTL (%v)", lost, ttl)
	}
	if err := lease.Err(); !errors.Is(err, redlock.ErrLost) || !strings.Contains(context.Cause(lease.Context()).Error(), "permit count") {
		t.Errorf("the permit's end: %v, cause %v; want ErrLost naming the permit count", err, context.Cause(lease.Context()))
	}
	if _, err := s.TryAcquire(ctx); !errors.Is(err, redlock.ErrConfig) {
		t.Errorf("TryAcquire against the other count: %v; want ErrConfig", err)
	}
}
