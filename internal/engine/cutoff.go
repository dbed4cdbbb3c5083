package engine

import "time"

// reach tracks whether a waiting call's attempts reach a quorum of the
// nodes. One that cannot win still heads the queue of the nodes it
// reaches, and holds up every waiter behind it there (fair mode; an
// RWMutex's readers while a writer waits). So its retries back off, and
// once it has been cut off for longer than the queue timeout it yields:
// its attempts take no place in the queues, and their undos pass the lock
// on (docs/features.md, "Waiters cut off from a quorum").
type reach struct {
	since  time.Time // the first attempt of the current run that reached too few nodes; zero: none
	misses int       // attempts in that run
	yields bool      // cut off for longer than the queue timeout
}

// cutOffBackoff is the first wait of a cut-off waiter, past the usual
// pacing; it doubles with each attempt that reaches too few nodes, up to
// cutOffBackoffMax until the waiter yields (a link that drops a few
// replies is no cut: the waiter must come back soon), and up to a third of
// the queue timeout once it yields.
const (
	cutOffBackoff    = 8 * time.Millisecond
	cutOffBackoffMax = 64 * time.Millisecond
)

// note records the outcome o of a failed attempt that asked every node
// (not one lost at the lead node, which asked one, nor one whose nodes
// answered that they do not vote yet: the quarantine's own wait paces
// that), at now. It reports whether the call yields from now on, and did
// not before.
func (r *reach) note(o outcome, need int, patience time.Duration, now time.Time) bool {
	if o.leadLost || o.guardRaised || !o.votesAgain.IsZero() {
		return false
	}
	if o.answered >= need {
		*r = reach{}
		return false
	}
	if r.since.IsZero() {
		r.since = now
	}
	r.misses++
	was := r.yields
	r.yields = now.Sub(r.since) >= patience
	return r.yields && !was
}

// pace is the wait before the next attempt, delay as the mode paced it:
// at least the backoff while cut off. Once it yields that grows to most (a
// third of the queue timeout, no more than the heartbeat), so that the
// waiter sees within as long that it reaches a quorum again.
func (r *reach) pace(delay, most time.Duration) time.Duration {
	if r.misses == 0 {
		return delay
	}
	if !r.yields {
		most = min(most, cutOffBackoffMax)
	}
	return max(delay, min(cutOffBackoff<<min(r.misses-1, 20), most))
}
