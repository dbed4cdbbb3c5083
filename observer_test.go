package redlock_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest"
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
	cluster := redlocktest.Start(t, 3)
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
		if err := cluster.Servers[i].Kill(); err != nil {
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

// callLog records what Observer.Call and NotAcquired were told.
type callLog struct {
	mu          sync.Mutex
	calls       []string // "Op Kind Mode name → err-or-ok votes/answered"
	results     []redlock.CallResult
	ctxValues   []any
	notAcquired []redlock.NotAcquiredEvent
}

type ctxKey struct{}

func (l *callLog) observer() redlock.Observer {
	return redlock.Observer{
		Call: func(ctx context.Context, e redlock.CallEvent) func(redlock.CallResult) {
			value := ctx.Value(ctxKey{})
			return func(r redlock.CallResult) {
				l.mu.Lock()
				defer l.mu.Unlock()
				l.calls = append(l.calls, e.Op+" "+e.Kind+" "+e.Mode+" "+e.Name)
				l.results = append(l.results, r)
				l.ctxValues = append(l.ctxValues, value)
			}
		},
		NotAcquired: func(e redlock.NotAcquiredEvent) {
			l.mu.Lock()
			l.notAcquired = append(l.notAcquired, e)
			l.mu.Unlock()
		},
	}
}

func TestObserver_callsAreReportedWithTheCallersContext(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := context.WithValue(testContext(t), ctxKey{}, "caller")
	var log callLog
	c := newClient(t, cluster, redlock.WithObserver(log.observer()))
	lease, err := c.Mutex("observed-call", redlock.WithFencing()).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := lease.Extend(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lease.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	want := []string{"Lock Mutex plain observed-call", "Extend Mutex plain observed-call", "Unlock Mutex plain observed-call"}
	if strings.Join(log.calls, "|") != strings.Join(want, "|") {
		t.Fatalf("calls %q, want %q", log.calls, want)
	}
	lock := log.results[0]
	if lock.Err != nil || lock.Votes < 2 || lock.Answered < lock.Votes || lock.Attempts < 1 || lock.Token == 0 || lock.Took <= 0 {
		t.Fatalf("Lock's result %+v: want a grant by a quorum, its token and its time", lock)
	}
	for i, v := range log.ctxValues {
		if v != "caller" {
			t.Fatalf("call %d (%s) was given a ctx without the caller's value: %v", i, log.calls[i], v)
		}
	}
	if len(log.notAcquired) != 0 {
		t.Fatalf("NotAcquired told of %+v for a granted Lock", log.notAcquired)
	}
}

func TestObserver_refusedAndCancelledAcquiresAreReported(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	var log callLog
	c := newClient(t, cluster, redlock.WithObserver(log.observer()))
	holder := mustLock(t, ctx, c.Mutex("observed-refusal"))
	defer holder.Unlock(ctx)
	if _, err := c.Mutex("observed-refusal").TryLock(ctx); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryLock of a held lock: %v", err)
	}
	waiting, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := c.RWMutex("observed-refusal-rw").Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RWMutex("observed-refusal-rw").RLock(waiting); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("RLock under a writer, ctx ended: %v", err)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.notAcquired) != 2 {
		t.Fatalf("NotAcquired told %+v, want the TryLock and the RLock", log.notAcquired)
	}
	try, read := log.notAcquired[0], log.notAcquired[1]
	if try.Op != "TryLock" || !errors.Is(try.Err, redlock.ErrNotAcquired) {
		t.Fatalf("TryLock's event %+v", try)
	}
	if read.Op != "RLock" || !errors.Is(read.Err, context.DeadlineExceeded) || read.Wait < 150*time.Millisecond {
		t.Fatalf("RLock's event %+v: want its ctx's error and its wait", read)
	}
	last := log.results[len(log.results)-1]
	if got := log.calls[len(log.calls)-1]; got != "RLock RWMutex read observed-refusal-rw" || last.Err == nil || last.Attempts < 1 {
		t.Fatalf("last call %q %+v: want the refused RLock, its error and its rounds", got, last)
	}
}
