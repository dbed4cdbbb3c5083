package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/redis/go-redis/v9"
)

// lateOwnerNodes lists the nodes on which owner holds the lock called name.
func lateOwnerNodes(t *testing.T, cluster *redlocktest.Nodes, name, owner string) []int {
	t.Helper()
	var nodes []int
	for i := range cluster.Servers {
		holder, err := cluster.Admin(t, i).HGet(context.Background(), "redlock:{"+name+"}", "owner").Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatalf("node %d: HGET owner: %v", i, err)
		}
		if holder == owner {
			nodes = append(nodes, i)
		}
	}
	return nodes
}

// A renewal that reaches the nodes after the lease was released, later
// than the release's tombstones last (a TTL), re-creates nothing. A's
// Extend is held back 2.5 s on two of its three links (request latency on
// A's own proxies: the renewals run on the nodes 2.5 s after they were
// sent), so it times out at the client; A unlocks (on new connections,
// which the latency does not slow), B takes the lock and releases it; the
// held renewals then land, past their TTL. B must get the lock right
// after A's release, and again after the renewals landed, and no node may
// hold the lock for A then.
func TestExtend_lateRenewalNeverRecreatesAReleasedHold(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	const (
		name  = "late-renewal"
		ttl   = time.Second
		delay = 2500 * time.Millisecond // on A's renewals, on nodes 0 and 1
	)
	opts := []redlock.Option{redlock.WithTTL(ttl), redlock.WithWatchdog(false), redlock.WithNodeTimeout(200 * time.Millisecond)}
	a, links := ownLinksClient(t, cluster, opts...)
	b := newClient(t, cluster, opts...)
	for _, c := range []*redlock.Client{a, b} {
		mustUnlock(t, mustLock(t, ctx, c.Mutex(name))) // scripts loaded, clocks probed
	}
	lease := mustLock(t, ctx, a.Mutex(name))

	links[0].SetRequestLatency(delay)
	links[1].SetRequestLatency(delay)
	sent := time.Now()
	extended := make(chan error, 1)
	go func() { extended <- lease.Extend(ctx) }()
	// The renewals are on their way (read by the proxies at once); what A
	// sends after them, on other connections, goes through on time.
	time.Sleep(50 * time.Millisecond)
	links[0].SetRequestLatency(0)
	links[1].SetRequestLatency(0)
	err := <-extended
	t.Logf("A's Extend, held on nodes 0 and 1: %v after %v", err, time.Since(sent))
	if err == nil {
		t.Fatal("A's Extend succeeded with its renewals held on 2 of 3 nodes")
	}
	time.Sleep(50 * time.Millisecond) // the nodes answer A's pings again
	if err := lease.Unlock(context.Background()); err != nil {
		t.Fatalf("A's Unlock at +%v: %v", time.Since(sent), err)
	}
	released := time.Since(sent)

	first, err := b.Mutex(name).TryLock(ctx)
	if err != nil {
		t.Fatalf("B's TryLock right after A's release (+%v): %v", released, err)
	}
	mustUnlock(t, first)

	time.Sleep(time.Until(sent.Add(delay + 300*time.Millisecond))) // A's renewals landed
	at := time.Since(sent)
	if nodes := lateOwnerNodes(t, cluster, name, lease.Owner()); len(nodes) > 0 {
		t.Errorf("at +%v (A released at +%v, its renewals landed at +%v): A holds the lock again on nodes %v", at, released, delay, nodes)
	}
	second, err := b.Mutex(name).TryLock(ctx)
	if err != nil {
		t.Fatalf("B's TryLock at +%v, after A's late renewals landed (A released at +%v): %v", at, released, err)
	}
	mustUnlock(t, second)
}
