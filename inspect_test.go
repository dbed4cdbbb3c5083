package redlock_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/redlocktest"
)

// Inspect reports the holder (as a fingerprint), its holds, how long a
// quorum still holds it, the queue and the fence, node by node; with a majority of nodes
// down it says so (ErrNoQuorum, each *NodeError) instead of guessing.
func TestInspect_holderQueueFenceAndDownNodes(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	const ttl = 10 * time.Second
	a := newClient(t, cluster, redlock.WithFencing(), redlock.WithTTL(ttl))
	b := newClient(t, cluster, redlock.WithFencing(), redlock.WithTTL(ttl))

	info, err := a.Inspect(ctx, "inspected")
	if err != nil || info.Held || info.Owner != "" || info.Holds != 0 || len(info.Nodes) != 3 {
		t.Fatalf("free lock: %+v, %v; want not held, 3 nodes", info, err)
	}
	lease := mustLock(t, ctx, a.Mutex("inspected"))
	inner := mustLock(t, lease.Context(), a.Mutex("inspected")) // a second hold
	waiting := lockInBackground(t, ctx, b.Mutex("inspected"))
	// Lock returns at a quorum: the third node's acquire of the inner hold
	// may still be on its way.
	waitFor(t, 5*time.Second, "the waiter queued, both holds on every node", func() bool {
		info, err = a.Inspect(ctx, "inspected")
		return err == nil && info.Waiting == 1 &&
			!slices.ContainsFunc(info.Nodes, func(n redlock.NodeInfo) bool { return n.Holds != 2 })
	})
	if !info.Held || info.Owner != node.Fingerprint(lease.Owner()) || info.Holds != 2 ||
		info.PTTL <= 0 || info.PTTL > ttl || info.Fence < lease.Token() {
		t.Errorf("held lock: %+v; want held by %s with 2 holds, 0 < PTTL <= %v, fence >= %d",
			info, node.Fingerprint(lease.Owner()), ttl, lease.Token())
	}
	for i, n := range info.Nodes {
		if n.Err != nil || n.Node != i || n.Addr != cluster.Addrs()[i] || n.Owner != info.Owner || n.Holds != 2 {
			t.Errorf("node %d: %+v; want the holder with 2 holds", i, n)
		}
	}
	// One node's key about to expire does not shorten how long a quorum
	// (the other two) still holds it.
	if err := cluster.Admin(t, 0).PExpire(ctx, "redlock:{inspected}", time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if info, err = a.Inspect(ctx, "inspected"); err != nil || info.PTTL <= 2*time.Second || info.Nodes[0].PTTL > time.Second {
		t.Errorf("one key at 1 s, two at about %v: PTTL %v (node 0: %v), %v; want the quorum's, over 2 s", ttl, info.PTTL, info.Nodes[0].PTTL, err)
	}
	if strings.Contains(strings.Join([]string{info.Owner, info.Nodes[0].Owner}, " "), lease.Owner()) {
		t.Error("Inspect shows the owner id itself: whoever reads it could release the lock")
	}
	mustUnlock(t, inner)
	mustUnlock(t, lease)
	if _, ok := waiting(); !ok {
		t.Fatal("the waiter did not get the lock")
	}

	for _, i := range []int{1, 2} {
		if err := cluster.Servers[i].Kill(); err != nil {
			t.Fatal(err)
		}
	}
	info, err = a.Inspect(ctx, "inspected")
	if !errors.Is(err, redlock.ErrNoQuorum) || info.Held || !strings.Contains(err.Error(), "1 of 3 nodes answered, 2 needed") {
		t.Fatalf("2 of 3 nodes down: %+v, %v; want ErrNoQuorum saying 1 of 3 answered, not held", info, err)
	}
	var nodeErr *redlock.NodeError
	if !errors.As(err, &nodeErr) || info.Nodes[1].Err == nil || info.Nodes[2].Err == nil || info.Nodes[0].Err != nil {
		t.Errorf("node errors: %v, nodes %+v; want nodes 1 and 2 failed", err, info.Nodes)
	}
	if _, err := a.Inspect(ctx, ""); !errors.Is(err, redlock.ErrConfig) {
		t.Errorf("empty name: %v, want ErrConfig", err)
	}
}

// ForceUnlock takes the lock from a live holder: the waiter gets it at
// once with a greater token, the old holder's lease is lost at its next
// renewal (saying why), and its Unlock does not touch the new holder's
// lock. A lease without the watchdog finds out at Extend.
func TestForceUnlock_waiterGetsItOldHolderLosesItsLease(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	const ttl = 3 * time.Second // the watchdog renews every second
	holder := newClient(t, cluster, redlock.WithFencing(), redlock.WithTTL(ttl))
	waiter := newClient(t, cluster, redlock.WithFencing(), redlock.WithTTL(ttl))
	admin := newClient(t, cluster)

	old := mustLock(t, ctx, holder.Mutex("forced"))
	manual := mustLock(t, ctx, holder.Mutex("manual", redlock.WithWatchdog(false), redlock.WithTTL(time.Minute)))
	got := make(chan *redlock.Lease, 1)
	go func() {
		lease, err := waiter.Mutex("forced").Lock(ctx)
		if err != nil {
			t.Errorf("waiter: %v", err)
		}
		got <- lease
	}()
	waitFor(t, 5*time.Second, "the waiter queued", func() bool {
		info, err := admin.Inspect(ctx, "forced")
		return err == nil && info.Waiting == 1
	})

	forcedAt := time.Now()
	if err := admin.ForceUnlock(ctx, "forced"); err != nil {
		t.Fatalf("ForceUnlock: %v", err)
	}
	var next *redlock.Lease
	select {
	case next = <-got:
	case <-time.After(2 * time.Second):
		t.Fatal("the waiter did not get the lock within 2 s of ForceUnlock")
	}
	if next == nil {
		t.FailNow()
	}
	if next.Token() <= old.Token() {
		t.Errorf("token after ForceUnlock %d, old holder's %d: want greater", next.Token(), old.Token())
	}
	select {
	case <-old.Done():
	case <-time.After(ttl):
		t.Fatal("the old holder's lease was not lost within a TTL of ForceUnlock")
	}
	if err := old.Err(); !errors.Is(err, redlock.ErrLost) || !strings.Contains(context.Cause(old.Context()).Error(), "ForceUnlock") {
		t.Errorf("old lease: Err %v, cause %v; want ErrLost naming ForceUnlock", err, context.Cause(old.Context()))
	}
	t.Logf("old lease lost %v after ForceUnlock", time.Since(forcedAt).Round(time.Millisecond))
	_ = old.Unlock(ctx) // must not release the new holder's lock
	info, err := admin.Inspect(ctx, "forced")
	if err != nil || !info.Held || info.Owner != node.Fingerprint(next.Owner()) {
		t.Errorf("after the old holder's Unlock: %+v, %v; want held by the new holder", info, err)
	}
	mustUnlock(t, next)

	if err := admin.ForceUnlock(ctx, "manual"); err != nil {
		t.Fatal(err)
	}
	if err := manual.Extend(ctx); !errors.Is(err, redlock.ErrNotHeld) || !strings.Contains(err.Error(), "ForceUnlock") {
		t.Errorf("Extend after ForceUnlock: %v; want ErrNotHeld naming ForceUnlock", err)
	}
	// Nothing held: nothing to do, no error.
	if err := admin.ForceUnlock(ctx, "never-locked"); err != nil {
		t.Errorf("ForceUnlock of a free lock: %v", err)
	}
	if err := admin.ForceUnlock(ctx, ""); !errors.Is(err, redlock.ErrConfig) {
		t.Errorf("empty name: %v, want ErrConfig", err)
	}
}

// With a majority of nodes down, ForceUnlock says it could not do it.
func TestForceUnlock_majorityDownIsNoQuorum(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	admin := newClient(t, cluster, redlock.WithNodeTimeout(200*time.Millisecond))
	for _, i := range []int{0, 1} {
		if err := cluster.Servers[i].Kill(); err != nil {
			t.Fatal(err)
		}
	}
	err := admin.ForceUnlock(testContext(t), "forced")
	if !errors.Is(err, redlock.ErrNoQuorum) || !strings.Contains(err.Error(), "reached 1 of 3 nodes") {
		t.Fatalf("ForceUnlock with 2 of 3 nodes down: %v; want ErrNoQuorum saying it reached 1 of 3", err)
	}
}
