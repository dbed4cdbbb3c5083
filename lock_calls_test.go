package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest"
)

// A caller that cancels Lock's ctx as soon as Lock returns (defer cancel(),
// or a timeout it no longer needs) does not cut the acquire calls still
// out to the slower nodes: cut, their fate would be unknown and each would
// cost a release with a tombstone and a leave. An uncontended cycle stays
// one acquire and one release per node.
func TestLock_cancelAfterLockCostsNoExtraCalls(t *testing.T) {
	cluster := redlocktest.Start(t, 5)
	c := newClient(t, cluster)
	m := c.Mutex("cancelled")
	mustUnlock(t, mustLock(t, testContext(t), m)) // scripts loaded, clock probed
	time.Sleep(50 * time.Millisecond)
	var calls int64
	for i := range cluster.Servers {
		calls -= redlocktest.ScriptCalls(t, cluster.Admin(t, i))
	}
	const cycles = 300
	for range cycles {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		lease, err := m.Lock(ctx)
		cancel()
		if err != nil {
			t.Fatalf("Lock: %v", err)
		}
		mustUnlock(t, lease)
	}
	time.Sleep(100 * time.Millisecond) // the last stragglers
	for i := range cluster.Servers {
		calls += redlocktest.ScriptCalls(t, cluster.Admin(t, i))
	}
	perCycle := float64(calls) / cycles
	t.Logf("%.2f script calls per cycle on 5 nodes", perCycle)
	if perCycle > 10.1 {
		t.Errorf("%.2f script calls per Lock+Unlock on 5 nodes; want 10 (one acquire and one release per node)", perCycle)
	}
}

// With a majority of nodes silent (paused) and a node timeout far longer
// than the caller's deadline, TryLock and Lock return at the deadline: the
// calls to the silent nodes keep the caller's deadline, so nothing waits
// for the node timeout.
func TestLock_silentMajorityReturnsAtTheCallersDeadline(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	c, err := redlock.Dial(cluster.URLs(), redlock.WithNodeTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	m := c.Mutex("deadline")
	mustUnlock(t, mustLock(t, testContext(t), m)) // connections, scripts, clock
	time.Sleep(300 * time.Millisecond)            // no call still out when the nodes pause
	for _, i := range []int{1, 2} {
		if err := cluster.Servers[i].Pause(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cluster.Servers[i].Resume() })
	}
	for _, try := range []bool{true, false} {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		start := time.Now()
		if try {
			_, err = m.TryLock(ctx)
		} else {
			_, err = m.Lock(ctx)
		}
		cancel()
		took := time.Since(start)
		if err == nil {
			t.Fatalf("(TryLock: %v) got the lock with 2 of 3 nodes paused", try)
		}
		if took > 600*time.Millisecond {
			t.Errorf("(TryLock: %v) returned %v after a 100 ms deadline (node timeout 2 s): %v", try, took.Round(time.Millisecond), err)
		}
	}
}
