package redlock_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest"
)

// BenchmarkLockUnlock measures one uncontended Lock+Unlock on N local
// nodes and reports its p50 and p99 besides the mean (ns/op).
func BenchmarkLockUnlock(b *testing.B) {
	for _, nodes := range []int{1, 3, 5} {
		b.Run(fmt.Sprintf("N=%d", nodes), func(b *testing.B) {
			cluster := redlocktest.Start(b, nodes)
			c, err := newBenchClient(b, cluster)
			if err != nil {
				b.Fatal(err)
			}
			m := c.Mutex("bench")
			before := redisCPU(b, cluster)
			lockUnlock(b, m)
			b.ReportMetric(float64((redisCPU(b, cluster)-before).Microseconds())/float64(b.N), "redis-cpu-µs/op")
		})
	}
}

// BenchmarkLockUnlock_oldNodes is BenchmarkLockUnlock at N=5 on nodes up
// longer than the restart guard (a 2 s TTL, nodes 3.5 s old): the guard's
// steady state, where it reads no more than its hot path.
func BenchmarkLockUnlock_oldNodes(b *testing.B) {
	cluster := redlocktest.Start(b, 5)
	time.Sleep(3500 * time.Millisecond)
	c, err := newBenchClient(b, cluster, redlock.WithTTL(2*time.Second))
	if err != nil {
		b.Fatal(err)
	}
	before := redisCPU(b, cluster)
	lockUnlock(b, c.Mutex("bench"))
	b.ReportMetric(float64((redisCPU(b, cluster)-before).Microseconds())/float64(b.N), "redis-cpu-µs/op")
}

// redisCPU is the CPU time (INFO cpu, user + sys) every node has used.
func redisCPU(b *testing.B, cluster *redlocktest.Nodes) time.Duration {
	var total time.Duration
	for i := range cluster.Servers {
		info, err := cluster.Admin(b, i).Info(context.Background(), "cpu").Result()
		if err != nil {
			b.Fatal(err)
		}
		for _, line := range strings.Split(info, "\n") {
			name, value, _ := strings.Cut(strings.TrimSpace(line), ":")
			if name == "used_cpu_user" || name == "used_cpu_sys" {
				seconds, err := strconv.ParseFloat(value, 64)
				if err != nil {
					b.Fatal(err)
				}
				total += time.Duration(seconds * float64(time.Second))
			}
		}
	}
	return total
}

// BenchmarkLockUnlock_fencing is BenchmarkLockUnlock at N=5 with and
// without WithFencing, side by side: what a token costs (two rounds after
// the grant: read the counters, write the token back).
func BenchmarkLockUnlock_fencing(b *testing.B) {
	cluster := redlocktest.Start(b, 5)
	for _, fencing := range []bool{false, true} {
		b.Run(fmt.Sprintf("fencing=%v", fencing), func(b *testing.B) {
			var opts []redlock.Option
			if fencing {
				opts = append(opts, redlock.WithFencing())
			}
			c, err := newBenchClient(b, cluster, opts...)
			if err != nil {
				b.Fatal(err)
			}
			m := c.Mutex("bench-fencing")
			lockUnlock(b, m)
		})
	}
}

// lockUnlock runs Lock+Unlock of m b.N times, reporting p50 and p99.
func lockUnlock(b *testing.B, m *redlock.Mutex) {
	ctx := context.Background()
	latencies := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		lease, err := m.Lock(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := lease.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
		latencies = append(latencies, time.Since(start))
	}
	b.StopTimer()
	reportPercentiles(b, latencies)
}

func reportPercentiles(b *testing.B, latencies []time.Duration) {
	if len(latencies) == 0 {
		return
	}
	slices.Sort(latencies)
	at := func(q float64) float64 {
		return float64(latencies[int(q*float64(len(latencies)-1))].Microseconds())
	}
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
}

// BenchmarkThroughput64 runs 64 workers, each locking and unlocking a name
// of its own (64 names), on 5 local nodes through one Client: how well
// concurrent calls share round trips. It reports cycles/s and the cycle's
// p50/p99.
func BenchmarkThroughput64(b *testing.B) {
	cluster := redlocktest.Start(b, 5)
	c, err := newBenchClient(b, cluster)
	if err != nil {
		b.Fatal(err)
	}
	const workers = 64
	ctx := context.Background()
	var mu sync.Mutex
	var latencies []time.Duration
	var cycles atomic.Int64
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	per := b.N/workers + 1
	for w := range workers {
		m := c.Mutex(fmt.Sprintf("name-%d", w))
		wg.Go(func() {
			local := make([]time.Duration, 0, per)
			for range per {
				began := time.Now()
				lease, err := m.Lock(ctx)
				if err != nil {
					b.Error(err)
					return
				}
				if err := lease.Unlock(ctx); err != nil {
					b.Error(err)
					return
				}
				local = append(local, time.Since(began))
				cycles.Add(1)
			}
			mu.Lock()
			latencies = append(latencies, local...)
			mu.Unlock()
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(cycles.Load())/time.Since(start).Seconds(), "cycles/s")
	reportPercentiles(b, latencies)
}
