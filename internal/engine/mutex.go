package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/quorumlock/redlock/internal/core"
	"github.com/quorumlock/redlock/internal/leases"
	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/pubsub"
	"github.com/quorumlock/redlock/quorum"
	"github.com/quorumlock/redlock/reentrant"
)

// Mutex: see redlock.Mutex, which documents it.
type Mutex struct {
	target *leases.Target // what a lease of this mutex knows of its lock
	client *Client
	mode   mode  // plain, fair, or an RWMutex's read side
	err    error // invalid configuration, reported by Lock and TryLock
}

// Name is the lock's name.
func (m *Mutex) Name() string { return m.target.LockName }

// Lock implements redlock.Mutex.Lock, which documents it.
func (m *Mutex) Lock(ctx context.Context) (*Lease, error) {
	return m.lock(ctx, "Lock", "Mutex", true)
}

// TryLock implements redlock.Mutex.TryLock, which documents it.
func (m *Mutex) TryLock(ctx context.Context) (*Lease, error) {
	return m.lock(ctx, "TryLock", "Mutex", false)
}

// gaveUp is the error of a Lock whose ctx ended: it matches ErrNotAcquired,
// the ctx's error, and the last attempt's error when there was one.
func gaveUp(ctx context.Context, last error) error {
	reason := ctx.Err()
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, reason) {
		reason = fmt.Errorf("%w (%w)", reason, cause)
	}
	if last == nil {
		return fmt.Errorf("%w: %w", core.ErrNotAcquired, reason)
	}
	return fmt.Errorf("%w: %w (last attempt: %w)", core.ErrNotAcquired, reason, last)
}

// lockCall is the state of one Lock or TryLock call.
type lockCall struct {
	m       *Mutex
	owner   string
	wait    bool
	gated   bool            // holds an entry of the Client's gate
	ticket  int64           // this waiter's place in the queue
	watcher *pubsub.Watcher // release notices, once waiting
	// unconfirmed: watcher's subscription went out with the first attempt,
	// not before it; a failed attempt waits for it, then tries again.
	unconfirmed bool
	granted     quorum.Tally[node.Acquired] // the winning round, for fair clean-up
	undos       []<-chan struct{}           // undos of failed attempts still running
	nested      bool                        // a read hold inside a read hold of ctx
	handoff     *handoff                    // the locks handed to this waiter (nil: none taken from notices)
	id          string                      // this call's: its attempts' holds are "<id>.<n>"
	attempts    int                         // attempts made
	reach       reach                       // whether its attempts reach a quorum (see reach)
	// ended: finish has begun. A release of one of its attempts that
	// lands later (the undo where the acquire timed out, retried) is
	// followed by a leave (leases.Target.ReleaseNode).
	ended atomic.Bool
}

// nextHold is the hold id of k's next attempt: "<call id>.<n>", n counting
// from 1, so that a node can tell a later attempt of the call from an
// earlier one, and from another call's (see handed_rule in guard.lua).
func (k *lockCall) nextHold() string {
	k.attempts++
	return k.id + "." + strconv.Itoa(k.attempts)
}

// undoing records the undo of a failed attempt, running in the
// background until done is closed; those already finished are dropped.
func (k *lockCall) undoing(done <-chan struct{}) {
	k.undos = slices.DeleteFunc(k.undos, func(undo <-chan struct{}) bool {
		select {
		case <-undo:
			return true
		default:
			return false
		}
	})
	k.undos = append(k.undos, done)
}

func (m *Mutex) acquire(ctx context.Context, wait bool) (*leases.Lease, error) {
	return m.acquireStats(ctx, wait, nil)
}

// acquireStats is acquire, recording its rounds in stats.
func (m *Mutex) acquireStats(ctx context.Context, wait bool, stats *callStats) (*leases.Lease, error) {
	c := m.client
	if err := c.runtime.BeginCall(ctx, m.err); err != nil {
		return nil, err
	}
	defer c.runtime.End()
	began := time.Now()
	k, err := m.newCall(ctx, wait)
	if err != nil {
		return nil, err
	}
	if err := k.enter(ctx); err != nil {
		return nil, err
	}
	lease, err := m.rounds(ctx, k, stats, began)
	if err != nil && !k.ended.Load() {
		k.finish(ctx, nil) // nothing of this call may stay locked when it returns
	}
	return lease, err
}

// rounds runs call k's attempts until one is granted (won finishes k) or
// k ends with an error (the caller finishes k).
func (m *Mutex) rounds(ctx context.Context, k *lockCall, stats *callStats, began time.Time) (*leases.Lease, error) {
	pacer := m.newPacer()
	contended := false // the last attempt split the votes or lost the lead
	var last error     // what the last attempt saw, for the error of a Lock that gives up
	raises := 0        // attempts retried at once under a longer guard
	for {
		if err := ctx.Err(); err != nil {
			return nil, gaveUp(ctx, last)
		}
		// A lock handed to this waiter by a quorum is taken at once;
		// otherwise another round.
		lease, outcome := m.adopt(ctx, k)
		if lease == nil && outcome.err == nil {
			lease, outcome = m.attempt(ctx, k, contended)
			stats.round(outcome)
		}
		if lease != nil {
			return m.won(ctx, k, lease, outcome.votes, began, last)
		}
		if ctx.Err() != nil {
			// Given up during the round: say so, and what it saw.
			return nil, gaveUp(ctx, telling(outcome.err, last))
		}
		// An attempt the deadline cut short tells less than the one before it.
		last = telling(outcome.err, last)
		if outcome.guardRaised && raises < len(m.client.runtime.Nodes) {
			raises++ // each raise is a longer record some node answered
			continue
		}
		if err := k.ends(ctx, outcome); err != nil {
			return nil, err
		}
		if k.reach.note(outcome, m.target.Need(), m.target.Settings.QueueTimeout, time.Now()) {
			continue // yields from now on: at once, so that its places go now
		}
		if k.subscribeFirst(ctx, outcome) {
			continue
		}
		delay, ok := pacer.next(outcome)
		if !ok {
			return nil, outcome.err
		}
		delay, contended = m.mode.pace(delay, outcome)
		delay = k.reach.pace(delay, min(m.target.Queue.Heartbeat(), m.target.Settings.QueueTimeout/3))
		if err := k.sleep(ctx, m.quarantineWait(delay, outcome), last); err != nil {
			return nil, err
		}
	}
}

// newCall makes the state of one Lock or TryLock call: its owner (the
// ctx's, the readers', or a new one) and how it may be handed the lock.
func (m *Mutex) newCall(ctx context.Context, wait bool) (*lockCall, error) {
	owner, fresh, err := m.mode.owner(ctx)
	if err != nil {
		return nil, err
	}
	k := &lockCall{m: m, owner: owner, wait: wait, id: reentrant.NewID()}
	if wait && fresh && m.mode.adopts() {
		// Only an owner id of this call's own: two calls that share one
		// (WithOwner) both write its place on the nodes, so a notice
		// naming one call's attempt says nothing of what the other sent
		// (its claim, and the undo of that claim, could free the lock).
		k.handoff = newHandoff(len(m.client.runtime.Nodes), m.target.Settings.QuorumOf(len(m.client.runtime.Nodes)))
	}
	return k, nil
}

// won ends call k with lease, granted. If ctx ended as it was granted, the
// caller has stopped waiting and would never unlock it: it is given back
// (as x/sync/semaphore does), and the release leaves the gate.
func (m *Mutex) won(ctx context.Context, k *lockCall, lease *leases.Lease, votes int, began time.Time, last error) (*leases.Lease, error) {
	cancelled := ctx.Err() != nil
	k.finish(ctx, lease)
	if cancelled {
		_ = lease.Release(context.WithoutCancel(ctx), core.ErrReleased, true)
		return nil, gaveUp(ctx, last)
	}
	if err := m.client.runtime.Track(lease); err != nil {
		_ = lease.Release(context.WithoutCancel(ctx), core.ErrClosed, true)
		return nil, err
	}
	m.observeAcquired(lease, time.Since(began), votes)
	return lease, nil
}

// ends returns the error that ends a call whose attempt failed with o (a
// TryLock, a configuration or key conflict, every quorum quarantined past
// the deadline); nil when the call waits on.
func (k *lockCall) ends(ctx context.Context, o outcome) error {
	var stop *leases.StopError
	if !k.wait || errors.Is(o.err, core.ErrConfig) || errors.As(o.err, &stop) {
		return o.err
	}
	return quarantinedPast(ctx, o)
}

// subscribeFirst subscribes k, if its watcher is not confirmed yet, and
// reports whether to try again at once: a release between the failed
// attempt and the subscription must not be missed. Not when the watcher
// was confirmed before the attempt failed: a new attempt then only changes
// the hold the queue hands the lock to, and the far nodes' notices naming
// the old one are lost. Quarantined nodes grant nothing before they vote
// again.
func (k *lockCall) subscribeFirst(ctx context.Context, o outcome) bool {
	if k.watcher != nil && !k.unconfirmed {
		return false
	}
	early := k.watcher != nil
	confirmed := k.confirmWatch(ctx)
	return !(early && confirmed) && o.votesAgain.IsZero()
}

// sleep waits delay for the next attempt, or less: a release notice, a
// lock handed over by a quorum. It returns why when ctx ends (last: what
// the last attempt saw) or the Client closes.
func (k *lockCall) sleep(ctx context.Context, delay time.Duration, last error) error {
	timer := time.NewTimer(delay)
	defer timer.Stop()
	var handed <-chan struct{}
	if k.handoff != nil {
		handed = k.handoff.ready
	}
	select {
	case <-k.watcher.Wake():
		if k.handoff != nil {
			k.handoff.await(ctx)
		}
	case <-handed:
	case <-timer.C:
	case <-ctx.Done():
		return gaveUp(ctx, last)
	case <-k.m.client.runtime.Done:
		return core.ErrClosed
	}
	return nil
}

// enter starts the call, as the mutex's mode does.
func (k *lockCall) enter(ctx context.Context) error { return k.m.mode.enter(ctx, k) }

// watch starts waking k on release notices, once its subscription is
// confirmed by a quorum.
func (k *lockCall) watch(ctx context.Context) {
	k.subscribe()
	k.confirmWatch(ctx)
}

// subscribe starts waking k on release notices, and returns while the
// subscription goes out: the first attempt need not wait for it.
func (k *lockCall) subscribe() {
	k.unconfirmed = true
	k.m.mode.subscribe(k)
}

// confirmWatch subscribes k, if it is not, and waits until a quorum of the
// nodes confirmed its subscription. It reports whether it was confirmed
// already.
func (k *lockCall) confirmWatch(ctx context.Context) bool {
	if k.watcher == nil {
		k.subscribe()
	}
	already := true
	if k.unconfirmed {
		already = k.watcher.Confirmed(ctx)
		k.unconfirmed = false
	}
	return already
}

// finish ends the call with lease (nil when it failed).
func (k *lockCall) finish(ctx context.Context, lease *leases.Lease) {
	k.ended.Store(true)
	if lease == nil {
		// Giving up: nothing of this call may stay locked when it returns.
		// A granted call leaves the undos to finish on their own (each
		// bounded by the node timeout): they drop holds of its own owner.
		for _, done := range k.undos {
			<-done
		}
	}
	if k.watcher != nil {
		if k.watchOn(lease) {
			k.watcher.Granted()
		} else {
			k.watcher.Leave(lease != nil)
		}
	}
	k.m.mode.finish(ctx, k, lease)
}

// watchOn reports whether a call that ends with lease keeps watching for
// notices until it has left the nodes' queues (waiters.leaveQueue, which
// then calls unwatch): a call that may take leases from notices, granted,
// learns from the notices still arriving which nodes handed it the lock.
func (k *lockCall) watchOn(lease *leases.Lease) bool { return lease != nil && k.handoff != nil }

// unwatch ends the watching that watchOn kept on.
func (k *lockCall) unwatch() {
	if k.watcher != nil && k.handoff != nil {
		k.watcher.Leave(true)
	}
}

func (m *Mutex) observeAcquired(lease *leases.Lease, wait time.Duration, votes int) {
	if hook := m.target.Settings.Observer.Acquired; hook != nil {
		hook(core.AcquiredEvent{Name: m.target.LockName, Owner: lease.Owner(), Wait: wait, Votes: votes})
	}
}

// lock is Lock (wait) or TryLock of m, as a kind's op, observed.
func (m *Mutex) lock(ctx context.Context, op, kind string, wait bool) (*Lease, error) {
	return observed(ctx, &m.target.Settings.Observer, m.event(op, kind), func(stats *callStats) (*Lease, error) {
		return leaseOf(m.acquireStats(ctx, wait, stats))
	})
}
