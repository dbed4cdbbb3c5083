package node

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// untime splits a timed script's answer (an array that guard.lua's
// timed() ended with the node's seconds and microseconds and the longest
// guard its marker records) into the node's time, that guard and the
// script's own reply, the rest of the array.
func untime(answer any) (time.Time, time.Duration, []any, error) {
	items, ok := answer.([]any)
	if n := len(items); ok && n >= 3 {
		seconds, secondsErr := decimal(items[n-3], 1<<40)
		micros, microsErr := decimal(items[n-2], 999_999)
		longest, longestErr := decimal(items[n-1], uint64(maxGuard/time.Millisecond))
		if secondsErr == nil && microsErr == nil && longestErr == nil {
			return time.Unix(int64(seconds), int64(micros)*1000), time.Duration(longest) * time.Millisecond,
				items[: n-3 : n-3], nil
		}
	}
	return time.Time{}, 0, nil, fmt.Errorf("%w: not a timed answer: %v", ErrBadReply, answer)
}

// maxGuard bounds the longest guard a node may answer: far above any TTL
// (a year) and far from overflow.
const maxGuard = 100 * 365 * 24 * time.Hour

// ClockCheck asks that a call's answer count only while the node's clock
// is not found to run faster than MaxRate times this process's monotonic
// clock. A node whose clock runs fast expires keys early, and a lease
// granted there ends before its holder's validity window does.
type ClockCheck struct {
	// MaxRate is the fastest clock rate tolerated: 1 + the drift factor.
	// 0 turns the check off for the call.
	MaxRate float64
	// Hold is how long after the last finding the node stays out.
	Hold time.Duration
}

func (c ClockCheck) on() bool { return c.MaxRate > 0 }

// strictest combines the checks of calls that share a script call.
func (c ClockCheck) strictest(other ClockCheck) ClockCheck {
	switch {
	case !other.on():
		return c
	case !c.on():
		return other
	}
	return ClockCheck{MaxRate: min(c.MaxRate, other.MaxRate), Hold: max(c.Hold, other.Hold)}
}

// ClockQuarantine is a node's answer discarded because its clock was found
// to run fast (or could not be checked); it matches ErrQuarantined. The
// script ran on the node: it may have granted, so the call's fate counts as
// unknown (see Unknown), and the caller releases what it may have left.
type ClockQuarantine struct {
	// Rate is how many times as fast as this process's clock the node's
	// clock was proven to run at least; 0 when it could not be checked.
	Rate  float64
	Since time.Time // the first finding of this episode (this process's clock)
	Until time.Time // when it votes again, unless found fast again meanwhile
}

func (q *ClockQuarantine) Error() string {
	if q.Rate == 0 {
		return "quarantined: the node's clock could not be checked yet (no earlier reading to compare with: the first failed, or the clock stepped back); the answer is not counted"
	}
	return fmt.Sprintf("quarantined: the node's clock runs at least %.3gx as fast as this client's (found at %s), votes again from %s if in bounds",
		q.Rate, q.Since.UTC().Format(time.RFC3339Nano), q.Until.UTC().Format(time.RFC3339Nano))
}

func (q *ClockQuarantine) Is(target error) bool { return target == ErrQuarantined }

func clockQuarantined(err error) bool {
	var q *ClockQuarantine
	return errors.As(err, &q)
}

const (
	// sampleSpacing and ringSize keep samples of the node's clock spread
	// over the last ringSize*sampleSpacing: a rate over a longer span
	// needs less of the round trip's uncertainty to prove.
	sampleSpacing = 100 * time.Millisecond
	ringSize      = 16
	// clockResolution is what a TIME reading may be off by in itself: the
	// node's microsecond and our reading's rounding. Kept small, so that a
	// first pair of samples one round trip apart already proves a clock
	// three times too fast.
	clockResolution = 100 * time.Microsecond
)

// sample is one reading of the node's clock: TIME ran on the node at some
// instant between sent and got (readings of this process's monotonic
// clock).
type sample struct {
	sent, got time.Time
	node      time.Time
}

// clock judges one node's clock rate against this process's monotonic
// clock from the TIME readings that ride along with the node's calls.
// Between two readings i and j the node's clock advanced node_j - node_i,
// while at most got_j - sent_i passed here: a node that advanced more than
// MaxRate times that (plus clockResolution) runs too fast. The check
// never accuses a node whose clock is in bounds, whatever the round trips
// did, provided this process's monotonic clock runs true.
type clock struct {
	mu   sync.Mutex
	ring []sample // oldest first, sampleSpacing apart
	last sample   // the latest reading (zero: none yet)
	// found is, per MaxRate asked for, when a reading last proved the
	// clock faster than it.
	found   map[float64]time.Time
	episode time.Time // the first finding of the current run of findings
	rate    float64   // the highest rate proven in that run
	lastBad time.Time // the latest finding at any rate
	best    sample    // the reading of the shortest round trip (see offset)
}

// bestSpan is how long the reading of the shortest round trip is kept
// before a newer one replaces it whatever its round trip: offsets drift.
const bestSpan = 10 * time.Second

// keepBest keeps s if its round trip is the shortest of the recent ones,
// or if the two readings disagree by more than their round trips allow:
// the node's clock was stepped, and only the newer one tells its offset.
func (c *clock) keepBest(s sample) {
	if c.best.got.IsZero() || s.got.Sub(s.sent) <= c.best.got.Sub(c.best.sent) || s.got.Sub(c.best.got) > bestSpan ||
		!s.agrees(c.best) {
		c.best = s
	}
}

// agrees reports whether s and o can both be readings of one clock that
// runs with ours: their offsets differ by less than half of each round
// trip, plus clockResolution.
func (s sample) agrees(o sample) bool {
	offset := func(x sample) time.Duration { return x.node.Sub(x.sent.Add(x.got.Sub(x.sent) / 2)) }
	gap := offset(s) - offset(o)
	allowed := s.got.Sub(s.sent)/2 + o.got.Sub(o.sent)/2 + clockResolution
	return gap <= allowed && -gap <= allowed
}

// note keeps s for the offset only: the node's rate is not checked.
func (c *clock) note(s sample) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.keepBest(s)
}

// offset is the node's clock minus this process's wall clock, from the
// reading of the shortest recent round trip (TIME taken halfway through
// it), and that round trip; false when there is no reading.
func (c *clock) offset() (offset, trip time.Duration, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.best.got.IsZero() || time.Since(c.best.got) > bestSpan {
		return 0, 0, false
	}
	trip = c.best.got.Sub(c.best.sent)
	return c.best.node.Sub(c.best.sent.Add(trip / 2)), trip, true
}

// anyOffset is offset without its age limit: a request's deadline
// (deadlineArg) may use a reading minutes old, since clocks drift by
// milliseconds a minute at worst and the deadline's margin is the node
// timeout (Tombstone); a stepped clock is caught by the next reading.
func (c *clock) anyOffset() (offset, trip time.Duration, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.best.got.IsZero() {
		return 0, 0, false
	}
	trip = c.best.got.Sub(c.best.sent)
	return c.best.node.Sub(c.best.sent.Add(trip / 2)), trip, true
}

// baseline reports whether there is a reading to compare the next with.
func (c *clock) baseline() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.last.got.IsZero()
}

// observe adds reading s and returns, per check in checks, nil when the
// call may count, or why not.
func (c *clock) observe(s sample, checks []ClockCheck) []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.found == nil {
		c.found = make(map[float64]time.Time)
	}
	for _, check := range checks {
		if _, known := c.found[check.MaxRate]; check.on() && !known {
			c.found[check.MaxRate] = time.Time{}
		}
	}
	if !c.last.got.IsZero() && s.node.Before(c.last.node) {
		// The node's clock stepped back: harmless for expiry (keys live
		// longer), but readings from before the step would hide a fast
		// rate after it. Start over from this reading.
		c.ring, c.last, c.best = c.ring[:0], sample{}, sample{}
	}
	c.keepBest(s)
	proven, compared := c.provenRate(s)
	now := s.got
	bad := false
	for rate := range c.found {
		if proven > rate {
			c.found[rate], bad = now, true
		}
	}
	if bad {
		if c.lastBad.IsZero() || now.Sub(c.lastBad) > MaxClockHold {
			c.episode, c.rate = now, 0
		}
		c.rate, c.lastBad = max(c.rate, proven), now
	}
	c.keep(s)
	verdicts := make([]error, len(checks))
	for i, check := range checks {
		switch {
		case !check.on():
		case !compared:
			verdicts[i] = &ClockQuarantine{Since: now, Until: now}
		default:
			if at := c.found[check.MaxRate]; !at.IsZero() && now.Sub(at) < check.Hold {
				verdicts[i] = &ClockQuarantine{Rate: c.rate, Since: c.episode, Until: at.Add(check.Hold)}
			}
		}
	}
	return verdicts
}

// provenRate is the fastest rate of the node's clock against ours that s
// proves over the readings kept; compared is false when none is kept.
func (c *clock) provenRate(s sample) (proven float64, compared bool) {
	for i := 0; i <= len(c.ring); i++ {
		earlier := c.last
		if i < len(c.ring) {
			earlier = c.ring[i]
		}
		if earlier.got.IsZero() {
			continue
		}
		compared = true
		if span := s.got.Sub(earlier.sent); span > 0 {
			proven = max(proven, float64(s.node.Sub(earlier.node)-clockResolution)/float64(span))
		}
	}
	return proven, compared
}

// keep makes s the latest reading, and adds it to the ring when it is
// sampleSpacing after the ring's newest.
func (c *clock) keep(s sample) {
	c.last = s
	if len(c.ring) == 0 || s.sent.Sub(c.ring[len(c.ring)-1].sent) >= sampleSpacing {
		if len(c.ring) == ringSize {
			c.ring = append(c.ring[:0], c.ring[1:]...)
		}
		c.ring = append(c.ring, s)
	}
}

// MaxClockHold bounds ClockCheck.Hold; findings further apart than it
// begin a new episode.
const MaxClockHold = 24 * time.Hour
