package core

import (
	"context"
	"errors"
	"time"

	"github.com/quorumlock/redlock/node"
)

// Observer: see redlock.Observer, which documents it.
type Observer struct {
	Acquired  func(AcquiredEvent)
	Released  func(ReleasedEvent)
	Renewed   func(RenewedEvent)
	Lost      func(LostEvent)
	NodeError func(*NodeError)
	// Quarantined: a node lost its data (or is new) and does not vote
	// until the restart guard has passed (see WithRestartGuard), or its
	// clock was found to run fast (see WithClockCheck).
	Quarantined func(QuarantineEvent)
	// Call is told of each Lock, TryLock, RLock, TryRLock, Acquire,
	// TryAcquire, Campaign, Unlock and Extend as it starts, with the
	// caller's ctx (a tracer starts its span under the caller's there). The
	// func it returns, unless nil, is called once with the call's result,
	// on the caller's goroutine, before the call returns.
	Call func(ctx context.Context, e CallEvent) func(CallResult)
	// NotAcquired: a call that asked for a lease returned none (refused,
	// cancelled, gave up, or failed). Err says why.
	NotAcquired func(NotAcquiredEvent)
}

// CallEvent describes a call as it starts.
type CallEvent struct {
	Op     string // the method called: "Lock", "TryLock", "RLock", "Unlock", ...
	Kind   string // "Mutex", "RWMutex", "Semaphore" or "Election"
	Name   string
	Mode   string // "plain", "fair" or "read"; "" for a Semaphore
	Nodes  int    // nodes of the Client
	Quorum int    // votes a grant needs
}

// CallResult describes how a call ended.
type CallResult struct {
	Err error
	// Votes and Answered: of the call's last round (Lock and the like
	// only), the nodes that granted, and those that granted or refused
	// (a node that failed or was too slow is in neither).
	Votes, Answered int
	Attempts        int           // rounds the call ran (Lock and the like only)
	Took            time.Duration // from the call to its end: for Lock, the wait
	Token           uint64        // the lease's fencing token (0: fencing off, or no lease)
}

// NotAcquiredEvent describes a call that returned no lease.
type NotAcquiredEvent struct {
	Op   string
	Name string
	Wait time.Duration // from the call to its end
	Err  error         // matches ErrNotAcquired, ErrNoQuorum, ErrConfig, ctx's error, ...
}

// AcquiredEvent describes a grant.
type AcquiredEvent struct {
	Name  string
	Owner string
	Wait  time.Duration // from the Lock call to the grant
	Votes int           // nodes that granted before Lock returned
}

// ReleasedEvent describes an Unlock.
type ReleasedEvent struct {
	Name string
	Held time.Duration
	Err  error // nil, or why the release did not reach a quorum
	Lost bool  // the lease was lost (a LostEvent) before this release
}

// RenewedEvent describes a renewal that reached a quorum.
type RenewedEvent struct {
	Name  string
	Until time.Time
}

// LostEvent describes a lease lost before it was released.
type LostEvent struct {
	Name string
	Err  error
}

// QuarantineEvent: see redlock.QuarantineEvent, which documents it.
type QuarantineEvent struct {
	Node   int
	Addr   string
	Reason error // matches ErrQuarantined; a *node.Quarantine or a *node.ClockQuarantine says why
	// Until is when the node votes again: on its own clock after a data
	// loss, on this process's clock (and only if no further finding
	// comes) after a fast clock.
	Until time.Time
}

// ErrQuarantined: see redlock.ErrQuarantined, which documents it.
var ErrQuarantined = node.ErrQuarantined

// JoinObservers returns one Observer that calls the hooks of each of
// observers in turn (for metrics and tracing at once).
func JoinObservers(observers ...Observer) Observer {
	var o Observer
	o.Acquired = joinHook(observers, func(x Observer) func(AcquiredEvent) { return x.Acquired })
	o.Released = joinHook(observers, func(x Observer) func(ReleasedEvent) { return x.Released })
	o.Renewed = joinHook(observers, func(x Observer) func(RenewedEvent) { return x.Renewed })
	o.Lost = joinHook(observers, func(x Observer) func(LostEvent) { return x.Lost })
	o.NodeError = joinHook(observers, func(x Observer) func(*NodeError) { return x.NodeError })
	o.Quarantined = joinHook(observers, func(x Observer) func(QuarantineEvent) { return x.Quarantined })
	o.NotAcquired = joinHook(observers, func(x Observer) func(NotAcquiredEvent) { return x.NotAcquired })
	var calls []func(context.Context, CallEvent) func(CallResult)
	for _, x := range observers {
		if x.Call != nil {
			calls = append(calls, x.Call)
		}
	}
	if len(calls) > 0 {
		o.Call = func(ctx context.Context, e CallEvent) func(CallResult) {
			var dones []func(CallResult)
			for _, call := range calls {
				if done := call(ctx, e); done != nil {
					dones = append(dones, done)
				}
			}
			return func(r CallResult) {
				for _, done := range dones {
					done(r)
				}
			}
		}
	}
	return o
}

// joinHook is one hook calling every observer's hook that hook picks (nil: none).
func joinHook[E any](observers []Observer, hook func(Observer) func(E)) func(E) {
	var hooks []func(E)
	for _, x := range observers {
		if h := hook(x); h != nil {
			hooks = append(hooks, h)
		}
	}
	if len(hooks) == 0 {
		return nil
	}
	return func(e E) {
		for _, h := range hooks {
			h(e)
		}
	}
}

// Outcome names how a call that returned err ended, in one word for a
// metric's label or a span's attribute: "ok", "cancelled", "no_quorum",
// "refused", "lost", "closed", "config" or "error".
func Outcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "cancelled"
	case errors.Is(err, ErrNoQuorum):
		return "no_quorum"
	case errors.Is(err, ErrNotAcquired):
		return "refused"
	case errors.Is(err, ErrLost):
		return "lost"
	case errors.Is(err, ErrClosed):
		return "closed"
	case errors.Is(err, ErrConfig):
		return "config"
	}
	return "error"
}
