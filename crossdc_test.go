package redlock_test

import (
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/quorumlock/redlock/redlocktest/faultproxy"
)

// farNodes starts len(rtts) nodes, each behind a proxy that delays both
// directions by half its round trip, and returns the cluster and the
// proxies' URLs.
func farNodes(t *testing.T, rtts ...time.Duration) (*redlocktest.Nodes, []string) {
	t.Helper()
	cluster := redlocktest.Start(t, len(rtts))
	urls := make([]string, len(rtts))
	for i, rtt := range rtts {
		proxy, err := faultproxy.New(cluster.Servers[i].Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = proxy.Close() })
		proxy.SetRequestLatency(rtt / 2)
		proxy.SetLatency(rtt / 2)
		urls[i] = "redis://" + proxy.Addr()
	}
	return cluster, urls
}

// With nodes 100 ms away and default options, a Client keeps every node in
// play: the far nodes run as many scripts per cycle as the near ones, no
// call to them fails, and the first Lock after Dial costs about what the
// others do. The breaker used to drop the far nodes for the Client's life
// (their first call, a new connection and two clock reads, passed the node
// timeout, and the breaker's 250 ms ping could not open a connection).
func TestCrossDC_farNodesStayInPlay(t *testing.T) {
	ms := time.Millisecond
	cluster, urls := farNodes(t, 1*ms, 10*ms, 10*ms, 100*ms, 100*ms)
	var errs atomic.Int32
	observer := redlock.Observer{NodeError: func(err *redlock.NodeError) {
		errs.Add(1)
		t.Logf("node error: %v", err)
	}}
	start := time.Now()
	client, err := redlock.Dial(urls, redlock.WithObserver(observer))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = client.Close() }()
	dialed := time.Since(start)
	mutex := client.Mutex("far")
	before := make([]int, len(urls))
	for i := range urls {
		before[i] = int(redlocktest.ScriptCalls(t, cluster.Admin(t, i)))
	}
	// REDLOCK_SOAK=10m runs cycles for that long instead of 40.
	soak, _ := time.ParseDuration(os.Getenv("REDLOCK_SOAK"))
	var took []time.Duration
	for began := time.Now(); len(took) < 40 || time.Since(began) < soak; {
		began := time.Now()
		lease := mustLock(t, testContext(t), mutex)
		took = append(took, time.Since(began))
		mustUnlock(t, lease)
	}
	cycles := len(took)
	time.Sleep(300 * time.Millisecond) // the far nodes' last releases
	calls := make([]float64, len(urls))
	for i := range urls {
		calls[i] = float64(int(redlocktest.ScriptCalls(t, cluster.Admin(t, i)))-before[i]) / float64(cycles)
	}
	first, steady := took[0], slices.Clone(took[1:])
	slices.Sort(steady)
	p50 := steady[len(steady)/2]
	t.Logf("Dial %v, first Lock %v, steady p50 %v over %d cycles; scripts per cycle per node %.2f", dialed, first, p50, cycles, calls)
	for i := 3; i < 5; i++ {
		if calls[i] < calls[0]/2 {
			t.Errorf("node %d (100 ms away) ran %.2f scripts per cycle against %.2f on the nearest: dropped", i, calls[i], calls[0])
		}
	}
	if n := errs.Load(); n > 0 {
		t.Errorf("%d node errors with every node up", n)
	}
	if first > 2*p50+20*ms {
		t.Errorf("first Lock took %v against a steady p50 of %v", first, p50)
	}
}

// Close lets releases to far nodes finish: a process that unlocks and
// closes at once (as `redlock run` does) leaves nothing locked on any
// node, even 150 ms away. A fixed 100 ms grace cut the far release.
func TestCrossDC_closeWaitsForFarReleases(t *testing.T) {
	ms := time.Millisecond
	cluster, urls := farNodes(t, 1*ms, 10*ms, 150*ms)
	// A node timeout that lets the far node's first call through without
	// any warm-up: what is tested is Close alone.
	var closing atomic.Bool
	var cut atomic.Int32
	observer := redlock.Observer{NodeError: func(err *redlock.NodeError) {
		if closing.Load() {
			cut.Add(1)
			t.Logf("during Close: %v", err)
		}
	}}
	client, err := redlock.Dial(urls, redlock.WithNodeTimeout(2*time.Second), redlock.WithObserver(observer))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t)
	mutex := client.Mutex("close-far")
	mustUnlock(t, mustLock(t, ctx, mutex))
	waitFor(t, 5*time.Second, "the far node's first answer", func() bool { return redlock.NodeRTTs(client)[2] > 0 })
	mustUnlock(t, mustLock(t, ctx, mutex))
	time.Sleep(300 * time.Millisecond)     // the far node's last call answered
	mustUnlock(t, mustLock(t, ctx, mutex)) // Unlock returns at a quorum
	t.Logf("Close's grace: %v; round trips %v", redlock.CloseGrace(client), redlock.NodeRTTs(client))
	began := time.Now()
	closing.Store(true)
	if err := client.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("Close took %v", time.Since(began))
	if n := cut.Load(); n > 0 {
		t.Errorf("Close cut %d calls to the far node", n)
	}
	if keys := cluster.Keys(t, 2); slices.ContainsFunc(keys, func(k string) bool { return k == "redlock:{close-far}" }) {
		t.Fatalf("the far node still holds the lock after Close: %v", keys)
	}
}

// A fair Lock on a name the Client never watched does not wait for the
// farthest node's subscription: it costs about one quorum round trip.
func TestCrossDC_fairLockOnANewNameAtQuorumSpeed(t *testing.T) {
	ms := time.Millisecond
	_, urls := farNodes(t, 1*ms, 10*ms, 10*ms, 100*ms, 100*ms)
	client, err := redlock.Dial(urls, redlock.WithFair())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = client.Close() }()
	ctx := testContext(t)
	mustUnlock(t, mustLock(t, ctx, client.Mutex("warm"))) // subscriber connections open
	var took []time.Duration
	for i := range 10 {
		mutex := client.Mutex("new-" + string(rune('a'+i)))
		began := time.Now()
		lease := mustLock(t, testContext(t), mutex)
		took = append(took, time.Since(began))
		mustUnlock(t, lease)
	}
	slices.Sort(took)
	t.Logf("fair Lock on a new name: %v", took)
	if p50 := took[len(took)/2]; p50 > 60*ms {
		t.Fatalf("fair Lock on a new name p50 %v; the quorum's round trip is 10 ms", p50)
	}
}
