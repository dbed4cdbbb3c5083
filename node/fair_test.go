package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/node"
)

// Nodes that received the waiters' enqueues in different orders still
// agree on the head, because the queue is ordered by the ticket each
// waiter chose once, not by arrival: no node grants out of turn, so the
// quorum cannot deadlock on different heads.
func TestAcquireFair_headByTicketWhateverTheArrivalOrder(t *testing.T) {
	cluster := redistest.Start(t, 3)
	clients := cluster.Clients(t)
	ctx := context.Background()
	keys := keysOf("redlock:{q}")
	const ttl, queueTimeout = 10 * time.Second, 10 * time.Second
	tickets := map[string]int64{"w1": 100, "w2": 200, "w3": 300}
	arrival := [][]string{{"w1", "w2", "w3"}, {"w3", "w2", "w1"}, {"w2", "w3", "w1"}}
	nodes := make([]*node.Node, 3)
	for i := range nodes {
		nodes[i] = node.New(i, cluster.Addrs()[i], clients[i])
		if got, err := nodes[i].AcquireFair(ctx, nil, keys, "c", "holder", "h0", ttl, 1, queueTimeout); err != nil || !got.Granted {
			t.Fatalf("node %d: holder: %+v, %v", i, got, err)
		}
		for _, waiter := range arrival[i] {
			got, err := nodes[i].AcquireFair(ctx, nil, keys, "c", waiter, waiter+"-hold", ttl, tickets[waiter], queueTimeout)
			if err != nil || got.Granted || got.PTTL < 0 {
				t.Fatalf("node %d: %s queued: %+v, %v", i, waiter, got, err)
			}
		}
	}
	for i, n := range nodes {
		released, head, err := n.ReleaseFair(ctx, keys, "c", "holder", "h0", 0)
		if err != nil || released != node.LockDeleted || head == "" {
			t.Fatalf("node %d: release = %v, head %q, %v; want deleted naming the head", i, released, head, err)
		}
		// Out of turn: refused, naming the head.
		got, err := n.AcquireFair(ctx, nil, keys, "c", "w3", "w3-hold", ttl, tickets["w3"], queueTimeout)
		if err != nil || got.Granted || !got.Behind {
			t.Fatalf("node %d: w3 out of turn: %+v, %v", i, got, err)
		}
		if got, err := n.AcquireFair(ctx, nil, keys, "c", "w1", "w1-hold", ttl, tickets["w1"], queueTimeout); err != nil || !got.Granted {
			t.Fatalf("node %d: the head w1 refused: %+v, %v", i, got, err)
		}
	}
	for i := range nodes {
		queue, _ := cluster.Admin(t, i).ZRange(ctx, keys.Queue, 0, -1).Result()
		if len(queue) != 2 || queue[0] != "w2" || queue[1] != "w3" {
			t.Fatalf("node %d queue after w1's grant: %v, want [w2 w3]", i, queue)
		}
	}
}

func TestAcquireFair_evictsWaitersWithoutHeartbeat(t *testing.T) {
	cluster := redistest.Start(t, 1)
	n := node.New(0, cluster.Addrs()[0], cluster.Clients(t)[0])
	ctx := context.Background()
	keys := keysOf("l")
	if _, err := n.AcquireFair(ctx, nil, keys, "c", "holder", "h", time.Minute, 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := n.AcquireFair(ctx, nil, keys, "c", "ghost", "g", time.Minute, 2, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if _, _, err := n.ReleaseFair(ctx, keys, "c", "holder", "h", 0); err != nil {
		t.Fatal(err)
	}
	if got, _ := n.AcquireFair(ctx, nil, keys, "c", "late", "l1", time.Minute, 3, time.Minute); got.Granted {
		t.Fatal("granted past a waiter whose heartbeat is still fresh")
	}
	time.Sleep(100 * time.Millisecond)
	if got, err := n.AcquireFair(ctx, nil, keys, "c", "late", "l1", time.Minute, 3, time.Minute); err != nil || !got.Granted {
		t.Fatalf("after the ghost's deadline: %+v, %v; want granted", got, err)
	}
	if err := n.Leave(ctx, keys, "c", "late", "x"); err != nil {
		t.Fatal(err)
	}
}

func TestRaiseFence_neverLowers(t *testing.T) {
	cluster := redistest.Start(t, 1)
	n := node.New(0, cluster.Addrs()[0], cluster.Clients(t)[0])
	ctx := context.Background()
	for _, step := range []struct{ token, want uint64 }{{5, 5}, {3, 5}, {9, 9}} {
		got, err := n.RaiseFence(ctx, "fence", step.token)
		if err != nil || got != step.want {
			t.Fatalf("RaiseFence(%d) = %d, %v; want %d", step.token, got, err, step.want)
		}
	}
}
