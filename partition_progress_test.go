package redlock_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/quorumlock/redlock/redlocktest/faultproxy"
)

// Waiters cut off from a quorum of the nodes must not keep a waiter that
// reaches a quorum from a free lock: once a waiter's attempts have reached
// fewer than a quorum for longer than the queue timeout it gives up its
// places (fair queue, waiting writer) and backs off. The one that can win
// then gets the lock within twice the queue timeout.
const (
	cutoffNodeTimeout  = 200 * time.Millisecond
	cutoffQueueTimeout = time.Second
	// cutoffHeadStart is how long the cut-off waiters wait before the
	// one that can win calls Lock.
	cutoffHeadStart = 200 * time.Millisecond
)

// cutoffClient is a Client with a fault proxy of its own in front of every
// node: cutting its links cuts no other Client's.
type cutoffClient struct {
	*redlock.Client
	proxies []*faultproxy.Proxy
}

// cutoffNewClient makes a cutoffClient over cluster's servers with the
// options of these tests and opts; everything is closed at cleanup.
func cutoffNewClient(t *testing.T, cluster *redlocktest.Nodes, opts ...redlock.Option) *cutoffClient {
	t.Helper()
	all := append([]redlock.Option{
		redlock.WithNodeTimeout(cutoffNodeTimeout),
		redlock.WithQueueTimeout(cutoffQueueTimeout),
	}, opts...)
	c := &cutoffClient{}
	c.Client, c.proxies = ownLinksClient(t, cluster, all...)
	return c
}

// reachOnly cuts the Client's links to every node but those given.
func (c *cutoffClient) reachOnly(nodes ...int) {
	for i, proxy := range c.proxies {
		reach := false
		for _, n := range nodes {
			reach = reach || n == i
		}
		if !reach {
			proxy.Cut()
		}
	}
}

// cutoffWarmUp takes and releases a lock of its own with each Client while
// every link is up: scripts loaded, clocks probed.
func cutoffWarmUp(t *testing.T, clients ...*cutoffClient) {
	t.Helper()
	ctx := testContext(t)
	for i, c := range clients {
		mustUnlock(t, mustLock(t, ctx, c.Mutex(fmt.Sprintf("%s-warm-%d", t.Name(), i))))
	}
}

// cutoffWaiter runs lock in a goroutine with a long ctx, as a waiter that
// cannot win (it reaches fewer than a quorum). The returned function
// cancels it and waits until the goroutine ended; it also runs at cleanup.
func cutoffWaiter(t *testing.T, who string, lock func(context.Context) (*redlock.Lease, error)) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	done := make(chan struct{})
	go func() {
		defer close(done)
		lease, err := lock(ctx)
		if err == nil {
			t.Errorf("%s, cut off from a quorum, got a lease", who)
			_ = lease.Unlock(context.Background())
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Errorf("%s's Lock did not return within 5 s of its ctx's cancel", who)
				<-done
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// cutoffWaitQueued waits until node i's queue of name holds someone: the
// cut-off waiter that reaches it has its place there.
func cutoffWaitQueued(t *testing.T, cluster *redlocktest.Nodes, i int, name string) {
	t.Helper()
	admin := cluster.Admin(t, i)
	waitFor(t, 2*time.Second, fmt.Sprintf("a waiter queued on node %d (set-up)", i), func() bool {
		n, err := admin.ZCard(context.Background(), "redlock:{"+name+"}:queue").Result()
		return err == nil && n > 0
	})
}

// cutoffMustWin calls lock (the waiter that reaches a quorum, on a lock
// nobody holds) with a deadline a little past twice the queue timeout, and
// fails t unless it returned a valid lease within twice the queue timeout.
// It releases the lease.
func cutoffMustWin(t *testing.T, what string, lock func(context.Context) (*redlock.Lease, error)) {
	t.Helper()
	bound := 2 * cutoffQueueTimeout
	ctx, cancel := context.WithTimeout(context.Background(), bound+500*time.Millisecond)
	defer cancel()
	began := time.Now()
	lease, err := lock(ctx)
	took := time.Since(began)
	if err != nil {
		t.Fatalf("%s on a free lock failed after %v: %v; want a lease within 2 × QueueTimeout = %v: the waiters cut off from a quorum keep it from winning",
			what, took.Round(time.Millisecond), err, bound)
	}
	defer mustUnlock(t, lease)
	t.Logf("%s got the lease after %v", what, took.Round(time.Millisecond))
	if took > bound {
		t.Errorf("%s got the lease after %v, want within 2 × QueueTimeout = %v (err %v)", what, took.Round(time.Millisecond), bound, err)
	}
	if left := time.Until(lease.Until()); left <= 0 {
		t.Errorf("%s's lease already ended: Until is %v ago", what, -left)
	}
}

// cutoffSplit: W1 reaches node 0 only, W2 node 1 only, each waiting in
// wait (its place at the head of the one node's queue); V reaches all
// three and must win the free lock with win within the bound. opts are
// every Client's.
func cutoffSplit(t *testing.T, name, what string, wait, win func(*cutoffClient) func(context.Context) (*redlock.Lease, error),
	opts ...redlock.Option) {
	t.Helper()
	cluster := redlocktest.Start(t, 3)
	w1 := cutoffNewClient(t, cluster, opts...)
	w2 := cutoffNewClient(t, cluster, opts...)
	v := cutoffNewClient(t, cluster, opts...)
	cutoffWarmUp(t, w1, w2, v)
	w1.reachOnly(0)
	w2.reachOnly(1)
	started := time.Now()
	stop1 := cutoffWaiter(t, "W1 (node 0 only)", wait(w1))
	stop2 := cutoffWaiter(t, "W2 (node 1 only)", wait(w2))
	cutoffWaitQueued(t, cluster, 0, name)
	cutoffWaitQueued(t, cluster, 1, name)
	time.Sleep(time.Until(started.Add(cutoffHeadStart)))
	cutoffMustWin(t, what, win(v))
	stop1()
	stop2()
}

// Fair mode: W1 reaches node 0 only, W2 node 1 only; each waits in Lock and
// keeps its place at the head of the queue of the one node it reaches. V
// reaches all three and wants the free lock: it heads the queue on node 2
// alone, one vote of the two it needs, for as long as W1 and W2 wait,
// unless they give up their places once cut off for the queue timeout.
func TestPartition_fairWaitersCutOffDoNotStallOneThatCanWin(t *testing.T) {
	const name = "partition-fair-split"
	lock := func(c *cutoffClient) func(context.Context) (*redlock.Lease, error) { return c.Mutex(name).Lock }
	cutoffSplit(t, name, "V's fair Lock", lock, lock, redlock.WithFair())
}

// Fair mode, node 2 down: W1 reaches node 0 only and waits in Lock. V
// reaches nodes 0 and 1 (a quorum) and wants the free lock: it heads the
// queue on node 1 alone while W1 keeps its place on node 0.
func TestPartition_fairWaiterCutOffWithANodeDown(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	const name = "partition-fair-node-down"
	w1 := cutoffNewClient(t, cluster, redlock.WithFair())
	v := cutoffNewClient(t, cluster, redlock.WithFair())
	cutoffWarmUp(t, w1, v)
	cluster.Kill(t, 2)
	w1.reachOnly(0)
	started := time.Now()
	stop := cutoffWaiter(t, "W1 (node 0 only)", w1.Mutex(name).Lock)
	cutoffWaitQueued(t, cluster, 0, name)
	time.Sleep(time.Until(started.Add(cutoffHeadStart)))
	cutoffMustWin(t, "V's fair Lock (node 2 down)", v.Mutex(name).Lock)
	stop()
}

// RWMutex, plain mode: writer W1 reaches node 0 only, W2 node 1 only; both
// wait in Lock, and a waiting writer refuses new readers on its node. V
// reaches all three and wants a read hold on the free lock: only node 2
// lets it in, unless the writers give up their places once cut off for
// the queue timeout.
func TestPartition_readersNotShutOutByCutOffWriters(t *testing.T) {
	const name = "partition-rw-split"
	write := func(c *cutoffClient) func(context.Context) (*redlock.Lease, error) { return c.RWMutex(name).Lock }
	read := func(c *cutoffClient) func(context.Context) (*redlock.Lease, error) { return c.RWMutex(name).RLock }
	cutoffSplit(t, name, "V's RLock", write, read)
}

// The control of the fair test above, in plain mode: the same cut-off
// waiters keep no one from the free lock (passes before the fix too).
func TestPartition_plainWaitersCutOffDoNotStallOneThatCanWin(t *testing.T) {
	const name = "partition-plain-split"
	lock := func(c *cutoffClient) func(context.Context) (*redlock.Lease, error) { return c.Mutex(name).Lock }
	cutoffSplit(t, name, "V's plain Lock", lock, lock)
}
