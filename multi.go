package redlock

import (
	"context"

	"github.com/quorumlock/redlock/internal/engine"
)

// MultiMutex is several mutexes taken as one, all or nothing: for example
// one lock in each of two datacenters' node sets (mutexes of different
// Clients), or several resources of one Client. It is safe for concurrent
// use.
type MultiMutex struct {
	e *engine.MultiMutex
}

// Multi returns the mutexes as one. Lock takes them in a fixed order (by
// key, then by node addresses), the same in every process whatever the
// argument order, so two Multis over the same locks cannot deadlock each
// other. Invalid input (no mutex, a nil one, one listed twice) is reported
// by Lock and TryLock as ErrConfig.
func Multi(mutexes ...*Mutex) *MultiMutex {
	parts := make([]*engine.Mutex, len(mutexes))
	for i, m := range mutexes {
		if m != nil {
			parts[i] = m.e
		}
	}
	return &MultiMutex{e: engine.Multi(parts...)}
}

// Lock takes every mutex, waiting for each in turn, and returns one Lease
// for all, valid until the earliest Until of its parts. On any failure it
// releases what it took and returns the error. The lease is lost as soon as
// any part is lost. A part that runs out while Lock waits for a later one
// makes Lock release every part and start over, until it holds all of them
// valid at once or ctx ends; with the watchdog off, give each part a TTL
// longer than the waits for the parts after it. See docs/features.md,
// "Multi: parts that run out".
func (mm *MultiMutex) Lock(ctx context.Context) (*Lease, error) {
	return leaseOf(mm.e.Lock(ctx))
}

// TryLock makes one attempt at each mutex and gives everything back when
// one fails, or when a part's validity ran out before the last part was
// taken (the error matches ErrNotAcquired and names that part).
func (mm *MultiMutex) TryLock(ctx context.Context) (*Lease, error) {
	return leaseOf(mm.e.TryLock(ctx))
}
