package engine

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/quorumlock/redlock/internal/core"
	"github.com/quorumlock/redlock/internal/leases"
	"github.com/quorumlock/redlock/reentrant"
)

// RWMutex: see redlock.RWMutex, which documents it.
type RWMutex struct {
	name   string
	writer *Mutex
	reader *Mutex
}

// readersChannel ends the name of the channel on which a writer's release
// tells waiting readers that the lock is free.
const readersChannel = ":readers"

// readerRecheck bounds how long a waiting reader goes without looking:
// a writer that gave up waiting, a handoff that lapsed or ForceUnlock tell
// no reader.
const readerRecheck = 500 * time.Millisecond

// RWMutex implements redlock.Client.RWMutex, which documents it.
func (c *Client) RWMutex(name string, opts ...core.Option) *RWMutex {
	writer := c.newMutex(name, opts, false, func(m *Mutex) { m.target.Keys.Readers = m.target.Keys.Lock + readersChannel })
	readOpts := append(slices.Clip(opts), func(s *core.Settings) { s.Fair, s.Fencing = false, false })
	reader := c.newMutex(name, readOpts, true, nil)
	return &RWMutex{name: name, writer: writer, reader: reader}
}

// Name is the lock's name.
func (rw *RWMutex) Name() string { return rw.name }

// RLock implements redlock.RWMutex.RLock, which documents it.
func (rw *RWMutex) RLock(ctx context.Context) (*Lease, error) {
	return rw.observed(ctx, "RLock", rw.reader, func(stats *callStats) (*Lease, error) { return rw.rlock(ctx, true, stats) })
}

// TryRLock implements redlock.RWMutex.TryRLock, which documents it.
func (rw *RWMutex) TryRLock(ctx context.Context) (*Lease, error) {
	return rw.observed(ctx, "TryRLock", rw.reader, func(stats *callStats) (*Lease, error) { return rw.rlock(ctx, false, stats) })
}

// Lock implements redlock.RWMutex.Lock, which documents it.
func (rw *RWMutex) Lock(ctx context.Context) (*Lease, error) {
	if err := rw.notUpgrade(ctx); err != nil {
		return nil, err
	}
	return rw.writer.lock(ctx, "Lock", "RWMutex", true)
}

// TryLock implements redlock.RWMutex.TryLock, which documents it.
func (rw *RWMutex) TryLock(ctx context.Context) (*Lease, error) {
	if err := rw.notUpgrade(ctx); err != nil {
		return nil, err
	}
	return rw.writer.lock(ctx, "TryLock", "RWMutex", false)
}

// observed runs an RLock or TryRLock call under the Observer's hooks.
func (rw *RWMutex) observed(ctx context.Context, op string, m *Mutex, call func(*callStats) (*Lease, error)) (*Lease, error) {
	return observed(ctx, &m.target.Settings.Observer, m.event(op, "RWMutex"), call)
}

func (rw *RWMutex) rlock(ctx context.Context, wait bool, stats *callStats) (*Lease, error) {
	if ctx != nil && rw.writer.err == nil {
		if owner, ok := reentrant.Owner(ctx); ok && rw.writer.target.Holds(rw.writer.target.Keys.Lock, owner) {
			// A read inside the write hold: another hold of the write lock.
			return leaseOf(rw.writer.acquireStats(ctx, wait, stats))
		}
	}
	return leaseOf(rw.reader.acquireStats(ctx, wait, stats))
}

// notUpgrade refuses the write lock to a caller that holds a read hold.
func (rw *RWMutex) notUpgrade(ctx context.Context) error {
	if ctx == nil {
		return nil // the Mutex reports it
	}
	if readHeld(ctx, rw.reader) != nil {
		return fmt.Errorf("%w: ctx holds a read hold of %q, and a read hold is never upgraded (two readers doing so would wait for each other forever): unlock it, then Lock",
			core.ErrNotAcquired, rw.name)
	}
	return nil
}

// readHolds is the chain of read leases a Context carries, innermost first.
type readHolds struct {
	lease *leases.Lease
	outer *readHolds
}

type readHoldsKey struct{}

func withReadHold(ctx context.Context, l *leases.Lease) context.Context {
	outer, _ := ctx.Value(readHoldsKey{}).(*readHolds)
	return context.WithValue(ctx, readHoldsKey{}, &readHolds{lease: l, outer: outer})
}

// readHeld returns a live read lease of m's lock (the same Client's) that
// ctx carries, or nil.
func readHeld(ctx context.Context, m *Mutex) *leases.Lease {
	holds, _ := ctx.Value(readHoldsKey{}).(*readHolds)
	for ; holds != nil; holds = holds.outer {
		l := holds.lease
		if l.Target.Runtime == m.target.Runtime && l.Target.Keys.Lock == m.target.Keys.Lock && l.Err() == nil {
			return l
		}
	}
	return nil
}
