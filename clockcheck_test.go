package redlock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/redlocktest"
)

// The clock check (on by default): a majority of nodes whose clocks run
// ten times fast do not count; TryLock fails with ErrNoQuorum naming the
// fast clocks, the observer hears of each node once, and nothing is left
// locked. With the check off the same nodes grant.
func TestClockCheck_fastMajority(t *testing.T) {
	libfaketime := redlocktest.RequireFaketime(t)
	cluster := redlocktest.Start(t, 3)
	for _, i := range []int{1, 2} {
		cluster.Servers[i].SetEnv(redlocktest.FastClock(libfaketime, 10))
		if err := cluster.Servers[i].Restart(false); err != nil {
			t.Fatal(err)
		}
		if err := node.Declare(context.Background(), cluster.Admin(t, i), "redlock:"); err != nil {
			t.Fatal(err)
		}
	}
	ctx := testContext(t)
	var mu sync.Mutex
	events := map[int]int{}
	observer := redlock.WithObserver(redlock.Observer{Quarantined: func(e redlock.QuarantineEvent) {
		mu.Lock()
		defer mu.Unlock()
		events[e.Node]++
	}})
	c := newClient(t, cluster, observer)
	for range 3 {
		_, err := c.Mutex("fast").TryLock(ctx)
		if !errors.Is(err, redlock.ErrNoQuorum) || !errors.Is(err, redlock.ErrQuarantined) ||
			strings.Count(err.Error(), "clock runs at least") != 2 {
			t.Fatalf("TryLock with 2 of 3 clocks 10x fast: %v; want ErrNoQuorum naming both clocks", err)
		}
	}
	mu.Lock()
	if events[1] != 1 || events[2] != 1 || events[0] != 0 {
		t.Errorf("quarantine events per node %v; want one each for nodes 1 and 2", events)
	}
	mu.Unlock()
	for i := range 3 {
		if n, err := cluster.Admin(t, i).Exists(ctx, "redlock:{fast}").Result(); err != nil || n != 0 {
			t.Fatalf("node %d: the lock key is left behind (%d, %v)", i, n, err)
		}
	}
	unchecked := newClient(t, cluster, redlock.WithClockCheck(false))
	lease, err := unchecked.Mutex("fast").TryLock(ctx)
	if err != nil {
		t.Fatalf("TryLock with the clock check off: %v", err)
	}
	mustUnlock(t, lease)
}
