package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// BenchmarkIdleWaiters measures what waiting costs the nodes: one holder
// keeps the lock while cfg.waiters goroutines wait in Lock for cfg.idle
// (BENCH_IDLE_DURATION), and reports the Redis commands per waiter per
// second. A library that polls pays per attempt here; one that sleeps until
// a release notice should pay close to nothing. Our waiters share one
// Client with default options; redsync's each have their own Mutex.
// Run with -benchtime 1x, as BenchmarkContended.
func BenchmarkIdleWaiters(b *testing.B) {
	cfg := loadConfig(b)
	set := startNodes(b, cfg.nodes)
	for _, l := range libsFor(cfg.workers) {
		if l.name != "redlock" && l.name != "redsync" {
			continue // one Client or many makes no difference to polling
		}
		b.Run(fmt.Sprintf("lib=%s/nodes=%d", l.name, cfg.nodes), func(b *testing.B) {
			runIdle(b, cfg, set, l)
		})
	}
}

func runIdle(b *testing.B, cfg config, set *nodes, l lib) {
	// Locker 0 is the holder, the others wait.
	r, err := l.setup(set, cfg.waiters+1, lockName("idle"), cfg.idle)
	closeRig, ctx := ready(b, r, err)
	unlock, err := r.lockers[0].lock(ctx)
	if err != nil {
		b.Fatal(err)
	}
	before, err := set.commandCount(ctx)
	if err != nil {
		b.Fatal(err)
	}
	callsBefore := r.calls.n.Load()

	b.ResetTimer()
	start := time.Now()
	acquired := waitIdle(r.lockers[1:], cfg.idle)
	elapsed := time.Since(start)
	b.StopTimer()
	after, err := set.commandCount(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	calls := r.calls.n.Load() - callsBefore
	if err := unlock(); err != nil {
		b.Errorf("holder's unlock: %v", err)
	}
	if err := closeRig(); err != nil {
		b.Errorf("close: %v", err)
	}
	if acquired > 0 {
		b.Errorf("%d waiters got the lock while it was held", acquired)
	}

	perWaiterSecond := float64(cfg.waiters) * elapsed.Seconds()
	b.ReportMetric(0, "ns/op") // a wall time per op means nothing here
	b.ReportMetric(float64(set.commandsBetween(before, after))/perWaiterSecond, "cmds/waiter/s")
	b.ReportMetric(float64(calls)/perWaiterSecond, "calls/waiter/s")
}

// waitIdle has each locker wait in Lock until d has passed and returns how
// many got the lock anyway (each gives it back at once). Every waiter has
// returned when it returns.
func waitIdle(waiters []locker, d time.Duration) int {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	acquired := 0
	for _, l := range waiters {
		wg.Go(func() {
			unlock, err := l.lock(ctx)
			if err != nil {
				return // the expected end: ctx ran out while the holder held on
			}
			_ = unlock()
			mu.Lock()
			acquired++
			mu.Unlock()
		})
	}
	wg.Wait()
	return acquired
}
