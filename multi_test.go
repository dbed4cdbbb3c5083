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
	"github.com/redis/go-redis/v9"
)

func TestMulti_onePartHeldElsewhere(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	a, b := newClient(t, cluster), newClient(t, cluster)
	blocker := mustLock(t, ctx, b.Mutex("m2"))
	_, err := redlock.Multi(a.Mutex("m3"), a.Mutex("m1"), a.Mutex("m2")).TryLock(ctx)
	if !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("Multi with a part held elsewhere: %v, want ErrNotAcquired", err)
	}
	for _, name := range []string{"m1", "m3"} {
		lease, err := b.Mutex(name).TryLock(ctx)
		if err != nil {
			t.Fatalf("%s left locked by the failed Multi: %v", name, err)
		}
		mustUnlock(t, lease)
	}
	mustUnlock(t, blocker)
	waitFor(t, time.Second, "no keys left", func() bool { return cluster.KeyCount(t) == 0 })
}

// Two node sets, as two datacenters: one Multi lease over both.
func TestMulti_acrossTwoClients(t *testing.T) {
	east, west := redlocktest.Start(t, 3), redlocktest.Start(t, 3)
	ctx := testContext(t)
	eastClient, westClient := newClient(t, east), newClient(t, west)
	mm := redlock.Multi(eastClient.Mutex("transfer"), westClient.Mutex("transfer"))
	lease := mustLock(t, ctx, mm)
	for name, c := range map[string]*redlock.Client{"east": newClient(t, east), "west": newClient(t, west)} {
		if _, err := c.Mutex("transfer").TryLock(ctx); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("%s part not held: %v", name, err)
		}
	}
	// The lease's Context re-enters every part.
	again, err := mm.TryLock(lease.Context())
	if err != nil {
		t.Fatalf("re-entering the Multi: %v", err)
	}
	mustUnlock(t, again)
	mustUnlock(t, lease)
	if err := lease.Unlock(ctx); !errors.Is(err, redlock.ErrReleased) {
		t.Fatalf("second Unlock: %v", err)
	}
	// Each part's Lock returned at a quorum. On a loaded machine a request
	// to a third node can time out and still run there after the release;
	// the lease releases that late grant again (leases.Lease.LateAcquire).
	waitFor(t, 5*time.Second, "no keys left after the Multi's Unlock", func() bool {
		return east.KeyCount(t)+west.KeyCount(t) == 0
	})
}

func TestMulti_lostPartLosesTheWhole(t *testing.T) {
	east, west := redlocktest.Start(t, 3), redlocktest.Start(t, 3)
	ctx := testContext(t)
	opts := []redlock.Option{redlock.WithTTL(300 * time.Millisecond), redlock.WithNodeTimeout(50 * time.Millisecond)}
	lease := mustLock(t, ctx, redlock.Multi(newClient(t, east, opts...).Mutex("x"), newClient(t, west, opts...).Mutex("x")))
	for _, i := range []int{0, 1} {
		if err := west.Servers[i].Kill(); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-lease.Done():
	case <-time.After(time.Second):
		t.Fatal("Multi lease not lost after one part's majority died")
	}
	if !errors.Is(lease.Err(), redlock.ErrLost) || !errors.Is(context.Cause(lease.Context()), redlock.ErrLost) {
		t.Fatalf("Err() = %v, cause %v; want ErrLost", lease.Err(), context.Cause(lease.Context()))
	}
	_ = lease.Unlock(ctx)
}

func TestMulti_badInput(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	c := newClient(t, cluster)
	ctx := testContext(t)
	for name, mm := range map[string]*redlock.MultiMutex{
		"none":         redlock.Multi(),
		"nil part":     redlock.Multi(c.Mutex("a"), nil),
		"listed twice": redlock.Multi(c.Mutex("a"), c.Mutex("a")),
	} {
		if _, err := mm.Lock(ctx); !errors.Is(err, redlock.ErrConfig) {
			t.Fatalf("%s: %v, want ErrConfig", name, err)
		}
	}
}

// The first part's validity runs out while Lock waits for the second: Lock
// must not return that lease, but take the parts again.
func TestMulti_lockOutlivingAPartTakesItAgain(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	opts := []redlock.Option{redlock.WithWatchdog(false), redlock.WithTTL(300 * time.Millisecond)}
	c := newClient(t, cluster, opts...)
	blocker := mustLock(t, ctx, newClient(t, cluster).Mutex("b"))
	released := make(chan struct{})
	go func() {
		defer close(released)
		time.Sleep(800 * time.Millisecond) // well past a's TTL
		_ = blocker.Unlock(context.Background())
	}()
	t.Cleanup(func() { <-released })
	lease, err := redlock.Multi(c.Mutex("a"), c.Mutex("b")).Lock(ctx)
	returned := time.Now()
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	defer func() { _ = lease.Unlock(context.Background()) }()
	if until := lease.Until(); !until.After(returned) || lease.Err() != nil {
		t.Fatalf("Lock returned a lease valid until %v, %v before it returned (Err() = %v)",
			until.Format("15:04:05.000"), returned.Sub(until), lease.Err())
	}
	for _, name := range []string{"a", "b"} {
		if _, err := newClient(t, cluster).Mutex(name).TryLock(ctx); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("%s not held by the Multi lease: %v", name, err)
		}
	}
}

// slowNode delays every command by delay.
type slowNode struct{ delay time.Duration }

func (s slowNode) sleep(ctx context.Context) error {
	timer := time.NewTimer(s.delay)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s slowNode) DialHook(next redis.DialHook) redis.DialHook { return next }
func (s slowNode) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := s.sleep(ctx); err != nil {
			return err
		}
		return next(ctx, cmd)
	}
}
func (s slowNode) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if err := s.sleep(ctx); err != nil {
			return err
		}
		return next(ctx, cmds)
	}
}

// The first part's validity runs out while TryLock takes the second (on
// slow nodes): TryLock gives everything back and says which part ran out.
func TestMulti_tryLockOutlivingAPartFails(t *testing.T) {
	fast, slow := redlocktest.Start(t, 3), redlocktest.Start(t, 3)
	ctx := testContext(t)
	// Part a's TTL fits its own round on a loaded machine (at 50 ms that
	// round could outlast it first, a different refusal); part b's round,
	// each of its commands delayed 200 ms, takes far longer.
	a := newClient(t, fast, redlock.WithWatchdog(false), redlock.WithTTL(100*time.Millisecond))
	slowClients := slow.Clients(t)
	for _, client := range slowClients {
		client.AddHook(slowNode{delay: 200 * time.Millisecond})
	}
	b, err := redlock.New(slowClients, redlock.WithNodeTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	// a's warm-up first: part a's own round must fit its 100 ms TTL.
	waitFor(t, 5*time.Second, "a's first answers", func() bool { return !slices.Contains(redlock.NodeRTTs(a), 0) })
	lease, err := redlock.Multi(a.Mutex("a"), b.Mutex("b")).TryLock(ctx)
	if err == nil {
		returned, leaseErr := time.Now(), lease.Err()
		_ = lease.Unlock(context.Background())
		t.Fatalf("TryLock returned a lease valid until %v, %v before it returned (Err() = %v)",
			lease.Until().Format("15:04:05.000"), returned.Sub(lease.Until()), leaseErr)
	}
	if msg := err.Error(); !errors.Is(err, redlock.ErrNotAcquired) ||
		!strings.Contains(msg, "Multi: a:") || !strings.Contains(msg, "validity ran out") {
		t.Fatalf("TryLock: %v; want ErrNotAcquired saying part a's validity ran out", err)
	}
	t.Log(err)
	waitFor(t, 5*time.Second, "no keys left", func() bool { return fast.KeyCount(t)+slow.KeyCount(t) == 0 })
}
