package main

import (
	"context"
	"fmt"
	"strings"
	"time"
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
				done := kind.sections[0].Load() + kind.sections[1].Load()
				window := kind.handoffs.takeWindow()
				parts = append(parts, fmt.Sprintf("%s %6d %7s  handoff p50 %-8s p99 %-8s", kind.label, done,
					fmt.Sprintf("+%d/s", done-last[i]), short(percentile(window, 50)), short(percentile(window, 99))))
				last[i] = done
			}
			parts = append(parts, "nodes up "+s.nodesUp())
			s.printf("[%3.0fs] %-13s %s", now.Sub(s.start).Seconds(), *s.phase.Load(), strings.Join(parts, " | "))
		}
	}
}
