package redlock_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/internal/redistest"
)

// counts are what the observer saw.
type counts struct {
	acquired, released, renewed, lost, nodes int
	votes                                    int
}

// events counts observer calls; hooks run on library goroutines.
type events struct {
	mu sync.Mutex
	counts
}

func (e *events) observer() redlock.Observer {
	count := func(n *int) { e.mu.Lock(); *n++; e.mu.Unlock() }
	return redlock.Observer{
		Acquired: func(ev redlock.AcquiredEvent) {
			e.mu.Lock()
			e.votes = ev.Votes
			e.mu.Unlock()
			count(&e.acquired)
		},
		Released:  func(redlock.ReleasedEvent) { count(&e.released) },
		Renewed:   func(redlock.RenewedEvent) { count(&e.renewed) },
		Lost:      func(redlock.LostEvent) { count(&e.lost) },
		NodeError: func(*redlock.NodeError) { count(&e.nodes) },
	}
}

func (e *events) snapshot() counts {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.counts
}

func TestObserver_andLogger(t *testing.T) {
	cluster := redistest.Start(t, 3)
	ctx := testContext(t)
	var seen events
	var logs bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &logMu}, nil))
	const ttl = 300 * time.Millisecond
	c := newClient(t, cluster, redlock.WithTTL(ttl), redlock.WithNodeTimeout(50*time.Millisecond),
		redlock.WithObserver(seen.observer()), redlock.WithLogger(logger))
	lease := mustLock(t, ctx, c.Mutex("observed"))
	time.Sleep(ttl) // renewed about twice
	mustUnlock(t, lease)
	lost := mustLock(t, ctx, c.Mutex("observed"))
	for _, i := range []int{0, 1} {
		if err := cluster.Nodes[i].Kill(); err != nil {
			t.Fatal(err)
		}
	}
	<-lost.Done()
	// The Context is cancelled first (the holder must stop at once), the
	// hook runs just after.
	waitFor(t, time.Second, "the Lost hook", func() bool { return seen.snapshot().lost == 1 })
	got := seen.snapshot()
	if got.acquired != 2 || got.released != 1 || got.renewed < 1 || got.lost != 1 || got.nodes < 1 || got.votes < 2 {
		t.Fatalf("observed %+v: want 2 acquired (with votes), 1 released, renewals, 1 lost, node errors", got)
	}
	logMu.Lock()
	logged := logs.String()
	logMu.Unlock() // not held across Unlock: the library may log meanwhile
	if !strings.Contains(logged, "lease lost") {
		t.Fatalf("no warning about the lost lease in the log:\n%s", logged)
	}
	_ = lost.Unlock(context.Background())
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
