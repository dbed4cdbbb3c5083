package integration

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/redlock/integration/internal/harness"
	"github.com/quorumlock/redlock/integration/internal/nodes"
	"github.com/quorumlock/redlock/internal/checker"
	"github.com/quorumlock/redlock/internal/workload"
)

// The timeline of one fault scenario. The fault lasts two TTLs, so that
// every lease taken before it must be renewed on the healthy majority (or
// be lost) while it lasts, and a killed or stopped node stays down longer
// than the TTL before it comes back empty, as the README's first
// assumption asks.
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

// runFault runs the workload with two Clients on every mode while a
// minority of the nodes is under kind, then heals them. Mutual exclusion
// must hold throughout, locks must keep being granted while the majority
// is up, and every mode must grant within 2×TTL after the heal.
func runFault(t *testing.T, kind nodes.Kind) {
	cl := cluster(t)
	clients, err := harness.Dial(cl.URLs(), 2, harness.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	check := checker.New()
	var stats workload.Stats
	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() {
		workload.Run(ctx, workload.Config{Clients: clients, Workers: 2, Check: check, Options: harness.Options()}, &stats)
	})
	duringFault, faultErr := faultTimeline(t.Context(), cl, kind, &stats)
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
		kind, faulty, stats.Sections.Load(), duringFault, check.Len(), stats.LostLeases.Load(), stats.LockErrors.Load())
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
		t.Errorf("no critical section completed while only %d of %d nodes were down", len(faulty), cl.N())
	}

	took, err := harness.Recover(t.Context(), cl.URLs(), 2*harness.TTL)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after the heal, every mode granted: %s", harness.FormatTook(took))
}

// faultTimeline warms up, puts the faulty nodes under kind for faultFor,
// heals them and cools down. It returns the sections completed while the
// fault lasted.
func faultTimeline(ctx context.Context, cl *nodes.Cluster, kind nodes.Kind, stats *workload.Stats) (int64, error) {
	if err := harness.Sleep(ctx, warmUp); err != nil {
		return 0, err
	}
	for _, i := range faulty {
		if err := cl.Inject(ctx, i, kind); err != nil {
			return 0, err
		}
	}
	before := stats.Sections.Load()
	if err := harness.Sleep(ctx, faultFor); err != nil {
		return 0, err
	}
	during := stats.Sections.Load() - before
	if err := cl.HealAll(ctx); err != nil {
		return during, err
	}
	return during, harness.Sleep(ctx, cooldown)
}
