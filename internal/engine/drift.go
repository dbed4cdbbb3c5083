package engine

import "time"

// clockSlack is added to every drift allowance: it covers the millisecond
// granularity of PEXPIRE and a scheduler tick, as in the Redlock paper.
const clockSlack = 2 * time.Millisecond

// driftAllowance is how much of a TTL is set aside for node clocks that run
// fast by up to driftFactor.
func driftAllowance(ttl time.Duration, driftFactor float64) time.Duration {
	return time.Duration(float64(ttl)*driftFactor) + clockSlack
}

// validity is what remains of a lease granted with ttl after elapsed time:
//
//	validity = ttl - elapsed - (ttl*driftFactor + 2ms)
//
// elapsed must come from the monotonic clock, measured from before the first
// request of the round was sent. A lease is usable only while validity > 0.
// This is the only place the formula lives.
func validity(ttl, elapsed time.Duration, driftFactor float64) time.Duration {
	return ttl - elapsed - driftAllowance(ttl, driftFactor)
}

// validUntil is the end of the validity window of a round started at start
// (a time.Now() reading, so it carries the monotonic clock): no node that
// took the key in that round expires it before this instant, provided its
// clock runs at most driftFactor fast.
func validUntil(start time.Time, ttl time.Duration, driftFactor float64) time.Time {
	return start.Add(validity(ttl, 0, driftFactor))
}
