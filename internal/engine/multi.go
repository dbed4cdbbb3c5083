package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/quorumlock/redlock/internal/core"
	"github.com/quorumlock/redlock/internal/leases"
	"github.com/quorumlock/redlock/reentrant"
)

// MultiMutex: see redlock.MultiMutex, which documents it.
type MultiMutex struct {
	parts []*Mutex // in lock order
	err   error
}

// Multi implements redlock.Multi, which documents it.
func Multi(mutexes ...*Mutex) *MultiMutex {
	mm := &MultiMutex{parts: slices.Clone(mutexes)}
	if len(mutexes) == 0 {
		mm.err = fmt.Errorf("%w: Multi of no mutexes", core.ErrConfig)
		return mm
	}
	for i, m := range mutexes {
		if m == nil {
			mm.err = fmt.Errorf("%w: Multi: mutex %d is nil", core.ErrConfig, i)
			return mm
		}
	}
	slices.SortStableFunc(mm.parts, func(a, b *Mutex) int {
		if n := strings.Compare(a.target.Keys.Lock, b.target.Keys.Lock); n != 0 {
			return n
		}
		return strings.Compare(a.client.nodeAddrs(), b.client.nodeAddrs())
	})
	for i := 1; i < len(mm.parts); i++ {
		a, b := mm.parts[i-1], mm.parts[i]
		if a.client == b.client && a.target.Keys.Lock == b.target.Keys.Lock {
			mm.err = fmt.Errorf("%w: Multi: lock %q listed twice", core.ErrConfig, a.target.LockName)
			return mm
		}
	}
	return mm
}

// Lock implements redlock.MultiMutex.Lock, which documents it.
func (mm *MultiMutex) Lock(ctx context.Context) (*Lease, error) {
	return mm.acquire(ctx, (*Mutex).Lock, true)
}

// TryLock implements redlock.MultiMutex.TryLock, which documents it.
func (mm *MultiMutex) TryLock(ctx context.Context) (*Lease, error) {
	return mm.acquire(ctx, (*Mutex).TryLock, false)
}

func (mm *MultiMutex) acquire(ctx context.Context, take func(*Mutex, context.Context) (*Lease, error), again bool) (*Lease, error) {
	if mm.err != nil {
		return nil, mm.err
	}
	if ctx == nil {
		return nil, fmt.Errorf("%w: nil context", core.ErrConfig)
	}
	owner, ok := reentrant.Owner(ctx)
	if !ok {
		// One owner for every part, so that a Lock with the Multi lease's
		// Context re-enters each of them.
		owner = reentrant.NewID()
		ctx = reentrant.WithOwner(ctx, owner)
	}
	for {
		parts, err := mm.takeAll(ctx, take)
		if err == nil {
			return &Lease{held: newMultiLease(ctx, owner, parts)}, nil
		}
		if !again || !errors.Is(err, errPartRanOut) {
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, gaveUp(ctx, err)
		}
	}
}

// errPartRanOut marks a round of takeAll that failed because a part taken
// earlier was no longer valid: Lock starts over after it.
var errPartRanOut = errors.New("validity ran out")

// takeAll takes every part in lock order. After each one it checks that
// every part taken so far is still valid: waiting for the next part is
// pointless once an earlier one ran out, and a lease returned must be
// valid now. On failure it releases every part it took.
func (mm *MultiMutex) takeAll(ctx context.Context, take func(*Mutex, context.Context) (*Lease, error)) ([]*leases.Lease, error) {
	parts := make([]*leases.Lease, 0, len(mm.parts))
	releaseAll := func() {
		for _, taken := range slices.Backward(parts) {
			_ = taken.Release(context.WithoutCancel(ctx), core.ErrReleased, true)
		}
	}
	for _, m := range mm.parts {
		taken, err := take(m, ctx)
		if err != nil {
			releaseAll()
			return nil, fmt.Errorf("redlock: Multi: %s: %w", m.target.LockName, err)
		}
		parts = append(parts, taken.held.(*leases.Lease)) // a Mutex's Lease holds a *leases.Lease
		if err := ranOut(parts, m.target.LockName); err != nil {
			releaseAll()
			return nil, err
		}
	}
	return parts, nil
}

// ranOut reports the first of parts that is no longer valid now that the
// part last was taken.
func ranOut(parts []*leases.Lease, last string) error {
	now := time.Now()
	for _, part := range parts {
		if until := part.Until(); !now.Before(until) {
			return fmt.Errorf("redlock: Multi: %s: %w: %w %v before %s was taken",
				part.Target.LockName, core.ErrNotAcquired, errPartRanOut, now.Sub(until).Round(time.Millisecond), last)
		}
		if err := part.Err(); err != nil {
			return fmt.Errorf("redlock: Multi: %s: %w: %w (%v) before %s was taken",
				part.Target.LockName, core.ErrNotAcquired, errPartRanOut, err, last)
		}
	}
	return nil
}

// multiLease is the hold of every part of a MultiMutex, behind a Lease.
type multiLease struct {
	owner  string
	parts  []*leases.Lease // in lock order
	ctx    context.Context
	cancel context.CancelCauseFunc
	stops  []func() bool // end the watch on the parts' contexts

	mu       sync.Mutex
	released bool
}

// newMultiLease joins parts into one lease whose Context ends when any
// part's does (with that part's cause).
func newMultiLease(parent context.Context, owner string, parts []*leases.Lease) *multiLease {
	ctx, cancel := context.WithCancelCause(reentrant.WithOwner(context.WithoutCancel(parent), owner))
	l := &multiLease{owner: owner, parts: parts, ctx: ctx, cancel: cancel}
	for _, part := range parts {
		l.stops = append(l.stops, context.AfterFunc(part.Context(), func() { cancel(context.Cause(part.Context())) }))
	}
	return l
}

func (l *multiLease) Context() context.Context { return l.ctx }

func (l *multiLease) Token() uint64 { return l.parts[0].Token() }

func (l *multiLease) Owner() string { return l.owner }

func (l *multiLease) Err() error {
	l.mu.Lock()
	released := l.released
	l.mu.Unlock()
	if released {
		return core.ErrReleased
	}
	for _, part := range l.parts {
		if err := part.Err(); err != nil {
			return err
		}
	}
	return nil
}

func (l *multiLease) Until() time.Time {
	until := l.parts[0].Until()
	for _, part := range l.parts[1:] {
		if u := part.Until(); u.Before(until) {
			until = u
		}
	}
	return until
}

// Unlock unlocks every part, in reverse lock order.
func (l *multiLease) Unlock(ctx context.Context) error {
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return core.ErrReleased
	}
	l.released = true
	l.mu.Unlock()
	for _, stop := range l.stops {
		stop()
	}
	var errs []error
	for _, part := range slices.Backward(l.parts) {
		if err := part.Unlock(ctx); err != nil {
			errs = append(errs, fmt.Errorf("redlock: Multi: %s: %w", part.Target.LockName, err))
		}
	}
	l.cancel(core.ErrReleased)
	return core.JoinErrors(errs...)
}

func (l *multiLease) Extend(ctx context.Context) error {
	if err := l.Err(); err != nil {
		return err
	}
	var errs []error
	for _, part := range l.parts {
		if err := part.Extend(ctx); err != nil {
			errs = append(errs, fmt.Errorf("redlock: Multi: %s: %w", part.Target.LockName, err))
		}
	}
	return core.JoinErrors(errs...)
}
