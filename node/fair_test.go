package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/node"
	"github.com/redis/go-redis/v9"
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

// The undo of a failed attempt puts the waiter back in the queue with its
// ticket: the grant had taken it off this node's queue, and without its
// place the nodes would name different heads. A plain release does not.
func TestReleaseFairKeepingPlace_putsTheWaiterBack(t *testing.T) {
	cluster := redistest.Start(t, 1)
	n := node.New(0, cluster.Addrs()[0], cluster.Clients(t)[0])
	admin := cluster.Admin(t, 0)
	ctx := context.Background()
	keys := keysOf("redlock:{k}")
	const ttl, queueTimeout = time.Minute, time.Minute
	// w1 (ticket 100) is granted; w2 (ticket 200) queues behind it.
	if got, err := n.AcquireFair(ctx, nil, keys, "c", "w1", "w1-a", ttl, 100, queueTimeout); err != nil || !got.Granted {
		t.Fatalf("w1: %+v, %v", got, err)
	}
	if got, err := n.AcquireFair(ctx, nil, keys, "c", "w2", "w2-a", ttl, 200, queueTimeout); err != nil || got.Granted {
		t.Fatalf("w2: %+v, %v", got, err)
	}
	// w1's attempt failed elsewhere: undone here, w1 keeps its place.
	released, head, err := n.ReleaseFairKeepingPlace(ctx, keys, "c", "w1", "w1-a", 100, queueTimeout)
	if err != nil || released != node.LockDeleted || head != fingerprint(t, admin, "w1") {
		t.Fatalf("undo = %v, head %q, %v; want deleted, naming w1 as the head", released, head, err)
	}
	queue, err := admin.ZRangeWithScores(ctx, keys.Queue, 0, -1).Result()
	if err != nil || len(queue) != 2 || queue[0].Member != "w1" || queue[0].Score != 100 || queue[1].Member != "w2" {
		t.Fatalf("queue after the undo: %v, %v; want w1 (100) then w2", queue, err)
	}
	if got, err := n.AcquireFair(ctx, nil, keys, "c", "w2", "w2-b", ttl, 200, queueTimeout); err != nil || got.Granted || !got.Behind {
		t.Fatalf("w2 after the undo: %+v, %v; want refused behind w1", got, err)
	}
	// A plain release of a granted hold leaves the queue as it is.
	if got, err := n.AcquireFair(ctx, nil, keys, "c", "w1", "w1-b", ttl, 100, queueTimeout); err != nil || !got.Granted {
		t.Fatalf("w1 again: %+v, %v", got, err)
	}
	if _, _, err := n.ReleaseFair(ctx, keys, "c", "w1", "w1-b", 0); err != nil {
		t.Fatal(err)
	}
	if queue, _ := admin.ZRange(ctx, keys.Queue, 0, -1).Result(); len(queue) != 1 || queue[0] != "w2" {
		t.Fatalf("queue after w1's release: %v, want [w2]", queue)
	}
}

func fingerprint(t *testing.T, admin interface {
	Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd
}, owner string) string {
	t.Helper()
	got, err := admin.Eval(context.Background(), "return string.sub(redis.sha1hex(ARGV[1]), 1, 16)", nil, owner).Text()
	if err != nil {
		t.Fatal(err)
	}
	return got
}
