package redlock

import (
	"context"

	"github.com/quorumlock/redlock/internal/engine"
)

// Semaphore lets at most its count of permits be held at once, over the
// Client's nodes. Each permit is a Lease: renewed by the watchdog, lost
// (ErrLost) when it cannot be renewed, released by Unlock; a permit whose
// holder crashed comes back when its TTL ends. K permits are K slots, each
// an ordinary lock ("<name>:permit<i>"). The count is stored on the nodes:
// another count for the same name is ErrConfig, and a permit whose count
// could not be confirmed for about a TTL is lost (ErrLost). Permits are not
// reentrant; WithFair or WithFencing given to Client.Semaphore is ErrConfig.
// Keep a Semaphore value and reuse it: a new one checks the count again.
// See docs/features.md, "Semaphore: slots and the count".
type Semaphore struct {
	e *engine.Semaphore
}

// Semaphore returns the semaphore called name with permits permits. It is
// safe for concurrent use; options override the Client's defaults for this
// semaphore. Invalid input (an empty name, permits outside 1..1024,
// WithFair, WithFencing, a bad option) is reported by Acquire and
// TryAcquire as ErrConfig.
func (c *Client) Semaphore(name string, permits int, opts ...Option) *Semaphore {
	return &Semaphore{e: c.e.Semaphore(name, permits, opts...)}
}

// Name is the semaphore's name.
func (s *Semaphore) Name() string {
	return s.e.Name()
}

// Acquire waits until it holds a permit or ctx is done. When ctx ends
// first, the error matches both ErrNotAcquired and ctx's error, and no
// permit is left held. While every permit is held it waits on every slot
// at once, as a Mutex's Lock waits (woken by release notices; a holder's
// crash is noticed at its TTL): a waiting Acquire costs as many waiters'
// calls as there are permits, and the value's keeper checks the count
// meanwhile (one call per node every third of the TTL, for all its calls
// and permits). While too few nodes answer it waits too.
func (s *Semaphore) Acquire(ctx context.Context) (*Lease, error) {
	return leaseOf(s.e.Acquire(ctx))
}

// TryAcquire tries the slots once each, one after another from a random
// one, and returns the first permit it gets: on a full semaphore, one
// round per permit. When every permit is held the error matches
// ErrNotAcquired; when too few nodes answered, ErrNoQuorum.
func (s *Semaphore) TryAcquire(ctx context.Context) (*Lease, error) {
	return leaseOf(s.e.TryAcquire(ctx))
}
