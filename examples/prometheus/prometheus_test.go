package prometheus

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/examples/internal/localnodes"
)

func TestMetrics_countLockEvents(t *testing.T) {
	localnodes.Require(t)
	urls, stop, err := localnodes.Start(3)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	reg := prometheus.NewRegistry()
	metrics := NewMetrics(reg)
	client, err := redlock.Dial(urls, redlock.WithObserver(metrics.Observer()))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	for range 3 {
		lease, err := client.Mutex("orders").Lock(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if err := lease.Unlock(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if got := testutil.ToFloat64(metrics.Acquired.WithLabelValues("orders")); got != 3 {
		t.Fatalf("redlock_acquired_total = %v, want 3", got)
	}
	if got := testutil.ToFloat64(metrics.Released.WithLabelValues("orders", "true")); got != 3 {
		t.Fatalf("redlock_released_total{ok=true} = %v, want 3", got)
	}
}
