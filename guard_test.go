package redlock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/redis/go-redis/v9"
)

// The restart guard (on by default): a majority restarted empty while a
// lease is held does not let a second owner in; the refusal says why.
func TestGuard_majorityRestartedEmptyWhileHeld(t *testing.T) {
	check := restartMajorityWhileHeld(t, false, 10*time.Second)
	if err := check.Err(); err != nil {
		t.Fatal(err)
	}
	if check.Len() != 1 {
		t.Fatalf("%d grants recorded, want only the first owner's", check.Len())
	}
}

// FLUSHALL on a majority while a lease is held: with the guard the second
// Client is refused with the nodes' quarantine (and the observer hears of
// each node once); without it, it gets an overlapping lease. After the
// guard, the lock works again, within 2 × TTL of the flush.
func TestGuard_majorityFlushAll(t *testing.T) {
	const ttl = time.Second
	for _, guard := range []bool{true, false} {
		cluster := redlocktest.Start(t, 3)
		ctx := testContext(t)
		var mu sync.Mutex
		events := map[int]int{}
		var until time.Time
		opts := []redlock.Option{redlock.WithTTL(ttl), redlock.WithObserver(redlock.Observer{
			Quarantined: func(e redlock.QuarantineEvent) {
				mu.Lock()
				defer mu.Unlock()
				events[e.Node]++
				until = e.Until
				if !errors.Is(e.Reason, redlock.ErrQuarantined) {
					t.Errorf("event reason %v does not match ErrQuarantined", e.Reason)
				}
			}})}
		if !guard {
			opts = append(opts, redlock.WithRestartGuard(0))
		}
		a, b := newClient(t, cluster, opts...), newClient(t, cluster, opts...)
		// Nothing of a's may reach a flushed node after the flush: it would
		// put a's hold back there (guard off: no overlapping lease for the
		// control), or meet the quarantine and report it from a's Client
		// too (guard on). So no watchdog (its renewal comes every TTL/3, and
		// a loaded machine can delay the checks below past it), and the
		// flush waits for a's request to the third node, which Lock does
		// not wait for once two granted.
		held := mustLock(t, ctx, a.Mutex("flushed", redlock.WithWatchdog(false)))
		admins := []*redis.Client{cluster.Admin(t, 0), cluster.Admin(t, 1), cluster.Admin(t, 2)}
		waitFor(t, 5*time.Second, "a's hold on every node", func() bool {
			for _, admin := range admins {
				if holdCount(t, admin, "redlock:{flushed}") != 1 {
					return false
				}
			}
			return true
		})
		flushed := time.Now()
		for _, i := range []int{0, 1} {
			if err := admins[i].FlushAll(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}
		other, err := b.Mutex("flushed").TryLock(ctx)
		if !guard {
			if err != nil {
				t.Fatalf("guard off: TryLock after the flush = %v; the control must get the overlapping lease", err)
			}
			mustUnlock(t, other)
			_ = held.Unlock(ctx)
			continue
		}
		if err == nil {
			t.Fatalf("guard on: a second owner got the lock while the first holds it (until %v)", held.Until())
		}
		if !errors.Is(err, redlock.ErrQuarantined) || !strings.Contains(err.Error(), "quarantined: lost its data") {
			t.Fatalf("guard on: TryLock = %v; want the nodes' quarantine named", err)
		}
		// Retried: still refused, and each node reported once.
		if _, err := b.Mutex("flushed").TryLock(ctx); err == nil {
			t.Fatal("guard on: a second TryLock got the lock")
		}
		mu.Lock()
		if events[0] != 1 || events[1] != 1 || len(events) != 2 || until.Before(flushed.Add(ttl-100*time.Millisecond)) {
			t.Errorf("quarantine events %v (until %v); want nodes 0 and 1 once each, until a TTL after the flush", events, until)
		}
		mu.Unlock()
		_ = held.Unlock(ctx) // the flushed nodes forgot the hold: an error, and the lease ends
		lockCtx, cancel := context.WithTimeout(ctx, 2*ttl)
		again, err := b.Mutex("flushed").Lock(lockCtx)
		cancel()
		if err != nil {
			t.Fatalf("the lock did not work again within 2 × TTL of the flush: %v", err)
		}
		if since := time.Since(flushed); since < ttl-100*time.Millisecond {
			t.Fatalf("granted %v after the flush, before the guard (%v) passed", since, ttl)
		}
		mustUnlock(t, again)
	}
}

// Nodes restarted with their data (AOF, appendfsync always) wait out the
// guard from their start as after a snapshot: the file may have been
// switched off at run time and loaded as it was then, which the data
// cannot show. A new Client is refused, naming the restart, then locks.
func TestGuard_restartWithDataWaitsTheGuard(t *testing.T) {
	cluster := redlocktest.Start(t, 3, "--appendonly", "yes", "--appendfsync", "always")
	ctx := testContext(t)
	const ttl = 2 * time.Second
	first := newClient(t, cluster, redlock.WithTTL(ttl))
	mustUnlock(t, mustLock(t, ctx, first.Mutex("kept")))
	for i := range cluster.Servers {
		if err := cluster.Servers[i].Restart(true); err != nil {
			t.Fatal(err)
		}
	}
	restarted := time.Now()
	fresh := newClient(t, cluster, redlock.WithTTL(ttl))
	if _, err := fresh.Mutex("kept").TryLock(ctx); !errors.Is(err, redlock.ErrQuarantined) ||
		!strings.Contains(err.Error(), "restarted") {
		t.Fatalf("TryLock right after a restart with the data kept = %v; want quarantined: restarted", err)
	}
	lease := mustLock(t, ctx, fresh.Mutex("kept"))
	if since := time.Since(restarted); since < ttl-time.Second {
		t.Fatalf("granted %v after the restart; want no sooner than the guard (%v) from the start", since, ttl)
	}
	mustUnlock(t, lease)
}

// A node never used before is indistinguishable from one that lost its
// data: it waits out the guard from its start, unless declared new
// (node.Declare, as `redlock init` does); "0" alone no longer declares it,
// since a snapshot restart would bring it back.
func TestGuard_newNodeWaitsUnlessMarked(t *testing.T) {
	cluster := redlocktest.Start(t, 1)
	ctx := testContext(t)
	admin := cluster.Admin(t, 0)
	if err := admin.Del(ctx, "redlock:node").Err(); err != nil { // as if redlocktest had not marked it
		t.Fatal(err)
	}
	c := newClient(t, cluster, redlock.WithTTL(time.Minute))
	if _, err := c.Mutex("new").TryLock(ctx); !errors.Is(err, redlock.ErrQuarantined) {
		t.Fatalf("TryLock on a new node = %v; want ErrQuarantined", err)
	}
	if err := admin.Set(ctx, "redlock:node", "0", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Mutex("new").TryLock(ctx); !errors.Is(err, redlock.ErrQuarantined) {
		t.Fatalf("TryLock on a new node marked \"0\" = %v; want ErrQuarantined", err)
	}
	// The guard read that "0" as a marker from before this process (a
	// restart): declaring takes a node as nobody prepared it.
	if err := admin.Del(ctx, "redlock:node").Err(); err != nil {
		t.Fatal(err)
	}
	if err := node.Declare(ctx, admin, "redlock:"); err != nil {
		t.Fatal(err)
	}
	mustUnlock(t, mustLock(t, ctx, c.Mutex("new")))
	if err := admin.Set(ctx, "redlock:node", "garbage", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Mutex("new").TryLock(ctx); err == nil || !strings.Contains(err.Error(), "marker is not a time") {
		t.Fatalf("TryLock with a garbage marker = %v; want the marker named", err)
	}
	if got, err := admin.Get(ctx, "redlock:node").Result(); err != nil || got != "garbage" {
		t.Fatalf("marker after a refused call = %q, %v; the call must not change it", got, err)
	}
}

func TestGuard_badValues(t *testing.T) {
	cluster := redlocktest.Start(t, 1)
	for _, d := range []time.Duration{-time.Nanosecond, redlock.MaxRestartGuard + 1} {
		if _, err := redlock.New(cluster.Clients(t), redlock.WithRestartGuard(d)); !errors.Is(err, redlock.ErrConfig) {
			t.Errorf("WithRestartGuard(%v) = %v; want ErrConfig", d, err)
		}
	}
}
