package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest/workload"
)

// phases is the demo's timeline, as offsets from the start. The outage
// lasts at least a little longer than the TTL: Redlock is safe across a
// node that restarts empty only if it stays away that long (see doc.go).
// When that stretches the timeline past -duration, the run is extended.
// Nodes given by URL are not the demo's to kill: it says so and goes on
// contending instead.
func (s *session) phases(ctx context.Context) {
	d := s.cfg.duration
	reentryAt := d * 3 / 10
	killAt := d * 4 / 10
	restartAt := killAt + max(d*3/10, ttl+ttl/4)
	endAt := max(d, restartAt+d/10)
	if !s.owned() {
		endAt = d
	}

	if !s.sleepUntil(ctx, reentryAt) {
		return
	}
	s.setPhase("reentrancy")
	s.reentrancy(ctx)
	s.setPhase("contention")

	if !s.sleepUntil(ctx, killAt) {
		return
	}
	if s.owned() {
		s.nodeFailure(ctx, restartAt)
	} else {
		s.printf("node failure: skipped: the nodes were given with -nodes URLs, and the demo kills only nodes it started")
	}
	if !s.sleepUntil(ctx, endAt) {
		return
	}
	s.setPhase("done")
}

// sleepUntil waits until offset after the start; false if ctx ended first.
func (s *session) sleepUntil(ctx context.Context, offset time.Duration) bool {
	return workload.Pause(ctx, time.Until(s.start.Add(offset)))
}

// progress prints one line a second so that a stalled lock (or a phase
// that hurts throughput or handoffs) is visible while it happens. Each
// lock shows its sections, their rate, and the p50/p99 handoff over the
// last second.
func (s *session) progress(ctx context.Context) {
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	last := make([]int64, len(s.kinds))
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-ticker.C:
			parts := make([]string, 0, len(s.kinds)+1)
			for i, kind := range s.kinds {
				done := kind.sections()
				window := kind.handoffs.takeWindow()
				parts = append(parts, fmt.Sprintf("%s %6d %7s  handoff p50 %-8s p99 %-8s", kind.label(), done,
					fmt.Sprintf("+%d/s", done-last[i]), short(percentile(window, 50)), short(percentile(window, 99))))
				last[i] = done
			}
			parts = append(parts, "nodes up "+s.nodesUp())
			s.printf("[%3.0fs] %-13s %s", now.Sub(s.start).Seconds(), *s.phase.Load(), strings.Join(parts, " | "))
		}
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
	s.check.Record(workload.Grant(workload.Plain, reentrantLock, lease, acquired, time.Now()))
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
