package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/redis/go-redis/v9"
)

func TestDial_ownsItsConnections(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	c, err := redlock.Dial(cluster.URLs())
	if err != nil {
		t.Fatal(err)
	}
	lease := mustLock(t, testContext(t), c.Mutex("dialed"))
	mustUnlock(t, lease)
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// Dial's clients do not flood go-redis's process-wide log: a dead node
// costs a few "failed to dial" lines per outage, not one per call or
// probe (go-redis logs each failed dial until the pool's size of them
// have failed, then probes quietly). A node that comes back still votes.
func TestDial_deadNodeLogsAFewLinesAndComesBack(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	dead := []int{1, 2}
	logged := &countingRedisLog{lines: map[string]int{}}
	for _, i := range dead {
		logged.lines[cluster.Servers[i].Addr()] = 0
	}
	redis.SetLogger(logged)
	t.Cleanup(func() { redis.SetLogger(quietRedis{}) })
	c, err := redlock.Dial(cluster.URLs(), redlock.WithNodeTimeout(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := testContext(t)
	mustUnlock(t, mustLock(t, ctx, c.Mutex("quiet")))
	for _, i := range dead {
		if err := cluster.Servers[i].Kill(); err != nil {
			t.Fatal(err)
		}
	}
	// Three seconds of a waiting Lock: each attempt asks every node,
	// and the breaker pings each dead node four times a second.
	waitCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
	_, err = c.Mutex("quiet").Lock(waitCtx)
	cancel()
	if !errors.Is(err, redlock.ErrNoQuorum) {
		t.Fatalf("Lock with 2 of 3 nodes dead: %v, want ErrNoQuorum", err)
	}
	for _, i := range dead {
		addr := cluster.Servers[i].Addr()
		if n := logged.count(addr); n == 0 || n > 4 {
			t.Errorf("go-redis logged %d lines about dead node %s in 3 s; want 1 to 4", n, addr)
		}
	}
	for _, i := range dead {
		if err := cluster.Servers[i].Restart(false); err != nil {
			t.Fatal(err)
		}
		if err := node.Declare(ctx, cluster.Admin(t, i), "redlock:"); err != nil {
			t.Fatal(err) // a node that never held a lock: it votes at once
		}
	}
	// Node 0 alone is not a quorum: a grant needs a restarted node.
	backCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	mustUnlock(t, mustLock(t, backCtx, c.Mutex("quiet")))
}

// A Client from Dial owns its connections, so Close cuts the calls still
// out to a paused node (the straggling acquire of the last Lock, probes)
// instead of waiting for their timeouts.
func TestDial_closeDoesNotWaitForAPausedNode(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	c, err := redlock.Dial(cluster.URLs())
	if err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t)
	mustUnlock(t, mustLock(t, ctx, c.Mutex("paused"))) // connections and scripts ready
	if err := cluster.Servers[2].Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Servers[2].Resume() })
	mustUnlock(t, mustLock(t, ctx, c.Mutex("paused")))
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if took := time.Since(start); took > 250*time.Millisecond {
		t.Errorf("Close took %v with a paused node; want well under the node timeout (%v)", took, redlock.DefaultNodeTimeout)
	}
}

// Close right after Unlock (as redlock run does) finds releases still out
// to the slower nodes; it lets them finish rather than cut them, which
// go-redis would log, one line per connection.
func TestDial_closeAfterUnlockLogsNothing(t *testing.T) {
	cluster := redlocktest.Start(t, 5)
	logged := &countingRedisLog{lines: map[string]int{}}
	redis.SetLogger(logged)
	t.Cleanup(func() { redis.SetLogger(quietRedis{}) })
	ctx := testContext(t)
	for range 30 {
		c, err := redlock.Dial(cluster.URLs())
		if err != nil {
			t.Fatal(err)
		}
		mustUnlock(t, mustLock(t, ctx, c.Mutex("closing")))
		if err := c.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	logged.mu.Lock()
	defer logged.mu.Unlock()
	if len(logged.all) > 0 {
		t.Errorf("go-redis logged %d lines, first: %s", len(logged.all), logged.all[0])
	}
}
