package engine

import (
	"context"
	"time"

	"github.com/quorumlock/redlock/internal/core"
	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/quorum"
)

// callStats is what an acquire call learned of its rounds, for
// Observer.Call; a nil *callStats records nothing.
type callStats struct {
	votes, answered, attempts int
}

// round records the outcome of one more round.
func (s *callStats) round(o outcome) {
	if s != nil {
		s.votes, s.answered = o.votes, o.answered
		s.attempts++
	}
}

// voted counts the nodes of tally that granted or refused (its No also
// counts failures).
func voted(tally quorum.Tally[node.Acquired]) int {
	n := 0
	for _, reply := range tally.Replies {
		if reply.Vote == quorum.Yes || reply.Vote == quorum.No {
			n++
		}
	}
	return n
}

// observed runs acquire, a call that asks for a lease, under obs's Call and
// NotAcquired hooks, and ties the lease it returns to them (its Unlock and
// Extend are reported too).
func observed(ctx context.Context, obs *core.Observer, e core.CallEvent, acquire func(*callStats) (*Lease, error)) (*Lease, error) {
	if ctx == nil || (obs.Call == nil && obs.NotAcquired == nil) {
		return acquire(nil)
	}
	began := time.Now()
	var done func(core.CallResult)
	if obs.Call != nil {
		done = obs.Call(ctx, e)
	}
	stats := new(callStats)
	lease, err := acquire(stats)
	took := time.Since(began)
	if done != nil {
		r := core.CallResult{Err: err, Votes: stats.votes, Answered: stats.answered, Attempts: stats.attempts, Took: took}
		if lease != nil {
			r.Token = lease.Token()
		}
		done(r)
	}
	if err != nil && obs.NotAcquired != nil {
		obs.NotAcquired(core.NotAcquiredEvent{Op: e.Op, Name: e.Name, Wait: took, Err: err})
	}
	if lease != nil && obs.Call != nil {
		lease.call, lease.event = obs.Call, e
	}
	return lease, err
}

// observe runs op (Unlock or Extend) of l under the Call hook of the
// call that granted l.
func (l *Lease) observe(ctx context.Context, op string, call func() error) error {
	if l.call == nil {
		return call()
	}
	e := l.event
	e.Op = op
	began := time.Now()
	done := l.call(ctx, e)
	err := call()
	if done != nil {
		done(core.CallResult{Err: err, Took: time.Since(began), Token: l.held.Token()})
	}
	return err
}

// event describes a call of m's as it starts.
func (m *Mutex) event(op, kind string) core.CallEvent {
	return core.CallEvent{Op: op, Kind: kind, Name: m.target.LockName, Mode: modeName(m.mode),
		Nodes: len(m.client.runtime.Nodes), Quorum: m.target.Need()}
}

// modeName is the word CallEvent.Mode uses for mode.
func modeName(mode mode) string {
	switch mode.(type) {
	case fairMode:
		return "fair"
	case readMode:
		return "read"
	}
	return "plain"
}
