package node_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quorumlock/redlock/node"
)

// Inspect reads a node's view of a lock without changing it: free, held
// with two holds, handed to a waiter; a key of the wrong type is a
// conflict that names it.
func TestInspect_readsTheLockAsItIs(t *testing.T) {
	n, cluster := oneNode(t)
	ctx := context.Background()
	keys := keysOf("redlock:{inspected}")
	view, err := n.Inspect(ctx, keys)
	if err != nil || view != (node.View{PTTL: -2 * time.Millisecond}) {
		t.Fatalf("free lock: %+v, %v; want nothing held, PTTL -2ms", view, err)
	}
	for _, hold := range []string{"h1", "h2"} {
		if got, err := n.Acquire(ctx, nil, keys, "owner-a", hold, time.Minute); err != nil || !got.Granted {
			t.Fatalf("acquire %s: %+v, %v", hold, got, err)
		}
	}
	if _, err := n.RaiseFence(ctx, keys.Fence, 41); err != nil {
		t.Fatal(err)
	}
	w := fairWaiter(1, time.Minute)
	if _, err := n.AcquireQueued(ctx, nil, keys, "waiter", "w-1", time.Minute, w, time.Minute); err != nil {
		t.Fatal(err)
	}
	before := cluster.Admin(t, 0).Dump(ctx, keys.Lock).Val()
	view, err = n.Inspect(ctx, keys)
	if err != nil || view.Holder != node.Fingerprint("owner-a") || view.Holds != 2 || view.Handed ||
		view.PTTL <= 0 || view.PTTL > time.Minute || view.Waiting != 1 || view.Fence != 41 {
		t.Fatalf("held lock: %+v, %v; want owner-a's fingerprint, 2 holds, a PTTL, 1 waiting, fence 41", view, err)
	}
	if after := cluster.Admin(t, 0).Dump(ctx, keys.Lock).Val(); after != before {
		t.Fatal("Inspect changed the lock")
	}
	for _, hold := range []string{"h1", "h2"} {
		if _, err := release(ctx, n, keys, "owner-a", hold, 0); err != nil {
			t.Fatal(err)
		}
	}
	view, err = n.Inspect(ctx, keys)
	if err != nil || view.Holder != node.Fingerprint("waiter") || view.Holds != 0 || !view.Handed || view.Waiting != 0 {
		t.Fatalf("handed lock: %+v, %v; want handed to the waiter, no holds, none waiting", view, err)
	}
	if err := cluster.Admin(t, 0).Set(ctx, "redlock:{str}", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Inspect(ctx, keysOf("redlock:{str}")); !errors.Is(err, node.ErrKeyConflict) {
		t.Fatalf("a string lock key: %v, want ErrKeyConflict", err)
	}
}

// ForceRelease removes every hold of whoever holds the lock and records
// them as released: the holder's renewal and a late copy of its acquire
// are refused, the first waiter gets the lock, and the fence is reported.
func TestForceRelease_removesEveryHoldAndRefusesTheirRenewal(t *testing.T) {
	n, _ := oneNode(t)
	ctx := context.Background()
	keys := keysOf("redlock:{forced}")
	for _, hold := range []string{"h1", "h2"} {
		if got, err := n.Acquire(ctx, nil, keys, "holder", hold, time.Minute); err != nil || !got.Granted {
			t.Fatalf("acquire %s: %+v, %v", hold, got, err)
		}
	}
	if _, err := n.RaiseFence(ctx, keys.Fence, 7); err != nil {
		t.Fatal(err)
	}
	if _, err := n.AcquireQueued(ctx, nil, keys, "waiter", "w-1", time.Minute, fairWaiter(1, time.Minute), time.Minute); err != nil {
		t.Fatal(err)
	}
	forced, err := n.ForceRelease(ctx, keys, time.Minute, time.Minute, "notice-1")
	if err != nil || forced.Removed != 2 || forced.Next != node.Fingerprint("waiter") || forced.Fence != 7 {
		t.Fatalf("ForceRelease = %+v, %v; want 2 holds removed, handed to the waiter, fence 7", forced, err)
	}
	renewed, err := n.Renew(ctx, []node.Renewal{{Keys: keys, Owner: "holder", Hold: "h1", TTL: time.Minute}})
	if err != nil || renewed[0] != node.Revoked {
		t.Fatalf("the old holder's renewal: %v, %v; want refused", renewed, err)
	}
	if got, err := n.Acquire(ctx, nil, keys, "waiter", "w-1", time.Minute); err != nil || !got.Granted {
		t.Fatalf("the waiter's claim: %+v, %v; want granted", got, err)
	}
	if _, err := release(ctx, n, keys, "waiter", "w-1", 0); err != nil {
		t.Fatal(err)
	}
	// With the lock free, a late copy of the old holder's acquire or its
	// renewal still finds its hold released: refused, not re-created.
	if got, err := n.Acquire(ctx, nil, keys, "holder", "h2", time.Minute); err != nil || !got.Revoked {
		t.Fatalf("late acquire of a forced hold: %+v, %v; want revoked", got, err)
	}
	renewed, err = n.Renew(ctx, []node.Renewal{{Keys: keys, Owner: "holder", Hold: "h1", TTL: time.Minute}})
	if err != nil || renewed[0] != node.Revoked {
		t.Fatalf("renewal of a forced hold on a free lock: %v, %v; want refused as released", renewed, err)
	}
	// A free lock: nothing to remove.
	if forced, err := n.ForceRelease(ctx, keys, time.Minute, time.Minute, "notice-2"); err != nil || forced.Removed != 0 || forced.Next != "" {
		t.Fatalf("ForceRelease of a free lock = %+v, %v; want nothing removed", forced, err)
	}
}
