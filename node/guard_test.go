package node_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/redis/go-redis/v9"
)

// FLUSHALL: every voting script refuses with the node's quarantine and
// changes nothing but the new marker; with the guard off it grants.
func TestGuard_flushedNodeRefusesToVote(t *testing.T) {
	n, cluster := oneNode(t)
	ctx := context.Background()
	admin := cluster.Admin(t, 0)
	keys := keysOf("redlock:{g}")
	keys.Guard = time.Minute
	if got, err := n.Acquire(ctx, nil, keys, "o", "h1", time.Minute); err != nil || !got.Granted {
		t.Fatalf("Acquire on a marked node = %+v, %v", got, err)
	}
	flushed := time.Now()
	if err := admin.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	_, err := n.Acquire(ctx, nil, keys, "other", "h2", time.Minute)
	var q *node.Quarantine
	if !errors.As(err, &q) || !errors.Is(err, node.ErrQuarantined) || !node.Answered(err) || node.Unknown(err) {
		t.Fatalf("Acquire after FLUSHALL = %v; want an answered *Quarantine", err)
	}
	if q.Since.Before(flushed.Add(-time.Second)) || q.Until.Sub(q.Since) != time.Minute {
		t.Fatalf("quarantine %v..%v; want since the flush, for the guard", q.Since, q.Until)
	}
	if exists, _ := admin.Exists(ctx, keys.Lock).Result(); exists != 0 {
		t.Fatal("a refused acquire took the lock")
	}
	w := node.Waiter{Ticket: 1, Lifetime: time.Minute, Channel: "c"}
	if _, err := n.AcquireQueued(ctx, nil, keys, "other", "h3", time.Minute, w, time.Second); !errors.Is(err, node.ErrQuarantined) {
		t.Fatalf("AcquireQueued after FLUSHALL = %v", err)
	}
	if _, err := n.ReadFence(ctx, keys); !errors.Is(err, node.ErrQuarantined) {
		t.Fatalf("ReadFence after FLUSHALL = %v", err)
	}
	// A renewal puts the hold back but its answer does not count.
	if _, err := n.Renew(ctx, []node.Renewal{{Keys: keys, Owner: "o", Hold: "h1", TTL: time.Minute}}); !errors.Is(err, node.ErrQuarantined) {
		t.Fatalf("Renew after FLUSHALL = %v", err)
	}
	if owner, _ := admin.HGet(ctx, keys.Lock, "owner").Result(); owner != "o" {
		t.Fatalf("owner after a quarantined renewal = %q; want the hold put back", owner)
	}
	keys.Guard = 0
	if got, err := n.Acquire(ctx, nil, keys, "o", "h4", time.Minute); err != nil || !got.Granted {
		t.Fatalf("Acquire with the guard off = %+v, %v", got, err)
	}
}

// On a Redis Cluster node the marker is per slot (a script may only touch
// one slot): no CROSSSLOT error, and the slot's marker is the one checked.
func TestGuard_clusterNodeMarkerPerSlot(t *testing.T) {
	cluster := redlocktest.Start(t, 1, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
	ctx := context.Background()
	admin := cluster.Admin(t, 0)
	if err := admin.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", "0", "16383").Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, _ := admin.ClusterInfo(ctx).Result()
		if strings.Contains(info, "cluster_state:ok") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster not ok: %s", info)
		}
		time.Sleep(50 * time.Millisecond)
	}
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs(), MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	n := node.New(0, cluster.Addrs()[0], client)
	t.Cleanup(n.Wait)
	keys := keysOf("redlock:{orders}")
	keys.Guard = time.Minute
	if _, err := n.Acquire(ctx, nil, keys, "o", "h1", time.Minute); !errors.Is(err, node.ErrQuarantined) {
		t.Fatalf("first Acquire in a slot = %v; want ErrQuarantined (the slot's marker is new)", err)
	}
	markers, err := admin.Keys(ctx, "redlock:node:*").Result()
	if err != nil || len(markers) != 1 {
		t.Fatalf("markers %v, %v; want one, for the lock's slot", markers, err)
	}
	slot, err := admin.ClusterKeySlot(ctx, markers[0]).Result()
	lockSlot, err2 := admin.ClusterKeySlot(ctx, keys.Lock).Result()
	if err != nil || err2 != nil || slot != lockSlot {
		t.Fatalf("marker %s in slot %d, lock in %d (%v, %v)", markers[0], slot, lockSlot, err, err2)
	}
	// As `redlock init` declares a plain node new, for this process.
	if err := admin.Set(ctx, markers[0], "0 "+runID(t, admin), 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := n.Acquire(ctx, nil, keys, "o", "h1", time.Minute); err != nil || !got.Granted {
		t.Fatalf("Acquire with the slot declared = %+v, %v", got, err)
	}
	// The scripts that hand the lock on check the slot's marker too.
	if got, err := n.AcquireQueued(ctx, nil, keys, "w", "w.1", time.Minute, fairWaiter(2, time.Minute), time.Minute); err != nil || got.Granted {
		t.Fatalf("a waiter's AcquireQueued = %+v, %v; want queued", got, err)
	}
	if _, head, err := n.Release(ctx, keys, "o", "h1", 0, time.Minute); err != nil || head != node.Fingerprint("w") {
		t.Fatalf("Release = %q, %v; want handed to the waiter", head, err)
	}
	if err := n.Leave(ctx, nil, keys, "w", "w", "notice", time.Minute); err != nil {
		t.Fatalf("Leave: %v", err)
	}
	if forced, err := n.ForceRelease(ctx, keys, time.Minute, time.Minute, "forced"); err != nil || forced.Removed != 0 {
		t.Fatalf("ForceRelease = %+v, %v; want nothing to remove", forced, err)
	}
}
