package chaos

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest/workload"
)

// The safe runs: faults the library's assumptions allow. Each asserts no
// checker violation, no lost update and enough critical sections.

// Partitions seen by each client on its own: first a split where A and B
// each reach a different majority (they share node 2 only), then healed,
// then a rolling cut of a random minority per client.
func TestPartitions(t *testing.T) {
	c := newCluster(t, setup{clients: 3, nodeTimeout: 100 * time.Millisecond,
		options: []redlock.Option{redlock.WithTTL(800 * time.Millisecond)}})
	r := c.run(6500*time.Millisecond, workload.Config{}, func(ctx context.Context) {
		if !sleep(ctx, 300*time.Millisecond) {
			return
		}
		c.reach(0, 0, 1, 2) // A
		c.reach(1, 2, 3, 4) // B
		c.reach(2, 0, 2, 4) // C
		if !sleep(ctx, 2*time.Second) {
			return
		}
		c.healAll()
		if !sleep(ctx, 500*time.Millisecond) {
			return
		}
		rolling, stop := context.WithTimeout(ctx, 2500*time.Millisecond)
		defer stop()
		every(rolling, 250*time.Millisecond, func(int) {
			for k := range c.clients {
				cut := pick(2)
				var reachable []int
				for i := range nodeCount {
					if i != cut[0] && i != cut[1] {
						reachable = append(reachable, i)
					}
				}
				c.reach(k, reachable...)
			}
		})
		c.healAll()
	})
	c.requireSafe(r, 100)
}

// Latency close to the TTL on some links, with a node timeout well above
// it so that the replies do arrive: a round that outlasts the validity
// window must fail, not grant. Three clients run the workload: A's links
// to a majority cycle through latencies around the TTL, B has 300 ms on
// three links, C is clean. A fourth client, D, sees the same latencies as
// A and makes one TryLock per latency on a name of its own, uncontended:
// a grant must come back within the validity window, measured from
// outside the library. (A new go-redis connection spends two round trips
// on HELLO and CLIENT SETINFO before its first command, and batched calls
// use a pool of their own, so a round on a cold connection takes up to
// three latencies: the node timeout leaves room for that.)
func TestLatencyNearTTL(t *testing.T) {
	const ttl = 600 * time.Millisecond
	// Validity of a grant = TTL - round time - (TTL*1% + 2ms) = 592ms - round.
	const window = 592 * time.Millisecond
	// As many probes as fit in the run, within and beyond the window in turn.
	latencies := []time.Duration{400 * time.Millisecond, 620 * time.Millisecond, 560 * time.Millisecond,
		700 * time.Millisecond, 585 * time.Millisecond}
	c := newCluster(t, setup{clients: 4, nodeTimeout: 2500 * time.Millisecond,
		options: []redlock.Option{redlock.WithTTL(ttl)}})
	a, b, d := 0, 1, 3
	probeLock := c.clients[d].Mutex("latency-probe", redlock.WithWatchdog(false))
	warm, err := probeLock.TryLock(context.Background()) // opens D's connections before the latency
	if err != nil {
		t.Fatal(err)
	}
	if err := warm.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 3, 4} {
		c.proxies[b][i].SetLatency(300 * time.Millisecond)
		c.faults.Add(1)
	}
	type probe struct {
		latency, took time.Duration
		granted       bool
		err           error
	}
	var probes []probe
	r := c.run(6*time.Second, workload.Config{Clients: c.clients[:3]}, func(ctx context.Context) {
		for _, latency := range latencies {
			for _, i := range []int{0, 1, 2} {
				c.proxies[a][i].SetLatency(latency)
				c.proxies[d][i].SetLatency(latency)
				c.faults.Add(2)
			}
			start := time.Now()
			lease, err := probeLock.TryLock(ctx)
			took := time.Since(start)
			if lease != nil {
				_ = lease.Unlock(context.Background())
			}
			if ctx.Err() != nil {
				return
			}
			probes = append(probes, probe{latency: latency, took: took, granted: lease != nil, err: err})
		}
	})
	c.requireSafe(r, 100)
	outlasted, granted := 0, 0
	for _, p := range probes {
		t.Logf("probe with %v on a majority of links: took %v, granted %v, err %v", p.latency, p.took.Round(time.Millisecond), p.granted, p.err)
		switch {
		case p.granted && p.took >= window:
			t.Errorf("TryLock granted after %v (latency %v): its round outlasted the %v validity window", p.took, p.latency, window)
		case p.granted:
			granted++
		case p.latency >= window:
			outlasted++
		}
	}
	if outlasted == 0 || granted == 0 {
		t.Errorf("%d probes failed for latency beyond the validity window, %d were granted within it: want some of each", outlasted, granted)
	}
}

// Replies dropped on some links: the command runs on the node, its answer
// never arrives. Each client loses the replies of one or two nodes at a
// time, and now and then of a majority. 9 s: under -race beside CI's other
// phases a run makes 90 to 120 sections in 6.5 s, near the floor of 100.
func TestDroppedReplies(t *testing.T) {
	c := newCluster(t, setup{clients: 3, nodeTimeout: 100 * time.Millisecond,
		options: []redlock.Option{redlock.WithTTL(800 * time.Millisecond)}})
	r := c.run(9*time.Second, workload.Config{}, func(ctx context.Context) {
		every(ctx, 250*time.Millisecond, func(tick int) {
			for k, proxies := range c.proxies {
				n := 1 + rand.IntN(2)
				if tick%4 == 3 && tick/4%len(c.proxies) == k {
					n = 3 // a majority: this client cannot get a quorum now
				}
				drop := make([]bool, nodeCount)
				for _, i := range pick(n) {
					drop[i] = true
				}
				for i, proxy := range proxies {
					proxy.DropReplies(drop[i])
					if drop[i] {
						c.faults.Add(1)
					}
				}
			}
		})
	})
	c.requireSafe(r, 100)
}

// Connections reset (TCP RST) under the clients: single links often, every
// link to one node now and then.
func TestConnectionResets(t *testing.T) {
	c := newCluster(t, setup{clients: 3, nodeTimeout: 100 * time.Millisecond,
		options: []redlock.Option{redlock.WithTTL(800 * time.Millisecond)}})
	var conns int
	r := c.run(4*time.Second, workload.Config{}, func(ctx context.Context) {
		every(ctx, 40*time.Millisecond, func(tick int) {
			if tick%12 == 11 {
				i := rand.IntN(nodeCount)
				for k := range c.proxies {
					conns += c.proxies[k][i].Reset()
				}
			} else {
				conns += c.proxies[rand.IntN(len(c.proxies))][rand.IntN(nodeCount)].Reset()
			}
			c.faults.Add(1)
		})
	})
	t.Logf("%d connections reset", conns)
	c.requireSafe(r, 100)
}

// Node faults within the assumptions: a kill, a pause longer than the TTL,
// restarts that keep their data (AOF, appendfsync always), and restarts
// that come back empty only after the longest TTL.
func TestNodeFaults(t *testing.T) {
	const ttl = time.Second
	c := newCluster(t, setup{clients: 3, nodeTimeout: 100 * time.Millisecond,
		nodeArgs: []string{"--appendonly", "yes", "--appendfsync", "always"},
		options:  []redlock.Option{redlock.WithTTL(ttl)}})
	var paused sync.Once
	resume := func() { c.fault("resume node 1", c.nodes[1].Resume()) }
	t.Cleanup(func() { paused.Do(resume) }) // if the run ended early
	r := c.run(6500*time.Millisecond, workload.Config{}, func(ctx context.Context) {
		steps := []struct {
			at time.Duration
			do func()
		}{
			{500 * time.Millisecond, func() { c.fault("kill node 0", c.nodes[0].Kill()) }},
			{time.Second, func() { c.fault("pause node 1", c.nodes[1].Pause()) }},
			{time.Second + ttl + 300*time.Millisecond, func() { paused.Do(resume) }},
			// Down since 0.5s: more than the TTL ago. Comes back empty.
			{500*time.Millisecond + 2*ttl, func() { c.fault("restart node 0 empty", c.nodes[0].Restart(false)) }},
			{3 * time.Second, func() { c.fault("restart node 2 with its AOF", c.nodes[2].Restart(true)) }},
			{3500 * time.Millisecond, func() { c.fault("restart node 3 with its AOF", c.nodes[3].Restart(true)) }},
			{4 * time.Second, func() { c.fault("kill node 4", c.nodes[4].Kill()) }},
			{4*time.Second + ttl + 300*time.Millisecond, func() { c.fault("restart node 4 empty", c.nodes[4].Restart(false)) }},
		}
		start := time.Now()
		for _, step := range steps {
			if !sleep(ctx, time.Until(start.Add(step.at))) {
				return
			}
			step.do()
		}
	})
	paused.Do(resume)
	c.requireSafe(r, 100)
}

// One node of five with a clock ten times too fast (libfaketime): its
// keys expire at a tenth of the TTL. That is far beyond the drift factor
// (1 %), so the lock's own margin does not cover it; what keeps it safe is
// the quorum, if it is large enough. With WithQuorum(4), a grant keeps at
// least 3 nodes with true clocks once the fast node drops its key, and no
// other owner can gather 4 nodes from the 2 left. Client A is cut from
// node 0 so that every grant of A includes the fast node.
//
// The default quorum of 3 is not enough: a grant on exactly {fast node,
// x, y} keeps only x and y once the fast node expires its key, and the
// fast node with the two other nodes is a majority.
// TestUnsafe_fastClockOneNodeDefaultQuorum shows it.
func TestFastClockMinority(t *testing.T) {
	const speed = 10
	libfaketime := requireFaketime(t)
	c := newCluster(t, setup{clients: 3, nodeTimeout: 100 * time.Millisecond,
		nodeEnv: func(i int) []string {
			if i == 4 {
				return fastClock(libfaketime, speed)
			}
			return nil
		},
		options: []redlock.Option{redlock.WithTTL(time.Second), redlock.WithQuorum(4)}})
	c.checkFastClock(4, speed)
	c.faults.Add(1)
	c.reach(0, 1, 2, 3, 4)
	r := c.run(4*time.Second, workload.Config{}, nil)
	c.requireSafe(r, 100)
}
