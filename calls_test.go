package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/quorumlock/redlock/internal/redistest"
)

// A caller that cancels Lock's ctx as soon as Lock returns (defer cancel(),
// or a timeout it no longer needs) does not cut the acquire calls still
// out to the slower nodes: cut, their fate would be unknown and each would
// cost a release with a tombstone and a leave. An uncontended cycle stays
// one acquire and one release per node.
func TestLock_cancelAfterLockCostsNoExtraCalls(t *testing.T) {
	cluster := redistest.Start(t, 5)
	c := newClient(t, cluster)
	m := c.Mutex("cancelled")
	mustUnlock(t, mustLock(t, testContext(t), m)) // scripts loaded, clock probed
	time.Sleep(50 * time.Millisecond)
	for i := range cluster.Nodes {
		if err := cluster.Admin(t, i).ConfigResetStat(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
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
	var calls int64
	for i := range cluster.Nodes {
		calls += scriptCalls(t, cluster.Admin(t, i))
	}
	perCycle := float64(calls) / cycles
	t.Logf("%.2f script calls per cycle on 5 nodes", perCycle)
	if perCycle > 10.1 {
		t.Errorf("%.2f script calls per Lock+Unlock on 5 nodes; want 10 (one acquire and one release per node)", perCycle)
	}
}
