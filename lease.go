package redlock

import (
	"context"
	"time"

	"github.com/quorumlock/redlock/internal/engine"
)

// Lease is one hold of a lock: of one Mutex (Mutex.Lock, TryLock) or of
// every part of a MultiMutex. It is safe for concurrent use. Unlock it
// exactly once; a reentrant Lock returns a Lease of its own, unlocked on its
// own.
type Lease struct {
	e *engine.Lease
}

// Context is done when the lease is lost (cause ErrLost: the validity
// window ended without a quorum renewal) or released (cause ErrReleased or
// ErrClosed); context.Cause tells which. It carries the owner, so
// m.Lock(lease.Context()) re-enters. It keeps the values of the ctx given to
// Lock but not its cancellation. A Multi lease's ends when any part's
// does, with that part's cause.
//
// Mutual exclusion holds only while this Context is not done: code under
// the lock must stop acting on the protected resource when it is, and
// should pass Token to the resource where it can (see WithFencing).
func (l *Lease) Context() context.Context {
	return l.e.Context()
}

// Done is closed when the lease is lost or released: Context().Done().
func (l *Lease) Done() <-chan struct{} {
	return l.e.Done()
}

// Err is nil while the lease is held, ErrLost once it was lost, ErrReleased
// after Unlock, ErrClosed after the Client's Close. A Multi lease's is the
// first part's that is not nil.
func (l *Lease) Err() error {
	return l.e.Err()
}

// Until is the end of the validity window known now: no node that granted
// or renewed this lease expires it earlier (given node clocks that run
// fast, against this process's monotonic clock, by less than the drift
// factor). It moves forward with each quorum renewal. Past it, the lease
// is lost; Context is cancelled then, by a timer on this process's
// monotonic clock (timer latency aside). A Multi lease's is the earliest
// of its parts'.
func (l *Lease) Until() time.Time {
	return l.e.Until()
}

// Token is the fencing token of this grant (with WithFencing; 0 without).
// It is greater than the token of any lease of another owner that ended
// (Until passed, or Unlock began) before this one was granted, as long as
// the lock's own assumptions hold (see docs/safety.md). Between overlapping
// holds of one owner (re-entrant holds, WithOwner in two processes) tokens
// are not ordered. A Multi lease's is its first part's (in lock order).
// Give it to the resource the lock protects, and have the resource refuse
// a token lower than one it saw.
func (l *Lease) Token() uint64 {
	return l.e.Token()
}

// Owner is the owner id this lease holds the lock for.
func (l *Lease) Owner() string {
	return l.e.Owner()
}

// Unlock releases this hold. The last hold of the owner deletes the lock
// and wakes waiters. Renewal of this lease stops before Unlock sends
// anything. It returns ErrReleased when the lease was already unlocked,
// ErrNotHeld when the hold was no longer on a quorum of nodes (the lease
// had expired; another owner's lock is left untouched), and ErrNoQuorum
// when too few nodes answered (the holds left expire at their TTL). A
// Multi lease unlocks every part, in reverse lock order.
func (l *Lease) Unlock(ctx context.Context) error {
	return l.inner().Unlock(ctx)
}

// Extend renews the lease to a full TTL on a quorum of nodes, for leases
// without the watchdog. A node that lost the key (restarted empty) gets it
// back when it is free there. Until moves forward only when a quorum
// confirmed within the validity window. It returns ErrLost when the lease
// already expired, ErrNotHeld when another owner holds the lock on too many
// nodes, ErrNoQuorum when too few nodes answered. A Multi lease extends
// every part.
func (l *Lease) Extend(ctx context.Context) error {
	return l.inner().Extend(ctx)
}

// inner is the engine's lease; nil for a nil Lease, which the engine
// refuses with ErrConfig.
func (l *Lease) inner() *engine.Lease {
	if l == nil {
		return nil
	}
	return l.e
}

// leaseOf wraps what the engine granted: a Lease, or the error alone.
func leaseOf(l *engine.Lease, err error) (*Lease, error) {
	if err != nil || l == nil {
		return nil, err
	}
	return &Lease{e: l}, nil
}
