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

// The restart guard against what replication does to a node's
// replication id, which the marker is stamped with (scripts/guard.lua).

// A declared node whose replication id changes because its first replica
// attaches (Redis draws a new one with the backlog) lost nothing: it
// keeps voting.
func TestGuard_firstReplicaKeepsTheNodeVoting(t *testing.T) {
	n, cluster := oneNode(t)
	ctx := context.Background()
	admin := cluster.Admin(t, 0)
	keys := keysOf("redlock:{replica}")
	keys.Guard = time.Minute
	if got, err := n.Acquire(ctx, nil, keys, "o", "h1", time.Minute); err != nil || !got.Granted {
		t.Fatalf("Acquire on the declared node = %+v, %v", got, err)
	}
	before := replID(t, admin)
	redlocktest.StartReplica(t, admin)
	if after := replID(t, admin); after == before {
		t.Fatalf("replication id %s unchanged by the first replica: the test no longer shows the case", after)
	}
	if got, err := n.Acquire(ctx, nil, keys, "o", "h2", time.Minute); err != nil || !got.Granted {
		t.Fatalf("Acquire after the first replica attached = %+v, %v; want granted", got, err)
	}
}

// A replica promoted by its primary's FAILOVER ... FORCE (no command runs
// on the promoted node but its old primary's PSYNC) after it missed a
// grant: it must not vote until the grant has surely ended.
func TestGuard_forcedFailoverToAReplicaThatMissedAGrant(t *testing.T) {
	_, cluster := oneNode(t)
	ctx := context.Background()
	admin := cluster.Admin(t, 0)
	primary := node.New(0, cluster.Addrs()[0], admin)
	t.Cleanup(primary.Wait)
	keys := keysOf("redlock:{forced}")
	keys.Guard = 5 * time.Second
	if got, err := primary.Acquire(ctx, nil, keys, "warm", "h0", time.Second); err != nil || !got.Granted {
		t.Fatalf("Acquire = %+v, %v", got, err) // the marker, stamped, reaches the replica
	}
	replica, link, replicaAdmin := redlocktest.StartReplica(t, admin)
	time.Sleep(keys.Guard + 500*time.Millisecond) // the replica is up longer than the guard
	link.Cut()
	if got, err := primary.Acquire(ctx, nil, keys, "a", "h1", time.Minute); err != nil || !got.Granted {
		t.Fatalf("Acquire by a = %+v, %v", got, err)
	}
	err := admin.Do(ctx, "FAILOVER", "TO", "127.0.0.1", replica.Port(), "TIMEOUT", 300, "FORCE").Err()
	if err != nil {
		t.Fatal(err)
	}
	waitRole(t, replicaAdmin, "role:master")
	promoted := node.New(1, replica.Addr(), replicaAdmin)
	t.Cleanup(promoted.Wait)
	got, err := promoted.Acquire(ctx, nil, keys, "b", "h2", time.Minute)
	var q *node.Quarantine
	if !errors.As(err, &q) || q.Why != node.WhyFailover {
		t.Fatalf("Acquire by b on the promoted replica = %+v, %v; want the failover rule", got, err)
	}
}

func waitRole(t *testing.T, admin *redis.Client, role string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		info, _ := admin.Info(context.Background(), "replication").Result()
		if strings.Contains(info, role) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not %s: %s", role, info)
		}
	}
}

// A restart with an append-only file is judged as one without: the node
// votes again at start + guard, not never, and the refusal names why.
func TestGuard_appendOnlyRestartVotesAfterTheGuard(t *testing.T) {
	cluster := redlocktest.Start(t, 1, "--appendonly", "yes", "--appendfsync", "everysec")
	n := node.New(0, cluster.Addrs()[0], cluster.Clients(t)[0])
	t.Cleanup(n.Wait)
	ctx := context.Background()
	keys := keysOf("redlock:{unsure}")
	keys.Guard = 2 * time.Second
	if got, err := n.Acquire(ctx, nil, keys, "a", "h1", 100*time.Millisecond); err != nil || !got.Granted {
		t.Fatalf("Acquire by a = %+v, %v", got, err)
	}
	if err := cluster.Servers[0].Restart(true); err != nil {
		t.Fatal(err)
	}
	q := quarantineOf(t, n, keys, "h2")
	if q.Why != node.WhyRestarted || !strings.Contains(q.Error(), "switched off at run time") {
		t.Fatalf("after the restart: %s; want the restart rule, naming the switched-off file", q)
	}
	// Unjudged, the restart is dated from the start as each call reads it
	// (to the second): the vote comes at q.Until or up to a second later.
	for {
		got, err := n.Acquire(ctx, nil, keys, "o", "h-wait", time.Minute)
		if err == nil && got.Granted {
			within(t, "granted at", time.Now(), q.Until.Add(500*time.Millisecond), 700*time.Millisecond)
			return
		}
		if !errors.Is(err, node.ErrQuarantined) || time.Now().After(q.Until.Add(2*time.Second)) {
			t.Fatalf("Acquire at %v (until %v) = %+v, %v", time.Now(), q.Until, got, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
