package main

import (
	"context"
	"time"
)

// phases is the demo's timeline, as offsets from the start. The outage
// lasts at least a little longer than the TTL: Redlock is safe across a
// node that restarts empty only if it stays away that long (see doc.go).
// When that stretches the timeline past -duration, the run is extended.
func (s *session) phases(ctx context.Context) {
	d := s.cfg.duration
	reentryAt := d * 3 / 10
	killAt := d * 4 / 10
	restartAt := killAt + max(d*3/10, ttl+ttl/4)
	endAt := max(d, restartAt+d/10)

	if !s.sleepUntil(ctx, reentryAt) {
		return
	}
	s.setPhase("reentrancy")
	s.reentrancy(ctx)
	s.setPhase("contention")

	if !s.sleepUntil(ctx, killAt) {
		return
	}
	s.nodeFailure(ctx, restartAt)
	if !s.sleepUntil(ctx, endAt) {
		return
	}
	s.setPhase("done")
}

// sleepUntil waits until offset after the start; false if ctx ended first.
func (s *session) sleepUntil(ctx context.Context, offset time.Duration) bool {
	timer := time.NewTimer(time.Until(s.start.Add(offset)))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// progress prints one line a second so that a stalled lock (or a phase
// that hurts throughput) is visible while it happens.
func (s *session) progress(ctx context.Context) {
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	var last int64
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-ticker.C:
			a, b := s.sections[0].Load(), s.sections[1].Load()
			s.printf("[%3.0fs] %-13s sections %6d (A %d, B %d, +%d/s)  nodes up %d/%d",
				now.Sub(s.start).Seconds(), *s.phase.Load(), a+b, a, b, a+b-last, s.nodesUp(), len(s.servers))
			last = a + b
		}
	}
}
