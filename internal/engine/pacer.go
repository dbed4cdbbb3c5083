package engine

import (
	"math/rand/v2"
	"time"

	"github.com/cenkalti/backoff/v4"
)

const (
	// splitBackoff is the first jitter window after a split vote; it doubles
	// with each split in a row up to splitBackoffMax. A few round trips is
	// enough for contenders to stop arriving at the nodes together.
	splitBackoff    = 2 * time.Millisecond
	splitBackoffMax = 64 * time.Millisecond
	// pttlMargin is added to a holder's remaining TTL so that the retry
	// lands after the key expired, not just before.
	pttlMargin = time.Millisecond
)

// pacer decides how long Lock waits after a failed attempt when no release
// notice wakes it first.
type pacer struct {
	retry    backoff.BackOff // WithRetry's, or nil
	fallback backoff.BackOff // when nothing better is known: node errors
	splits   int             // split votes in a row
}

func (m *Mutex) newPacer() *pacer {
	p := &pacer{}
	if m.target.Settings.Retry != nil {
		if b := m.target.Settings.Retry(); b != nil {
			b.Reset()
			p.retry = b
		}
	}
	fallback := backoff.NewExponentialBackOff()
	fallback.InitialInterval = 50 * time.Millisecond
	fallback.MaxInterval = 2 * time.Second
	fallback.RandomizationFactor = 0.5
	fallback.MaxElapsedTime = 0
	fallback.Reset()
	p.fallback = fallback
	return p
}

// next is the wait before the next attempt. It reports false when
// WithRetry's BackOff says Stop.
//
//   - After a split vote: a short random delay, growing with each split in
//     a row, so contenders stop colliding (no livelock).
//   - While another owner holds the lock: its remaining TTL (the notice of
//     its release normally comes first), capped by WithRetry's BackOff;
//     when that owner was seen on fewer than a quorum of nodes (the others
//     silent), no longer than the exponential backoff.
//   - After losing the lead node to another contender: the exponential
//     backoff, capped by the lead's TTL and WithRetry's BackOff.
//   - Otherwise (node errors): WithRetry's BackOff, or an exponential one.
func (p *pacer) next(o outcome) (time.Duration, bool) {
	if o.split {
		p.splits++
		window := min(splitBackoff<<min(p.splits-1, 10), splitBackoffMax)
		return rand.N(window) + 1, true
	}
	p.splits = 0
	wait := time.Duration(-1)
	if o.held && o.minPTTL >= 0 {
		wait = o.minPTTL + pttlMargin
		if !o.seen {
			// Seen on fewer than a quorum, the other nodes silent: it
			// may be an attempt that failed, whose undo wakes no one
			// (its notices come from fewer than a quorum of nodes).
			wait = min(wait, p.fallback.NextBackOff())
		}
	}
	if o.leadLost {
		// Whoever took the lead node may still lose the round (and its
		// partial release wakes no one): look again soon, less often each
		// time, and never later than the lead's TTL.
		wait = p.fallback.NextBackOff()
		if o.minPTTL >= 0 {
			wait = min(wait, o.minPTTL+pttlMargin)
		}
	}
	if p.retry != nil {
		b := p.retry.NextBackOff()
		if b == backoff.Stop {
			return 0, false
		}
		if wait < 0 || b < wait {
			wait = b
		}
	}
	if wait < 0 {
		wait = p.fallback.NextBackOff()
	}
	return wait, true
}
