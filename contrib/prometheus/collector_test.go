package redlockprometheus_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/quorumlock/redlock"
	redlockprometheus "github.com/quorumlock/redlock/contrib/prometheus"
	"github.com/quorumlock/redlock/redlocktest"
)

func TestCollector_countsALocksLifeOnTheCallersRegistry(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	metrics := redlockprometheus.NewCollector()
	registry := prometheus.NewPedanticRegistry()
	registry.MustRegister(metrics)
	client, err := redlock.New(cluster.Clients(t), redlock.WithObserver(metrics.Observer()))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	lease, err := client.Mutex("report").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := gauge(t, registry, "redlock_leases_held"); got != 1 {
		t.Fatalf("leases_held %v while one lease is held", got)
	}
	if _, err := client.Mutex("report").TryLock(ctx); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryLock of a held lock: %v", err)
	}
	if err := lease.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP redlock_leases_held Leases this process holds now.
# TYPE redlock_leases_held gauge
redlock_leases_held{lock="report"} 0
# HELP redlock_released_total Releases, by whether a quorum confirmed them.
# TYPE redlock_released_total counter
redlock_released_total{lock="report",result="ok"} 1
`
	if err := testutil.GatherAndCompare(registry, strings.NewReader(want), "redlock_leases_held", "redlock_released_total"); err != nil {
		t.Fatal(err)
	}
	for _, series := range []string{`op="Lock",result="ok"`, `op="TryLock",result="refused"`, `op="Unlock",result="ok"`} {
		if n := histogramCount(t, registry, series); n != 1 {
			t.Fatalf("call_duration_seconds{%s} counted %d calls, want 1", series, n)
		}
	}
	if problems, err := testutil.GatherAndLint(registry); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %+v", err, problems)
	}
	if families, _ := prometheus.DefaultGatherer.Gather(); hasRedlock(families) {
		t.Fatal("metrics were registered on the default registry")
	}
}

func TestCollector_aLostLeaseIsCountedOutOnce(t *testing.T) {
	metrics := redlockprometheus.NewCollector(redlockprometheus.WithoutLockLabel())
	registry := prometheus.NewPedanticRegistry()
	registry.MustRegister(metrics)
	hooks := metrics.Observer()
	hooks.Acquired(redlock.AcquiredEvent{Name: "job-1"})
	hooks.Acquired(redlock.AcquiredEvent{Name: "job-2"})
	hooks.Lost(redlock.LostEvent{Name: "job-1", Err: redlock.ErrLost})
	hooks.Released(redlock.ReleasedEvent{Name: "job-1", Lost: true}) // the Unlock after the loss
	want := `
# HELP redlock_leases_held Leases this process holds now.
# TYPE redlock_leases_held gauge
redlock_leases_held{lock=""} 1
# HELP redlock_lost_total Leases lost before they were released.
# TYPE redlock_lost_total counter
redlock_lost_total{lock=""} 1
`
	if err := testutil.GatherAndCompare(registry, strings.NewReader(want), "redlock_leases_held", "redlock_lost_total"); err != nil {
		t.Fatal(err)
	}
}

func TestCollector_waitingCountsLockCallsInFlight(t *testing.T) {
	metrics := redlockprometheus.NewCollector()
	registry := prometheus.NewPedanticRegistry()
	registry.MustRegister(metrics)
	call := metrics.Observer().Call
	ctx := context.Background()
	doneLock := call(ctx, redlock.CallEvent{Op: "Lock", Kind: "Mutex", Name: "a"})
	doneTry := call(ctx, redlock.CallEvent{Op: "TryLock", Kind: "Mutex", Name: "a"})
	if got := gauge(t, registry, "redlock_waiting"); got != 1 {
		t.Fatalf("waiting %v with one Lock and one TryLock out: want 1 (a TryLock does not wait)", got)
	}
	doneTry(redlock.CallResult{Err: redlock.ErrNotAcquired})
	doneLock(redlock.CallResult{Err: context.Canceled})
	if got := gauge(t, registry, "redlock_waiting"); got != 0 {
		t.Fatalf("waiting %v after both returned", got)
	}
	if n := histogramCount(t, registry, `op="Lock",result="cancelled"`); n != 1 {
		t.Fatalf("the cancelled Lock was counted %d times", n)
	}
}

// gauge is the value of the one gauge series of the family name.
func gauge(t *testing.T, g prometheus.Gatherer, name string) float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no single series of %s", name)
	return 0
}

// histogramCount is the sample count of the call duration series whose
// labels include labels ("op=\"Lock\",result=\"ok\"").
func histogramCount(t *testing.T, g prometheus.Gatherer, labels string) uint64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "redlock_call_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			var b strings.Builder
			for i, l := range m.GetLabel() {
				if i > 0 {
					b.WriteString(",")
				}
				b.WriteString(l.GetName() + "=\"" + l.GetValue() + "\"")
			}
			if strings.Contains(b.String(), labels) {
				return m.GetHistogram().GetSampleCount()
			}
		}
	}
	return 0
}

// hasRedlock reports whether families hold a metric of this package's.
func hasRedlock(families []*dto.MetricFamily) bool {
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "redlock_") {
			return true
		}
	}
	return false
}
