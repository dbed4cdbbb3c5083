package redlock

import (
	"context"

	"github.com/quorumlock/redlock/internal/engine"
)

// Leader is an election's leader: the value it campaigned with and its
// term. The zero Leader (Term 0) stands for "no leader" in Observe.
type Leader = engine.Leader

// Election elects one leader at a time among its candidates, over the
// Client's nodes. Leadership is a lock (the one called name, with fencing
// on): a leader is a holder of it, so the lock's guarantees are the
// election's: no two leaders with overlapping validity, and a leader's
// term is the lock's fencing token, strictly greater than every earlier
// leader's. The leader is renewed, lost and released as a lease is; what
// it campaigned with is published on the nodes (key "{<name>}:leader")
// for Leader and Observe, kept there a TTL past each publication: it
// expires a TTL after its leader stopped leading. Client.Inspect and
// Client.ForceUnlock work on the election's name as on a lock's.
type Election struct {
	e *engine.Election
}

// Election returns the election called name. It is cheap and safe for
// concurrent use; options override the Client's defaults (WithFencing is
// always on: terms are tokens). Invalid input is reported by Campaign
// and Leader as ErrConfig, and closes Observe's channel at once.
func (c *Client) Election(name string, opts ...Option) *Election {
	return &Election{e: c.e.Election(name, opts...)}
}

// Name is the election's name.
func (e *Election) Name() string {
	return e.e.Name()
}

// Campaign waits until this candidate is the leader, or ctx is done, and
// returns its leadership as a Lease: Token is the term, Context ends when
// leadership is lost (ErrLost) or given up, Unlock resigns. value is
// published for Leader and Observe before Campaign returns; a candidate
// that could not publish it on a quorum resigns and returns the error.
// When ctx ends first (even while the value is being published), the
// error matches ErrNotAcquired and ctx's error, and nothing is left held.
// Every Campaign is a candidate of its own, even with a lease's Context.
func (e *Election) Campaign(ctx context.Context, value string) (*Lease, error) {
	return leaseOf(e.e.Campaign(ctx, value))
}

// Leader reads the current leader: the holder of the election's lock on a
// quorum of nodes, with the value it published. It returns ErrNoLeader
// when no candidate holds it on a quorum, or the holder has not finished
// its Campaign (its value is not published yet); ErrNoQuorum when fewer
// than a quorum of nodes answered. It changes nothing on the nodes.
func (e *Election) Leader(ctx context.Context) (Leader, error) {
	return e.e.Leader(ctx)
}

// Observe streams the leader: the current one first, then each change
// (another term or value), read every tenth of the TTL (at least every
// 10 ms, at most every second). Leader{} (Term 0) means no leader: none
// holds it, the leader was lost or resigned, or fewer than a quorum of
// nodes answered. A leader that is lost shows as such a change, once its
// keys expired on the nodes. The channel is closed when ctx ends or the
// Client closes (at once for an invalid election or a nil ctx). A value
// not received is replaced by the next: a slow reader sees the latest.
func (e *Election) Observe(ctx context.Context) <-chan Leader {
	return e.e.Observe(ctx)
}
