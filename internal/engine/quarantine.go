package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/quorumlock/redlock/internal/core"
	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/quorum"
)

// restartGuard is the guard of a Mutex with settings s (see
// WithRestartGuard): as set, or the longest TTL this Client has used.
// Each node records the longest guard asked of it and uses that.
func (c *Client) restartGuard(s core.Settings) time.Duration {
	for {
		longest := c.longest.Load()
		if int64(s.TTL) <= longest || c.longest.CompareAndSwap(longest, int64(s.TTL)) {
			break
		}
	}
	if s.GuardSet {
		return s.RestartGuard
	}
	return time.Duration(c.longest.Load())
}

// votesAgain is when need of the nodes that answered replies may vote
// again, as far as their quarantines tell (a node that refused, granted or
// failed otherwise may vote now); zero when that is now.
func votesAgain(replies []quorum.Reply[node.Acquired], need int) time.Time {
	now := time.Now()
	at := make([]time.Time, len(replies))
	for i, reply := range replies {
		at[i] = now
		var lost *node.Quarantine
		var fast *node.ClockQuarantine
		switch {
		case reply.Vote != quorum.Failed:
		case errors.As(reply.Err, &lost) && lost.Left > 0:
			at[i] = now.Add(lost.Left)
		case errors.As(reply.Err, &fast) && fast.Until.After(now):
			at[i] = fast.Until
		}
	}
	if need < 1 || need > len(at) {
		return time.Time{}
	}
	slices.SortFunc(at, time.Time.Compare)
	if !at[need-1].After(now) {
		return time.Time{}
	}
	return at[need-1]
}

// quarantinedPast is the error of a Lock that no quorum of nodes can grant
// before ctx's deadline, its nodes quarantined past it; nil otherwise.
func quarantinedPast(ctx context.Context, o outcome) error {
	deadline, ok := ctx.Deadline()
	if !ok || o.votesAgain.IsZero() || !o.votesAgain.After(deadline) {
		return nil
	}
	return fmt.Errorf("%w: no quorum of nodes votes before the deadline %s; the earliest at %s: %w", core.ErrNotAcquired,
		deadline.Format(time.RFC3339Nano), o.votesAgain.Format(time.RFC3339Nano), o.err)
}

// untilVotes is the wait for quarantined nodes to vote again at at, with a
// margin for the nodes' clocks and the reply's way back.
func untilVotes(at time.Time) time.Duration {
	wait := time.Until(at)
	return wait + wait/100 + 5*time.Millisecond
}

// quarantineWait is the wait before the next attempt when quarantines keep
// a quorum from voting: until they end, but no longer than the queue's
// heartbeat, so a waiter keeps its place on the nodes that vote.
func (m *Mutex) quarantineWait(delay time.Duration, o outcome) time.Duration {
	if o.votesAgain.IsZero() {
		return delay
	}
	wait := untilVotes(o.votesAgain)
	if m.target.Queue != nil {
		wait = min(wait, m.target.Queue.Heartbeat())
	}
	return max(delay, wait)
}
