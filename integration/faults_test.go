package integration

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/integration/internal/harness"
	"github.com/quorumlock/redlock/integration/internal/nodes"
	"github.com/quorumlock/redlock/redlocktest/checker"
	"github.com/quorumlock/redlock/redlocktest/faultproxy"
	"github.com/quorumlock/redlock/redlocktest/workload"
)

// The timeline of one fault scenario. The fault lasts two TTLs, so that
// every lease taken before it must be renewed on the healthy majority (or
// be lost) while it lasts, and a killed or stopped node stays down longer
// than the TTL before it comes back empty, as the first assumption in
// docs/safety.md asks.
const (
	warmUp   = time.Second
	faultFor = 2 * harness.TTL
	cooldown = time.Second
)

// faulty are the nodes each scenario takes down: two of five, the largest
// minority.
var faulty = []int{0, 1}

func TestFaults_killThenStart(t *testing.T)       { runFault(t, nodes.Kill) }
func TestFaults_stopThenStart(t *testing.T)       { runFault(t, nodes.Restart) }
func TestFaults_pauseThenUnpause(t *testing.T)    { runFault(t, nodes.Pause) }
func TestFaults_disconnectReconnect(t *testing.T) { runFault(t, nodes.Disconnect) }

// One-way faults on the links of three Clients to a minority of the
// nodes, each Client through proxies of its own in front of the nodes'
// published ports: the first Client's requests are held (its commands run
// only when the hold is lifted, late and in order), the second's replies
// are held (its commands run, their answers wait), and the third's
// requests arrive 150 ms late, beyond the node timeout. The Clients' votes
// on those nodes land late, after the other Clients'.
func TestFaults_oneWayLinks(t *testing.T) {
	cl := cluster(t)
	const delay = 150 * time.Millisecond
	proxies := make([][]*faultproxy.Proxy, 3)
	var clients []*redlock.Client
	t.Cleanup(func() {
		for _, row := range proxies {
			for _, proxy := range row {
				if err := proxy.Close(); err != nil {
					t.Errorf("close proxy: %v", err)
				}
			}
		}
	})
	for k := range proxies {
		urls := make([]string, cl.N())
		for i := range urls {
			proxy, err := faultproxy.New(cl.Addr(i))
			if err != nil {
				t.Fatal(err)
			}
			proxies[k] = append(proxies[k], proxy)
			urls[i] = "redis://" + proxy.Addr()
		}
		dialed, err := harness.Dial(urls, 1, harness.Options()...)
		if err != nil {
			_ = harness.CloseAll(clients)
			t.Fatal(err)
		}
		clients = append(clients, dialed...)
	}
	set := func(on bool) {
		for _, i := range faulty {
			proxies[0][i].HoldRequests(on)
			proxies[1][i].HoldReplies(on)
			if on {
				proxies[2][i].SetRequestLatency(delay)
			} else {
				proxies[2][i].SetRequestLatency(0)
			}
		}
	}
	runScenario(t, cl, "one-way link faults", clients,
		func(context.Context) error { set(true); return nil },
		func(context.Context) error { set(false); return nil })
}

// runFault runs the workload with two Clients on every mode while a
// minority of the nodes is under kind, then heals them.
func runFault(t *testing.T, kind nodes.Kind) {
	cl := cluster(t)
	clients, err := harness.Dial(cl.URLs(), 2, harness.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	runScenario(t, cl, string(kind), clients,
		func(ctx context.Context) error {
			for _, i := range faulty {
				if err := cl.Inject(ctx, i, kind); err != nil {
					return err
				}
			}
			return nil
		},
		cl.HealAll)
}

// runScenario runs the workload with clients on every mode while inject's
// fault lasts, then heals it and closes the clients. Mutual exclusion and
// fencing must hold throughout, locks must keep being granted while the
// majority is reachable, and every mode must grant within 2×TTL after the
// heal.
func runScenario(t *testing.T, cl *nodes.Cluster, name string, clients []*redlock.Client, inject, heal func(context.Context) error) {
	t.Helper()
	check := checker.New()
	var stats workload.Stats
	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() {
		workload.Run(ctx, workload.Config{Clients: clients, Workers: 2, Check: check, Options: harness.Options()}, &stats)
	})
	duringFault, faultErr := faultTimeline(t.Context(), inject, heal, &stats)
	stop()
	wg.Wait()
	if err := harness.CloseAll(clients); err != nil {
		t.Errorf("close clients: %v", err)
	}
	if faultErr != nil {
		_ = cl.HealAll(context.Background()) // leave the shared cluster whole for the next test
		t.Fatal(faultErr)
	}

	t.Logf("%s on nodes %v: %d sections (%d during the fault), %d grants checked, %d lost leases, %d lock errors",
		name, faulty, stats.Sections.Load(), duringFault, check.Len(), stats.LostLeases.Load(), stats.LockErrors.Load())
	if err := check.Err(); err != nil {
		t.Error(err)
	}
	if lost := stats.LostUpdates.Load(); lost != 0 {
		t.Errorf("%d lost updates", lost)
	}
	if stats.Sections.Load() == 0 {
		t.Error("no critical section completed")
	}
	if duringFault == 0 {
		t.Errorf("no critical section completed while only %d of %d nodes were faulty", len(faulty), cl.N())
	}

	took, err := harness.Recover(t.Context(), cl.URLs(), 2*harness.TTL)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after the heal, every mode granted: %s", harness.FormatTook(took))
}

// faultTimeline warms up, injects the fault for faultFor, heals it and
// cools down. It returns the sections completed while the fault lasted.
func faultTimeline(ctx context.Context, inject, heal func(context.Context) error, stats *workload.Stats) (int64, error) {
	if err := harness.Sleep(ctx, warmUp); err != nil {
		return 0, err
	}
	if err := inject(ctx); err != nil {
		return 0, err
	}
	before := stats.Sections.Load()
	if err := harness.Sleep(ctx, faultFor); err != nil {
		return 0, err
	}
	during := stats.Sections.Load() - before
	if err := heal(ctx); err != nil {
		return during, err
	}
	return during, harness.Sleep(ctx, cooldown)
}
