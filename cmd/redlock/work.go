package main

import (
	"context"
	"errors"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/internal/checker"
)

// workerResult is what one worker saw. Each worker writes only its own, and
// the report reads them after every worker has returned.
type workerResult struct {
	kind       int             // index into session.kinds
	client     int             // index into session.clients
	waits      []time.Duration // time spent in each successful Lock
	lockErrs   int
	unlockErrs int
	lostLeases int // leases whose Context ended before the write
	lastErr    error
}

// worker takes its kind's lock over and over until ctx ends. Each grant
// goes to the checker with the interval in which this worker could act.
func (s *session) worker(ctx context.Context, r *workerResult) {
	kind := s.kinds[r.kind]
	var opts []redlock.Option
	if kind.fair {
		opts = append(opts, redlock.WithFair())
	}
	mutex := s.clients[r.client].Mutex(kind.name, opts...)
	for ctx.Err() == nil {
		began := time.Now()
		lease, err := mutex.Lock(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return // the demo is over
			}
			r.lockErrs, r.lastErr = r.lockErrs+1, err
			pause(ctx, 10*time.Millisecond)
			continue
		}
		acquired := time.Now()
		kind.handoffs.granted(began, acquired)
		r.waits = append(r.waits, acquired.Sub(began))

		// The critical section: a read-modify-write with a pause in the
		// middle, so that two holders at once would lose an update. The
		// write is skipped when the lease ended meanwhile: past its Context
		// the holder may no longer act (see doc.go).
		value := kind.counter.Load()
		time.Sleep(time.Millisecond)
		if lease.Context().Err() == nil {
			kind.counter.Store(value + 1)
			kind.sections[r.client].Add(1)
		} else {
			r.lostLeases++
		}

		released := time.Now()
		s.check.Record(checker.Grant{
			Name: kind.name, Owner: lease.Owner(), Token: lease.Token(),
			Acquired: acquired, Released: released, Until: lease.Until(),
		})
		kind.handoffs.unlocking(released)
		// Unlock is not tied to ctx: a Ctrl-C still gives the lock back.
		if err := lease.Unlock(context.Background()); err != nil {
			r.unlockErrs, r.lastErr = r.unlockErrs+1, err
		}
	}
}

// pause sleeps for d or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
}

// reentrancy shows that an owner re-enters a lock it holds by passing its
// lease's Context to Lock, and that the lock stays taken for everyone else
// until every hold is unlocked: the hold count lives in Redis.
func (s *session) reentrancy(ctx context.Context) {
	a, b := s.clients[0].Mutex(reentrantLock), s.clients[1].Mutex(reentrantLock)
	say := func(format string, args ...any) { s.printf("reentrancy: "+format, args...) }

	outer, err := a.Lock(ctx)
	if err != nil {
		s.interruptedOr(ctx, "client A Lock: %v", err)
		return
	}
	outerAt := time.Now()
	say("client A locked %q: 1 hold", reentrantLock)
	inner, err := a.Lock(outer.Context()) // the Context carries A's owner
	if err != nil {
		s.interruptedOr(ctx, "client A re-entry: %v", err)
		s.unlock(outer, outerAt)
		return
	}
	innerAt := time.Now()
	if inner.Owner() != outer.Owner() {
		s.fail("reentrancy: re-entry got a new owner")
	}
	say("client A locked it again with lease.Context(): same owner, 2 holds")
	s.expectRefused(ctx, b, "2 holds left, so the lock is still taken")

	s.unlock(inner, innerAt)
	say("client A unlocked the inner lease: 1 hold left")
	s.expectRefused(ctx, b, "1 hold left, so the lock is still taken")

	s.unlock(outer, outerAt)
	say("client A unlocked the outer lease: 0 holds, the lock is free")
	lease, err := b.TryLock(ctx)
	if err != nil {
		s.interruptedOr(ctx, "reentrancy: client B TryLock after both unlocks: %v", err)
		return
	}
	say("client B TryLock: acquired")
	s.unlock(lease, time.Now())
}

// expectRefused checks that a TryLock by another client fails with
// ErrNotAcquired (not, say, ErrNoQuorum, which would prove nothing).
func (s *session) expectRefused(ctx context.Context, m *redlock.Mutex, why string) {
	lease, err := m.TryLock(ctx)
	switch {
	case err == nil:
		s.fail("reentrancy: client B TryLock acquired a lock client A still holds")
		s.unlock(lease, time.Now())
	case errors.Is(err, redlock.ErrNotAcquired) && ctx.Err() == nil:
		s.printf("reentrancy: client B TryLock: ErrNotAcquired (%s)", why)
	default:
		s.interruptedOr(ctx, "reentrancy: client B TryLock: %v", err)
	}
}

// unlock records a reentrancy-phase grant in the checker and unlocks it.
func (s *session) unlock(lease *redlock.Lease, acquired time.Time) {
	s.check.Record(checker.Grant{
		Name: reentrantLock, Owner: lease.Owner(), Token: lease.Token(),
		Acquired: acquired, Released: time.Now(), Until: lease.Until(),
	})
	if err := lease.Unlock(context.Background()); err != nil {
		s.fail("reentrancy: unlock: %v", err)
	}
}

// interruptedOr reports a failure unless ctx ended (then the error is only
// the demo stopping).
func (s *session) interruptedOr(ctx context.Context, format string, args ...any) {
	if ctx.Err() == nil {
		s.fail(format, args...)
	}
}

// nodeFailure kills a minority of the nodes while the workers contend,
// checks that sections still complete, and restarts the nodes empty at
// restartAt. A minority is (N-1)/2 nodes: for even N, N/2 nodes would leave
// exactly half, which is no quorum.
func (s *session) nodeFailure(ctx context.Context, restartAt time.Duration) {
	n := len(s.servers)
	victims := s.servers[n-(n-1)/2:]
	if len(victims) == 0 {
		s.printf("node failure: skipped: %d node(s) leave no minority to kill", n)
		return
	}
	s.setPhase("node failure")
	for i, server := range victims {
		if err := server.Kill(); err != nil {
			s.fail("node failure: kill node %d: %s", n-len(victims)+i, firstLine(err))
		}
	}
	killed := time.Now()
	before := s.sectionsDone()
	s.printf("node failure: killed %d of %d nodes (SIGKILL); %d remain, quorum %d: locks keep working",
		len(victims), n, n-len(victims), n/2+1)

	if !s.sleepUntil(ctx, restartAt) {
		return // cleanup stops whatever still runs
	}
	during := s.sectionsDone() - before
	if during == 0 {
		s.fail("node failure: no section completed while %d of %d nodes were down", len(victims), n)
	}
	for i, server := range victims {
		if err := server.Restart(false); err != nil {
			s.fail("node failure: restart node %d: %s", n-len(victims)+i, firstLine(err))
		}
	}
	s.setPhase("recovered")
	s.printf("node failure: %d sections completed during the outage; restarted %d node(s) empty after %v (> TTL %v)",
		during, len(victims), time.Since(killed).Round(100*time.Millisecond), ttl)
}
