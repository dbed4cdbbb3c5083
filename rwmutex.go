package redlock

import (
	"context"

	"github.com/quorumlock/redlock/internal/engine"
)

// RWMutex is a read-write lock over the Client's nodes: many readers at
// once, or one writer. It is safe for concurrent use. The writer's side is
// the Mutex of the same name, with every option of a Mutex; read holds
// share one owner value on the nodes (node.Readers), so the lock's
// guarantee keeps a writer apart from every reader. Writers are preferred:
// a reader is refused while a writer waits. RLock with the Context of a
// read lease, or of a write lease of this Client, re-enters; Lock with a
// read lease's Context fails at once (ErrNotAcquired): no upgrades. Read
// leases have no fencing token (Token is 0) and their Owner is node.Readers.
// See docs/features.md, "Read-write lock: holds, waiting and reentrancy".
type RWMutex struct {
	e *engine.RWMutex
}

// RWMutex returns the read-write lock called name. Options override the
// Client's defaults; WithFair and WithFencing apply to the writer's side
// only. Invalid input is reported by its methods as ErrConfig.
func (c *Client) RWMutex(name string, opts ...Option) *RWMutex {
	return &RWMutex{e: c.e.RWMutex(name, opts...)}
}

// Name is the lock's name.
func (rw *RWMutex) Name() string {
	return rw.e.Name()
}

// RLock waits until it holds a read hold, or ctx is done (then the error
// matches ErrNotAcquired and ctx's error, and nothing is left held).
// Within a read hold (ctx from its lease) it re-enters at once; within the
// write hold of ctx's owner it takes another hold of the write lock.
func (rw *RWMutex) RLock(ctx context.Context) (*Lease, error) {
	return leaseOf(rw.e.RLock(ctx))
}

// TryRLock makes one attempt at a read hold: ErrNotAcquired while a writer
// holds the lock or waits for it.
func (rw *RWMutex) TryRLock(ctx context.Context) (*Lease, error) {
	return leaseOf(rw.e.TryRLock(ctx))
}

// Lock waits until it holds the write lock, or ctx is done; as
// Mutex.Lock. With the Context of a read lease it fails at once.
func (rw *RWMutex) Lock(ctx context.Context) (*Lease, error) {
	return leaseOf(rw.e.Lock(ctx))
}

// TryLock makes one attempt at the write lock; as Mutex.TryLock. With the
// Context of a read lease it fails at once.
func (rw *RWMutex) TryLock(ctx context.Context) (*Lease, error) {
	return leaseOf(rw.e.TryLock(ctx))
}
