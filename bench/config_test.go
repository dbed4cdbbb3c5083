package bench

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"
)

// config is what one run measures. It comes from the environment rather
// than test flags so that the plain `go test -bench .` line in README.md
// works unchanged and run.sh can pass it through.
type config struct {
	nodes    int           // BENCH_NODES: independent redis-server processes
	workers  int           // BENCH_WORKERS: goroutines contending for one lock
	duration time.Duration // BENCH_DURATION: wall time of one contended run
	idle     time.Duration // BENCH_IDLE_DURATION: how long idle waiters wait
	waiters  int           // idle waiters behind one holder
	hold     time.Duration // time spent inside each critical section

	cycles    int           // BENCH_CYCLES: Lock+Unlock cycles per LockUnlock run
	tpWorkers int           // BENCH_TP_WORKERS: Throughput workers, one name each
	leases    int           // BENCH_LEASES: leases held in the Renewal run
	renewTTL  time.Duration // BENCH_RENEW_TTL: their TTL (renewed every TTL/3)
	renewHold time.Duration // BENCH_RENEW_HOLD: the measured window
}

func loadConfig(b *testing.B) config {
	b.Helper()
	cfg := config{nodes: 5, workers: 16, duration: 3 * time.Second, idle: 5 * time.Second,
		waiters: 8, hold: time.Millisecond,
		cycles: 2000, tpWorkers: 64, leases: 10_000, renewTTL: 3 * time.Second, renewHold: 4 * time.Second}
	var err error
	if cfg.nodes, err = envInt("BENCH_NODES", cfg.nodes); err != nil {
		b.Fatal(err)
	}
	if cfg.workers, err = envInt("BENCH_WORKERS", cfg.workers); err != nil {
		b.Fatal(err)
	}
	if cfg.duration, err = envDuration("BENCH_DURATION", cfg.duration); err != nil {
		b.Fatal(err)
	}
	if cfg.idle, err = envDuration("BENCH_IDLE_DURATION", cfg.idle); err != nil {
		b.Fatal(err)
	}
	if cfg.cycles, err = envInt("BENCH_CYCLES", cfg.cycles); err != nil {
		b.Fatal(err)
	}
	if cfg.tpWorkers, err = envInt("BENCH_TP_WORKERS", cfg.tpWorkers); err != nil {
		b.Fatal(err)
	}
	if cfg.leases, err = envInt("BENCH_LEASES", cfg.leases); err != nil {
		b.Fatal(err)
	}
	if cfg.renewTTL, err = envDuration("BENCH_RENEW_TTL", cfg.renewTTL); err != nil {
		b.Fatal(err)
	}
	if cfg.renewHold, err = envDuration("BENCH_RENEW_HOLD", cfg.renewHold); err != nil {
		b.Fatal(err)
	}
	return cfg
}

func envInt(name string, def int) (int, error) {
	text := os.Getenv(name)
	if text == "" {
		return def, nil
	}
	n, err := strconv.Atoi(text)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s=%q: want a positive integer", name, text)
	}
	return n, nil
}

func envDuration(name string, def time.Duration) (time.Duration, error) {
	text := os.Getenv(name)
	if text == "" {
		return def, nil
	}
	d, err := time.ParseDuration(text)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive duration such as 3s", name, text)
	}
	return d, nil
}
