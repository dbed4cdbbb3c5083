package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkThroughput measures many uncontended locks at once:
// cfg.tpWorkers (BENCH_TP_WORKERS, 64) goroutines each loop Lock+Unlock on a
// name of their own for cfg.duration (BENCH_DURATION) on cfg.nodes
// (BENCH_NODES, 5) nodes and on one node (where the single-node peers
// apply), each library that applies there in turn, all workers
// of a library sharing its clients (our one Client; redsync's pools). Each
// invocation is one whole run whatever b.N is: -benchtime 1x, -count.
//
// cycles/s counts the cycles that ended within the window; ns/op is its
// inverse (wall time per cycle, all workers together); p50-µs and p99-µs
// are over every cycle's Lock+Unlock time; cmds/, calls/ and trips/cycle
// are the Redis commands the nodes counted (INFO), the commands the library
// sent and the round trips they took (go-redis only: a pipeline is one).
// errors counts failed cycles (a Lock that did not succeed within
// lockTimeout, an Unlock that failed): they are reported, not fatal.
func BenchmarkThroughput(b *testing.B) {
	cfg := loadConfig(b)
	for _, n := range slices.Compact([]int{1, cfg.nodes}) {
		set := startNodes(b, n)
		for _, p := range peers() {
			if !p.applies(n) {
				continue
			}
			b.Run(fmt.Sprintf("lib=%s/nodes=%d", p.name, n), func(b *testing.B) {
				runThroughput(b, cfg, set, p)
			})
		}
		set.stop()
	}
}

func runThroughput(b *testing.B, cfg config, set *nodes, p peer) {
	r, err := p.setup(set, lockNames("throughput", cfg.tpWorkers))
	closeRig, ctx := ready(b, r, err)
	before, err := set.snapshot(ctx, r.calls)
	if err != nil {
		b.Fatal(err)
	}

	b.ResetTimer()
	start := time.Now()
	deadline := start.Add(cfg.duration)
	logs := make([]cycleLog, len(r.lockers))
	var wg sync.WaitGroup
	for i, l := range r.lockers {
		wg.Go(func() { logs[i] = cycle(l, deadline) })
	}
	wg.Wait()
	b.StopTimer()
	after, err := set.snapshot(context.Background(), r.calls)
	if err != nil {
		b.Fatal(err)
	}
	if err := closeRig(); err != nil {
		b.Errorf("close: %v", err)
	}

	var latencies []time.Duration
	inWindow, errs := 0, 0
	for i, log := range logs {
		if log.errs > 0 && errs == 0 {
			b.Logf("worker %d: %d errors, first: %v", i, log.errs, log.err)
		}
		errs += log.errs
		latencies = append(latencies, log.latencies...)
		inWindow += log.inWindow
	}
	if inWindow == 0 {
		b.Fatal("no cycle completed")
	}
	d := after.since(set, before)
	all := float64(len(latencies)) // the counts cover the last cycles too
	latencies = sortedCopy(latencies)
	b.ReportMetric(float64(cfg.duration.Nanoseconds())/float64(inWindow), "ns/op")
	b.ReportMetric(float64(inWindow)/cfg.duration.Seconds(), "cycles/s")
	b.ReportMetric(micros(percentile(latencies, 0.50)), "p50-µs")
	b.ReportMetric(micros(percentile(latencies, 0.99)), "p99-µs")
	b.ReportMetric(float64(d.cmds)/all, "cmds/cycle")
	if r.calls != nil {
		b.ReportMetric(float64(d.calls)/all, "calls/cycle")
		b.ReportMetric(float64(d.trips)/all, "trips/cycle")
	}
	b.ReportMetric(float64(errs), "errors")
}

// cycleLog is what one throughput worker saw.
type cycleLog struct {
	latencies []time.Duration // every completed Lock+Unlock
	inWindow  int             // of those, how many ended by the deadline
	errs      int             // failed cycles (not in latencies)
	err       error           // the first error
}

// fail records a failed cycle; the worker goes on with the next.
func (log *cycleLog) fail(err error) {
	if log.errs == 0 {
		log.err = err
	}
	log.errs++
}

// cycle loops Lock+Unlock on l until deadline. A failed cycle (Lock or
// Unlock returned an error; on an overloaded machine a call can time out)
// is counted, not timed, and the worker goes on.
func cycle(l locker, deadline time.Time) cycleLog {
	var log cycleLog
	for time.Now().Before(deadline) {
		began := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), lockTimeout)
		unlock, err := l.lock(ctx)
		cancel()
		if err != nil {
			log.fail(err)
			continue
		}
		if err := unlock(); err != nil {
			log.fail(fmt.Errorf("unlock: %w", err))
			continue
		}
		ended := time.Now()
		log.latencies = append(log.latencies, ended.Sub(began))
		if !ended.After(deadline) {
			log.inWindow++
		}
	}
	return log
}
