package core

import "time"

// ClockSlack is added to every drift allowance: it covers the millisecond
// granularity of PEXPIRE and a scheduler tick, as in the Redlock paper.
const ClockSlack = 2 * time.Millisecond

// DriftAllowance is how much of a TTL is set aside for node clocks that run
// fast by up to driftFactor.
func DriftAllowance(ttl time.Duration, driftFactor float64) time.Duration {
	return time.Duration(float64(ttl)*driftFactor) + ClockSlack
}

// Validity is what remains of a lease granted with ttl after elapsed time:
//
//	Validity = ttl - elapsed - (ttl*driftFactor + 2ms)
//
// elapsed must come from the monotonic clock, measured from before the first
// request of the round was sent. A lease is usable only while Validity > 0.
// This is the only place the formula lives.
func Validity(ttl, elapsed time.Duration, driftFactor float64) time.Duration {
	return ttl - elapsed - DriftAllowance(ttl, driftFactor)
}

// ValidUntil is the end of the validity window of a round started at start
// (a time.Now() reading, so it carries the monotonic clock): no node that
// took the key in that round expires it before this instant, provided its
// clock runs at most driftFactor fast.
func ValidUntil(start time.Time, ttl time.Duration, driftFactor float64) time.Time {
	return start.Add(Validity(ttl, 0, driftFactor))
}
