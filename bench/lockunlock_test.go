package bench

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// latencyNodes are the node counts BenchmarkLockUnlock runs at.
var latencyNodes = []int{1, 3, 5}

// BenchmarkLockUnlock measures one uncontended Lock+Unlock, one goroutine,
// one name, at N = 1, 3 and 5 nodes, each library that applies at that N in
// turn on the same nodes. Each invocation is cfg.cycles (BENCH_CYCLES)
// cycles whatever b.N is: run it with -benchtime 1x and repeat with -count.
//
// ns/op is the mean cycle; p50-µs and p99-µs its percentiles; cmds/op and
// calls/op the Redis commands per cycle as the nodes counted them (INFO,
// script internals included) and as the library sent them (go-redis only);
// errors the failed cycles (reported, not fatal; ns/op includes them).
func BenchmarkLockUnlock(b *testing.B) {
	cfg := loadConfig(b)
	for _, n := range latencyNodes {
		set := startNodes(b, n)
		for _, p := range peers() {
			if !p.applies(n) {
				continue
			}
			b.Run(fmt.Sprintf("lib=%s/nodes=%d", p.name, n), func(b *testing.B) {
				runLockUnlock(b, cfg, set, p)
			})
		}
		set.stop() // also at cleanup; stop now so idle servers do not pile up
	}
}

func runLockUnlock(b *testing.B, cfg config, set *nodes, p peer) {
	r, err := p.setup(set, lockNames("lockunlock", 1))
	closeRig, ctx := ready(b, r, err)
	before, err := set.snapshot(ctx, r.calls)
	if err != nil {
		b.Fatal(err)
	}

	b.ResetTimer()
	start := time.Now()
	log := cycles(r.lockers[0], cfg.cycles)
	elapsed := time.Since(start)
	b.StopTimer()
	after, err := set.snapshot(ctx, r.calls)
	if err != nil {
		b.Fatal(err)
	}
	if err := closeRig(); err != nil {
		b.Errorf("close: %v", err)
	}

	if log.errs > 0 {
		b.Logf("%d errors, first: %v", log.errs, log.err)
	}
	if len(log.latencies) == 0 {
		b.Fatal("no cycle completed")
	}
	d := after.since(set, before)
	cycles := float64(cfg.cycles)
	latencies := sortedCopy(log.latencies)
	b.ReportMetric(float64(elapsed.Nanoseconds())/cycles, "ns/op")
	b.ReportMetric(micros(percentile(latencies, 0.50)), "p50-µs")
	b.ReportMetric(micros(percentile(latencies, 0.99)), "p99-µs")
	b.ReportMetric(float64(d.cmds)/cycles, "cmds/op")
	b.ReportMetric(micros(d.redisCPU)/cycles, "redis-cpu-µs/op")
	b.ReportMetric(micros(d.scriptT)/cycles, "script-µs/op")
	if d.scripts > 0 {
		b.ReportMetric(micros(d.scriptT)/float64(d.scripts), "µs/script")
	}
	if r.calls != nil {
		b.ReportMetric(float64(d.calls)/cycles, "calls/op")
	}
	b.ReportMetric(float64(log.errs), "errors")
}

// cycles runs n Lock+Unlock cycles on l, one after another. A failed cycle
// is counted, not timed (see cycle in throughput_test.go).
func cycles(l locker, n int) cycleLog {
	var log cycleLog
	for range n {
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
		log.latencies = append(log.latencies, time.Since(began))
	}
	return log
}
