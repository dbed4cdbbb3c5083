package redlock_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest"
)

// handoffGaps has workers spread over clients Clients (as separate
// processes would be, each with goroutines of its own) take name over and
// over for d with a 1 ms hold, and returns every gap from the start of one
// holder's Unlock to the next grant, sorted.
func handoffGaps(t *testing.T, cluster *redlocktest.Nodes, name string, clients, workers int, d time.Duration,
	opts ...redlock.Option) []time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(testContext(t), d)
	defer cancel()
	var (
		mu       sync.Mutex
		released time.Time // the latest holder's Unlock began; zero while held
		gaps     []time.Duration
	)
	var wg sync.WaitGroup
	mutexes := make([]*redlock.Mutex, clients)
	for i := range mutexes {
		mutexes[i] = newClient(t, cluster, opts...).Mutex(name)
	}
	for w := range workers {
		m := mutexes[w%clients]
		wg.Go(func() {
			for ctx.Err() == nil {
				lease, err := m.Lock(ctx)
				if err != nil {
					if ctx.Err() == nil {
						t.Errorf("Lock: %v", err)
					}
					return
				}
				mu.Lock()
				if !released.IsZero() {
					gaps = append(gaps, time.Since(released))
				}
				released = time.Time{}
				mu.Unlock()
				time.Sleep(time.Millisecond)
				mu.Lock()
				released = time.Now()
				mu.Unlock()
				_ = lease.Unlock(context.Background())
			}
		})
	}
	wg.Wait()
	slices.Sort(gaps)
	return gaps
}

// quantile is the q-quantile of sorted (0 when empty).
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// Plain mode, every node up: a lock freed while others wait goes to one
// of them at once. The playground (TTL 2s, two clients of two workers
// each) showed seconds without a grant and handoffs of 2.002 s: a waiter
// whose attempt was running when the notices handing it the lock came
// (the lock handed on by the release on some nodes and by the previous
// holder's leave on another, so under two release ids) was never told,
// and slept until the handed lock's TTL ran out. Such a miss costs the
// TTL; the bound leaves room for a loaded machine.
func TestWait_plainHandoffGapWithAllNodesUp(t *testing.T) {
	cluster := redlocktest.Start(t, 5)
	const run = 8 * time.Second
	gaps := handoffGaps(t, cluster, "gaps", 2, 4, run, redlock.WithTTL(2*time.Second))
	if len(gaps) < 100 {
		t.Fatalf("only %d handoffs in %v", len(gaps), run)
	}
	worst := gaps[len(gaps)-1]
	t.Logf("%d handoffs: p50 %v, p99 %v, max %v", len(gaps), quantile(gaps, 0.5), quantile(gaps, 0.99), worst)
	if worst > 500*time.Millisecond {
		t.Fatalf("a handoff took %v with every node up (p50 %v): a waiter missed the release", worst, quantile(gaps, 0.5))
	}
}
