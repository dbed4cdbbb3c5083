package fair_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/redlock/fair"
	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/redlocktest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestTickets_uniqueAndIncreasing(t *testing.T) {
	var tickets fair.Tickets
	const goroutines, each = 8, 1000
	seen := make(chan int64, goroutines*each)
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			last := int64(0)
			for range each {
				ticket := tickets.Next(time.Now())
				if ticket <= last {
					t.Errorf("ticket %d after %d in one goroutine", ticket, last)
				}
				last = ticket
				seen <- ticket
			}
		})
	}
	wg.Wait()
	close(seen)
	unique := make(map[int64]bool)
	for ticket := range seen {
		if unique[ticket] {
			t.Fatalf("ticket %d issued twice", ticket)
		}
		unique[ticket] = true
	}
	if now := time.Now(); tickets.Next(now) < now.UnixMicro() {
		t.Fatal("tickets fell behind the clock")
	}
}

func TestForHead_wakesOnlyTheNamedHead(t *testing.T) {
	accept := fair.ForHead("owner-a")
	cases := map[string]bool{
		"hold-1 " + node.Fingerprint("owner-a"): true,
		"hold-1 " + node.Fingerprint("owner-b"): false,
		"hold-1 ":                               true, // no one waits: anyone may try
		"hold-1":                                true,
	}
	for payload, want := range cases {
		if got := accept(payload); got != want {
			t.Errorf("accept(%q) = %v, want %v", payload, got, want)
		}
	}
	if len(node.Fingerprint("x")) != 16 || node.Fingerprint("x") == node.Fingerprint("y") {
		t.Fatal("fingerprints must be 16 hex digits and tell owners apart")
	}
}

// A waiter queued on every node leaves every queue; a node that does not
// answer is reported, not waited for past the node timeout.
func TestQueue_leave(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	nodes := nodesOf(t, cluster)
	var mu sync.Mutex
	failed := map[int]bool{}
	q := &fair.Queue{
		Nodes: nodes, Channel: "redlock:{q}:released",
		Keys: node.Keys{Lock: "redlock:{q}", Gone: "redlock:{q}:gone", Fence: "redlock:{q}:fence",
			Queue: "redlock:{q}:queue", Alive: "redlock:{q}:alive", Wake: "redlock:{q}:wake", Marker: "redlock:node"},
		TTL: time.Second, QueueTimeout: time.Minute, NodeTimeout: 300 * time.Millisecond,
		OnError: func(i int, err error) {
			mu.Lock()
			defer mu.Unlock()
			failed[i] = true
		},
	}
	ctx := context.Background()
	for i := range nodes {
		if got, err := q.Acquire(ctx, nil, i, "holder", "h0", 1); err != nil || !got.Granted {
			t.Fatalf("holder on node %d: %+v, %v", i, got, err)
		}
		if got, err := q.Acquire(ctx, nil, i, "waiter", "w1", 2); err != nil || got.Granted {
			t.Fatalf("waiter on node %d: %+v, %v", i, got, err)
		}
	}
	if err := cluster.Servers[2].Kill(); err != nil {
		t.Fatal(err)
	}
	q.Leave(ctx, []int{0, 1, 2}, "waiter", "w1")
	for _, i := range []int{0, 1} {
		if n, _ := cluster.Admin(t, i).ZCard(ctx, q.Keys.Queue).Result(); n != 0 {
			t.Fatalf("node %d: %d waiters left in the queue", i, n)
		}
	}
	if !failed[2] || failed[0] || failed[1] {
		t.Fatalf("reported failures %v, want node 2 only", failed)
	}
}

// A process whose clock is 5 s behind still tells the nodes' time.
func TestClock_measuresTheNodesTime(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	nodes := nodesOf(t, cluster)
	q := &fair.Queue{Nodes: nodes, Keys: node.Keys{Fence: "f", Marker: "redlock:node", Guard: time.Minute}, NodeTimeout: time.Second}
	behind := fair.Clock{Local: func() time.Time { return time.Now().Add(-5 * time.Second) }}
	if got := behind.Now(context.Background(), q); time.Since(got).Abs() > 100*time.Millisecond {
		t.Fatalf("Clock.Now is %v off the nodes' time", time.Since(got))
	}
	if err := cluster.Servers[0].Kill(); err != nil {
		t.Fatal(err)
	}
	var none fair.Clock // every node down: the local clock, not a hang
	for _, i := range []int{1, 2} {
		if err := cluster.Servers[i].Kill(); err != nil {
			t.Fatal(err)
		}
	}
	if got := none.Now(context.Background(), q); time.Since(got).Abs() > time.Second {
		t.Fatalf("with no node answering, Clock.Now is %v off the local clock", time.Since(got))
	}
}

// One reading held up on its way out (the clock read, then a stall before
// the call is sent) would put the offset off by half the stall; the best
// of the readings is kept.
func TestClock_aStalledReadingDoesNotSkewTheOffset(t *testing.T) {
	cluster := redlocktest.Start(t, 1)
	q := &fair.Queue{Nodes: nodesOf(t, cluster), Keys: node.Keys{Fence: "f", Marker: "redlock:node"}, NodeTimeout: time.Second}
	const stall = 60 * time.Millisecond
	var calls atomic.Int64
	clock := fair.Clock{Local: func() time.Time {
		if calls.Add(1) == 2 { // the first reading's send (Now reads the clock first)
			return time.Now().Add(-stall)
		}
		return time.Now()
	}}
	if off := time.Since(clock.Now(context.Background(), q)).Abs(); off > stall/6 {
		t.Fatalf("Clock.Now is %v off the node's time after one stalled reading", off)
	}
}

// nodesOf wraps each of the cluster's nodes, stopped at cleanup.
func nodesOf(t *testing.T, cluster *redlocktest.Nodes) []*node.Node {
	t.Helper()
	clients := cluster.Clients(t)
	nodes := make([]*node.Node, len(clients))
	for i, client := range clients {
		nodes[i] = node.New(i, cluster.Addrs()[i], client)
		t.Cleanup(nodes[i].Wait) // stops its prober, if a node went down
	}
	return nodes
}
