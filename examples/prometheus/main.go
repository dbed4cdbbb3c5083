// Command prometheus serves a Client's lock metrics on /metrics, from the
// supported module github.com/quorumlock/redlock/contrib/prometheus,
// registered on a registry of its own (not the default one).
//
//	go run ./prometheus                 # 3 local nodes, :2112
//	curl -s localhost:2112/metrics | grep redlock_
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/quorumlock/redlock"
	redlockprometheus "github.com/quorumlock/redlock/contrib/prometheus"
	"github.com/quorumlock/redlock/examples/internal/localnodes"
)

func main() {
	list := flag.String("nodes", "", "comma-separated node URLs (default: 3 local nodes)")
	addr := flag.String("addr", "localhost:2112", "where to serve /metrics")
	flag.Parse()
	if err := run(*list, *addr); err != nil {
		fmt.Fprintln(os.Stderr, "prometheus:", err)
		os.Exit(1)
	}
}

func run(list, addr string) error {
	urls := strings.Split(list, ",")
	if list == "" {
		local, stop, err := localnodes.Start(3)
		if err != nil {
			return err
		}
		defer stop()
		urls = local
	}
	registry := prometheus.NewRegistry()
	client, err := newClient(urls, registry)
	if err != nil {
		return err
	}
	defer client.Close()
	go work(client)
	http.Handle("/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	fmt.Printf("serving http://%s/metrics\n", addr)
	return http.ListenAndServe(addr, nil)
}

// newClient dials urls with the lock metrics registered on registry.
func newClient(urls []string, registry prometheus.Registerer) (*redlock.Client, error) {
	metrics := redlockprometheus.NewCollector()
	if err := registry.Register(metrics); err != nil {
		return nil, err
	}
	return redlock.Dial(urls, redlock.WithObserver(metrics.Observer()))
}

// work takes and gives back a lock, to have something to show.
func work(client *redlock.Client) {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if lease, err := client.Mutex("orders").Lock(ctx); err == nil {
			time.Sleep(10 * time.Millisecond)
			_ = lease.Unlock(ctx)
		}
		cancel()
		time.Sleep(100 * time.Millisecond)
	}
}
