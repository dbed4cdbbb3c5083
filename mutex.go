package redlock

import (
	"context"

	"github.com/quorumlock/redlock/internal/engine"
)

// Mutex is one named lock over the Client's nodes. It holds no state of its
// own between calls: it is cheap, and safe for concurrent use.
type Mutex struct {
	e *engine.Mutex
}

// Name is the lock's name.
func (m *Mutex) Name() string {
	return m.e.Name()
}

// Lock waits until the lock is acquired or ctx is done. The owner is the
// one ctx carries (WithOwner, or a Lease's Context): if that owner already
// holds the lock, Lock re-enters it at once and returns a new Lease for
// the extra hold. Without one, each Lock is a new owner.
//
// When ctx ends first, the error matches both ErrNotAcquired and ctx's
// error. Before Lock returns, every node that may have granted was sent a
// release, each awaited up to the node timeout; a release that a node did
// not answer is retried in the background, and until it lands (or the
// hold's TTL ends) the hold stays on that node.
func (m *Mutex) Lock(ctx context.Context) (*Lease, error) {
	return leaseOf(m.e.Lock(ctx))
}

// TryLock makes one attempt. When another owner holds the lock the error
// matches ErrNotAcquired; when too few nodes answered it matches
// ErrNoQuorum and carries each failing node's *NodeError.
func (m *Mutex) TryLock(ctx context.Context) (*Lease, error) {
	return leaseOf(m.e.TryLock(ctx))
}

// WithOwner returns a copy of ctx that makes owner the owner of the locks
// taken with it. A Lock with a ctx whose owner already holds the lock
// re-enters it (the hold count lives in Redis), so an explicit owner
// re-enters across goroutines, Clients and processes. Choose owners that no
// one else can guess or reuse by accident, e.g. a request id prefixed with
// the service's name. An empty owner makes Lock return ErrConfig.
func WithOwner(ctx context.Context, owner string) context.Context {
	return engine.WithOwner(ctx, owner)
}
