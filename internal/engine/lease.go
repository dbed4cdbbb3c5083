package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/quorumlock/redlock/internal/core"
	"github.com/quorumlock/redlock/internal/leases"
)

// Lease: see redlock.Lease, which documents it.
type Lease struct {
	held held // *leases.Lease (one Mutex), *permit or *multiLease
	// call and event: the Observer.Call hook of the call that granted it,
	// and that call's event, for its Unlock and Extend (nil: none).
	call  func(context.Context, core.CallEvent) func(core.CallResult)
	event core.CallEvent
}

// held is what a Lease holds: the two kinds share the Lease's methods and
// nothing else.
type held interface {
	Context() context.Context
	Err() error
	Until() time.Time
	Token() uint64
	Owner() string
	Unlock(ctx context.Context) error
	Extend(ctx context.Context) error
}

// Context implements redlock.Lease.Context, which documents it.
func (l *Lease) Context() context.Context { return l.held.Context() }

// Done is closed when the lease is lost or released: Context().Done().
func (l *Lease) Done() <-chan struct{} { return l.held.Context().Done() }

// Err implements redlock.Lease.Err, which documents it.
func (l *Lease) Err() error { return l.held.Err() }

// Until implements redlock.Lease.Until, which documents it.
func (l *Lease) Until() time.Time { return l.held.Until() }

// Token implements redlock.Lease.Token, which documents it.
func (l *Lease) Token() uint64 { return l.held.Token() }

// Owner is the owner id this lease holds the lock for.
func (l *Lease) Owner() string { return l.held.Owner() }

// Unlock implements redlock.Lease.Unlock, which documents it.
func (l *Lease) Unlock(ctx context.Context) error {
	if l == nil || l.held == nil {
		return fmt.Errorf("%w: Unlock of a nil Lease", core.ErrConfig)
	}
	if ctx == nil {
		return fmt.Errorf("%w: nil context", core.ErrConfig)
	}
	return l.observe(ctx, "Unlock", func() error { return l.held.Unlock(ctx) })
}

// Extend implements redlock.Lease.Extend, which documents it.
func (l *Lease) Extend(ctx context.Context) error {
	if l == nil || l.held == nil {
		return fmt.Errorf("%w: Extend of a nil Lease", core.ErrConfig)
	}
	if ctx == nil {
		return fmt.Errorf("%w: nil context", core.ErrConfig)
	}
	return l.observe(ctx, "Extend", func() error { return l.held.Extend(ctx) })
}

// leaseOf puts a Mutex's hold behind a Lease.
func leaseOf(l *leases.Lease, err error) (*Lease, error) {
	if err != nil {
		return nil, err
	}
	return &Lease{held: l}, nil
}
