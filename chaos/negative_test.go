package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/redlocktest/checker"
	"github.com/quorumlock/redlock/redlocktest/workload"
)

// Negative controls: runs that break an assumption of the lock on purpose.
// Each MUST end with checker violations; if one stops biting, sharpen the
// setup — never weaken the assertion. They share a shape: long holds under
// a long TTL, no renewal (nothing repairs the broken nodes), and waiters
// that retry every 20 ms instead of sitting out the holder's TTL, so that
// an unsafe grant happens while the first holder is still in its section.
func unsafeOptions(ttl time.Duration) []redlock.Option {
	return []redlock.Option{redlock.WithTTL(ttl), redlock.WithWatchdog(false), pollEvery(20 * time.Millisecond)}
}

// A majority (3 of 5) restarted empty at once while leases are held, with
// the restart guard off: assumption 1 (a quorum does not lose
// acknowledged keys) is broken, and another owner gets the lock inside the
// holder's validity window. TestGuard_majorityRestartedEmpty is the same
// run with the guard on (the default): it must be clean.
func TestUnsafe_majorityRestartedEmpty(t *testing.T) {
	options := append(unsafeOptions(3*time.Second), redlock.WithRestartGuard(0))
	c := newCluster(t, setup{clients: 3, nodeTimeout: 100 * time.Millisecond, options: options})
	c.requireBite(5, "violation", func() result {
		return restartMajorityEmpty(c, workload.Config{Hold: 600 * time.Millisecond}, 3500*time.Millisecond,
			900*time.Millisecond, 1800*time.Millisecond, 2700*time.Millisecond)
	}, func(checker.Violation) bool { return true })
}

// The same, the semaphore alone (SemaphorePermits permits, three workers):
// the slots' keys are gone on a majority, and a third holder gets a permit
// while two are valid. The checker must see more grants at once than
// permits.
func TestUnsafe_majorityRestartedEmpty_semaphore(t *testing.T) {
	options := append(unsafeOptions(3*time.Second), redlock.WithRestartGuard(0))
	c := newCluster(t, setup{clients: 3, nodeTimeout: 100 * time.Millisecond, options: options})
	reason := fmt.Sprintf("%d grants at once, %d allowed", workload.SemaphorePermits+1, workload.SemaphorePermits)
	c.requireBite(3, fmt.Sprintf("%q violation", reason), func() result {
		return restartMajorityEmpty(c, workload.Config{Hold: 600 * time.Millisecond, Modes: []workload.Mode{workload.Semaphore}},
			3500*time.Millisecond, 900*time.Millisecond, 1800*time.Millisecond, 2700*time.Millisecond)
	}, func(v checker.Violation) bool { return v.Reason == reason })
}

// The same, the election alone: a candidate takes leadership while the
// leader's is valid. The checker must see overlapping leaders.
func TestUnsafe_majorityRestartedEmpty_election(t *testing.T) {
	options := append(unsafeOptions(3*time.Second), redlock.WithRestartGuard(0))
	c := newCluster(t, setup{clients: 3, nodeTimeout: 100 * time.Millisecond, options: options})
	c.requireBite(3, "overlapping leaders", func() result {
		return restartMajorityEmpty(c, workload.Config{Hold: 600 * time.Millisecond, Modes: []workload.Mode{workload.Election}},
			3500*time.Millisecond, 900*time.Millisecond, 1800*time.Millisecond, 2700*time.Millisecond)
	}, func(v checker.Violation) bool { return v.Reason == "overlapping grants" })
}

// The same, the read-write lock alone: a writer gets the lock while read
// holds are valid (or the reverse). The checker must see a writer's grant
// overlapping a reader's.
func TestUnsafe_majorityRestartedEmpty_rw(t *testing.T) {
	options := append(unsafeOptions(3*time.Second), redlock.WithRestartGuard(0))
	c := newCluster(t, setup{clients: 3, nodeTimeout: 100 * time.Millisecond, options: options})
	// A writer overlaps a reader only when a read hold is out at a restart
	// and a writer wins next: under make test's load, fewer than half the
	// restarts. Each run restarts seven times; up to five runs.
	var faults []time.Duration
	for at := 900 * time.Millisecond; at < 7*time.Second; at += 900 * time.Millisecond {
		faults = append(faults, at)
	}
	c.requireBite(5, "writer overlapping a reader", func() result {
		return restartMajorityEmpty(c, workload.Config{Hold: 600 * time.Millisecond, Modes: []workload.Mode{workload.RW}},
			7*time.Second, faults...)
	}, func(v checker.Violation) bool {
		return v.Reason == "overlapping grants" && v.First.Shared != v.Second.Shared
	})
}

// The restart guard on (its default, the TTL): the nodes restarted empty
// do not vote until a TTL after they found their data gone, so no second
// owner gets the lock, and locking resumes after the guard: with a 2 s
// TTL, restarts at 0.9 and 1.8 s, sections again from about 4 s on.
func TestGuard_majorityRestartedEmpty(t *testing.T) {
	c := newCluster(t, setup{clients: 3, nodeTimeout: 100 * time.Millisecond, options: unsafeOptions(2 * time.Second)})
	r := restartMajorityEmpty(c, workload.Config{Hold: 300 * time.Millisecond}, 6*time.Second, 900*time.Millisecond, 1800*time.Millisecond)
	c.requireSafe(r, 5)
}

// restartMajorityEmpty runs the workload cfg for d, restarting nodes 0, 1
// and 2 empty at once at each of times.
func restartMajorityEmpty(c *cluster, cfg workload.Config, d time.Duration, times ...time.Duration) result {
	return c.run(d, cfg, func(ctx context.Context) {
		start := time.Now()
		for _, at := range times {
			if !sleep(ctx, time.Until(start.Add(at))) {
				return
			}
			var wg sync.WaitGroup
			for _, i := range []int{0, 1, 2} {
				wg.Go(func() { c.fault(fmt.Sprintf("restart node %d empty", i), c.nodes[i].Restart(false)) })
			}
			wg.Wait()
		}
	})
}

// A majority (3 of 5) with clocks ten times too fast and the clock check
// off: assumption 2 (clocks run fast by less than the drift factor) is
// broken. With a 2 s TTL the fast nodes expire a key after 200 ms while
// its holder, by its own clock, holds a valid lease for almost 2 s and
// works for 400 ms. TestClockCheck_fastClockMajority is the same run with
// the check on (the default): it must be clean.
func TestUnsafe_fastClockMajority(t *testing.T) {
	c := fastClockMajority(t, redlock.WithClockCheck(false))
	c.requireViolations(c.run(3*time.Second, workload.Config{Hold: 400 * time.Millisecond}, nil))
}

func TestClockCheck_fastClockMajority(t *testing.T) {
	var mu sync.Mutex
	reported := make(map[int]bool) // nodes reported with a fast clock
	c := fastClockMajority(t, redlock.WithObserver(redlock.Observer{Quarantined: func(e redlock.QuarantineEvent) {
		var fast *node.ClockQuarantine
		if errors.As(e.Reason, &fast) {
			mu.Lock()
			reported[e.Node] = true
			mu.Unlock()
		}
	}}))
	// No quorum while three nodes run fast: the run is clean, and makes
	// no section at all.
	r := c.run(3*time.Second, workload.Config{Hold: 400 * time.Millisecond}, nil)
	c.requireSafe(r, 0)
	if r.stats.Sections.Load() != 0 {
		t.Errorf("%d sections granted with three of five clocks ten times fast", r.stats.Sections.Load())
	}
	mu.Lock()
	defer mu.Unlock()
	if !reported[0] || !reported[1] || !reported[2] || reported[3] || reported[4] {
		t.Errorf("nodes reported with a fast clock: %v, want 0, 1 and 2", reported)
	}
}

func fastClockMajority(t *testing.T, opts ...redlock.Option) *cluster {
	const speed = 10
	libfaketime := requireFaketime(t)
	c := newCluster(t, setup{clients: 3, nodeTimeout: 100 * time.Millisecond,
		nodeEnv: func(i int) []string {
			if i < 3 {
				return fastClock(libfaketime, speed)
			}
			return nil
		},
		options: append(unsafeOptions(2*time.Second), opts...)})
	for i := range 3 {
		c.checkFastClock(i, speed)
		c.faults.Add(1)
	}
	return c
}

// One fast node of five is enough to break the default quorum of 3 when a
// grant's quorum is exactly the fast node and two others: client A is cut
// from nodes 0 and 1, so each of its grants is {2, 3, 4} with node 4's
// clock ten times too fast. 200 ms into A's 400 ms section node 4 expires
// A's key, and B takes {0, 1, 4}: a majority. With the clock check off
// the checker must catch it (TestFastClockMinority makes the same fault
// safe with WithQuorum(4)); with it on (the default), node 4's answers do
// not count, A cannot lock at all, and the run must be clean.
func TestUnsafe_fastClockOneNodeDefaultQuorum(t *testing.T) {
	c := fastClockNodes(t, 2, []int{4}, redlock.WithClockCheck(false))
	c.reach(0, 2, 3, 4)
	c.requireViolations(c.run(3*time.Second, workload.Config{Hold: 400 * time.Millisecond}, nil))
}

func TestClockCheck_fastClockOneNodeDefaultQuorum(t *testing.T) {
	c := fastClockNodes(t, 2, []int{4})
	c.reach(0, 2, 3, 4)
	c.requireSafe(c.run(3*time.Second, workload.Config{Hold: 400 * time.Millisecond}, nil), 3)
}

// Two fast nodes of five, every client reaching every node: each grant
// may count either fast node, and with the check off they expire holds
// early. On, the three true nodes decide alone.
func TestClockCheck_fastClockTwoNodes(t *testing.T) {
	c := fastClockNodes(t, 3, []int{3, 4})
	c.requireSafe(c.run(3*time.Second, workload.Config{Hold: 400 * time.Millisecond}, nil), 3)
}

// fastClockNodes starts five nodes, those in fast with clocks ten times
// too fast, for clients Clients with the negative controls' options.
func fastClockNodes(t *testing.T, clients int, fast []int, opts ...redlock.Option) *cluster {
	const speed = 10
	libfaketime := requireFaketime(t)
	c := newCluster(t, setup{clients: clients, nodeTimeout: 100 * time.Millisecond,
		nodeEnv: func(i int) []string {
			if slices.Contains(fast, i) {
				return fastClock(libfaketime, speed)
			}
			return nil
		},
		options: append(unsafeOptions(2*time.Second), opts...)})
	for _, i := range fast {
		c.checkFastClock(i, speed)
		c.faults.Add(1)
	}
	return c
}

// A majority (3 of 5) killed together and started again empty only after
// the TTL: no lease outlives the downtime, so the grants do not overlap,
// but the three nodes' fence counters start again from zero, which breaks
// assumption 1 for the tokens. Both clients reach those three nodes only
// (nodes 3 and 4 never see a write-back that could carry the order over),
// so every grant after the fault takes its token from the emptied nodes:
// below the tokens granted before it. The checker's token rule must catch
// it.
func TestUnsafe_fenceCountersLostOnAMajority(t *testing.T) {
	libfaketime := requireFaketime(t)
	const ttl = 500 * time.Millisecond
	c := newCluster(t, setup{clients: 2, nodeTimeout: 100 * time.Millisecond,
		// The restart guard off: with it, the restarted nodes sit out the
		// fencing reads for a TTL while later grants write their tokens
		// back to them, and the counters are no longer lost.
		options: []redlock.Option{redlock.WithTTL(ttl), redlock.WithRestartGuard(0)}})
	c.reach(0, 0, 1, 2)
	c.reach(1, 0, 1, 2)
	r := c.run(2200*time.Millisecond, workload.Config{}, func(ctx context.Context) {
		if !sleep(ctx, 600*time.Millisecond) {
			return
		}
		var wg sync.WaitGroup
		for _, i := range []int{0, 1, 2} {
			wg.Go(func() { c.fault(fmt.Sprintf("kill node %d", i), c.nodes[i].Kill()) })
		}
		wg.Wait()
		if !sleep(ctx, ttl+300*time.Millisecond) {
			return
		}
		// Counters alone would start again from 1; the tokens' clock term
		// keeps them increasing unless the clocks go back as well.
		for _, i := range []int{0, 1, 2} {
			c.nodes[i].SetEnv(clockBehind(libfaketime, time.Hour))
			wg.Go(func() {
				c.fault(fmt.Sprintf("restart node %d empty, its clock an hour behind", i), c.nodes[i].Restart(false))
			})
		}
		wg.Wait()
	})
	c.requireViolation(r, "fencing token did not increase")
}
