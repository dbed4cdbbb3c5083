package leases

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/quorumlock/redlock/internal/core"
	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/pubsub"
	"golang.org/x/sync/errgroup"
)

// Runtime is the part of a Client its leases run on: the nodes, the
// Pub/Sub hub, the gates, the goroutines it owns, the calls in progress,
// and the leases it tracks, renews and sweeps.
type Runtime struct {
	Nodes    []*node.Node
	Hub      *pubsub.Hub // release notices → waiter wake-ups
	Gates    Gates       // a line per lock: one contender per Client
	Watchdog *Watchdog   // renews every lease with the watchdog on
	Sweeper  *Sweeper    // releases that nodes did not answer, tried again
	quarantines

	// Background tracks every goroutine the Client starts (stragglers of a
	// round, deferred releases); Close waits for all of them.
	Background sync.WaitGroup

	Done   chan struct{}  // closed by Close: waiters give up
	active sync.WaitGroup // Lock, TryLock, Unlock and Extend calls in progress

	mu     sync.Mutex
	closed bool
	leases map[*Lease]struct{}
}

// NewRuntime returns an open runtime with no nodes yet.
func NewRuntime() *Runtime {
	return &Runtime{leases: make(map[*Lease]struct{}), Done: make(chan struct{})}
}

// Track registers a lease so Close can release it; it fails once closed.
func (r *Runtime) Track(lease *Lease) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return core.ErrClosed
	}
	r.leases[lease] = struct{}{}
	return nil
}

func (r *Runtime) Untrack(lease *Lease) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.leases, lease)
}

// Begin counts an API call in progress, or reports false once closed.
// Each true is matched by End.
func (r *Runtime) Begin() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.active.Add(1)
	return true
}

func (r *Runtime) End() { r.active.Done() }

// BeginCall is the entry of every API call: invalid (the caller's
// configuration error, if any), a nil ctx, or a closed Client refuse it;
// otherwise it is counted as Begin counts it, and matched by End.
func (r *Runtime) BeginCall(ctx context.Context, invalid error) error {
	switch {
	case invalid != nil:
		return invalid
	case ctx == nil:
		return fmt.Errorf("%w: nil context", core.ErrConfig)
	case !r.Begin():
		return core.ErrClosed
	}
	return nil
}

// NodeError wraps a node's failure and tells the observer.
func (r *Runtime) NodeError(s *core.Settings, index int, err error) *core.NodeError {
	nodeErr := &core.NodeError{Node: index, Addr: r.Nodes[index].Addr(), Err: err}
	r.SawQuarantine(s, index, err)
	// Debug: while a node is down every round reports it; the round's
	// outcome (no quorum, a lost lease) is what deserves a warning.
	s.Logger.Debug("redlock: node error", "node", index, "addr", nodeErr.Addr, "err", err)
	if s.Observer.NodeError != nil {
		s.Observer.NodeError(nodeErr)
	}
	return nodeErr
}

// quarantines remembers, per node and kind, the last quarantine reported,
// so that a node is reported once per loss or run of clock findings, not
// once per refused call.
type quarantines struct {
	mu       sync.Mutex
	reported map[quarantineKey]time.Time // → Since of the last reported quarantine
}

type quarantineKey struct {
	node  int
	clock bool
}

// SawQuarantine reports err to the observer and the log when it is a
// node's first refusal for a new data loss or a new run of clock findings.
func (r *Runtime) SawQuarantine(s *core.Settings, index int, err error) {
	var lost *node.Quarantine
	var fast *node.ClockQuarantine
	var key quarantineKey
	var since, until time.Time
	switch {
	case errors.As(err, &lost):
		key, since, until = quarantineKey{node: index}, lost.Since, lost.Until
	case errors.As(err, &fast) && fast.Rate > 0:
		key, since, until = quarantineKey{node: index, clock: true}, fast.Since, fast.Until
	default:
		return
	}
	r.quarantines.mu.Lock()
	if r.quarantines.reported == nil {
		r.quarantines.reported = make(map[quarantineKey]time.Time)
	}
	fresh := !r.quarantines.reported[key].Equal(since)
	r.quarantines.reported[key] = since
	r.quarantines.mu.Unlock()
	if !fresh {
		return
	}
	addr := r.Nodes[index].Addr()
	if key.clock {
		s.Logger.Warn("redlock: node's clock runs fast: its answers do not count until it is back in bounds for a TTL",
			"node", index, "addr", addr, "rate", fast.Rate, "since", since, "until", until)
	} else {
		s.Logger.Warn("redlock: node may have forgotten a lease: it does not vote until the restart guard has passed",
			"node", index, "addr", addr, "why", lost.Why, "since", since, "until", until)
	}
	if hook := s.Observer.Quarantined; hook != nil {
		hook(core.QuarantineEvent{Node: index, Addr: addr, Reason: err, Until: until})
	}
}

// Holds reports whether owner has a live exclusive lease of lock here.
func (r *Runtime) Holds(lock, owner string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for l := range r.leases {
		if l.owner == owner && !l.Target.Mode.Shared() && l.Target.Keys.Lock == lock && l.Err() == nil {
			return true
		}
	}
	return false
}

// Shut closes the runtime to new calls and closes Done; it reports false
// when it was closed already. The calls in progress end soon (waiters see
// Done; a round is bounded by the node timeout): Shut waits for them, so
// that the set of leases is final when it returns.
func (r *Runtime) Shut() bool {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return false
	}
	r.closed = true
	close(r.Done)
	r.mu.Unlock()
	r.active.Wait()
	return true
}

// ReleaseAll releases every lease still tracked, closeParallelism at a
// time, best effort: what a node does not answer expires at its TTL.
func (r *Runtime) ReleaseAll() {
	r.mu.Lock()
	leases := make([]*Lease, 0, len(r.leases))
	for lease := range r.leases {
		leases = append(leases, lease)
	}
	r.mu.Unlock()
	var releases errgroup.Group
	releases.SetLimit(closeParallelism)
	for _, lease := range leases {
		releases.Go(func() error {
			_ = lease.Release(context.Background(), core.ErrClosed, true)
			return nil
		})
	}
	_ = releases.Wait()
}

// closeParallelism bounds how many leases Close releases at once: each
// release is one call per node, and a Client with thousands of leases
// should not open thousands of goroutines and connections at Close.
const closeParallelism = 64
