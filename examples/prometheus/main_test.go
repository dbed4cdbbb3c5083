package main

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/quorumlock/redlock/examples/internal/localnodes"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestMetrics_areServedFromTheExamplesRegistry(t *testing.T) {
	localnodes.Require(t)
	urls, stop, err := localnodes.Start(3)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	registry := prometheus.NewRegistry()
	client, err := newClient(urls, registry)
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
	server := httptest.NewServer(promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	defer server.Close()
	resp, err := server.Client().Get(server.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range []string{
		`redlock_call_duration_seconds_count{kind="Mutex",lock="orders",op="Lock",result="ok"} 3`,
		`redlock_released_total{lock="orders",result="ok"} 3`,
		`redlock_leases_held{lock="orders"} 0`,
	} {
		if !strings.Contains(string(body), line) {
			t.Fatalf("/metrics lacks %q:\n%s", line, body)
		}
	}
}
