package leases

import (
	"context"
	"fmt"
	"time"

	"github.com/quorumlock/redlock/internal/core"
	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/quorum"
)

func (l *Lease) Extend(ctx context.Context) error {
	if !l.Target.Begin() {
		return core.ErrClosed
	}
	defer l.Target.End()
	l.ops.Lock()
	defer l.ops.Unlock()
	if !time.Now().Before(l.Until()) {
		l.expire()
	}
	if err := l.Err(); err != nil {
		return err
	}
	m, start := l.Target, time.Now()
	round := l.renewRound(ctx)
	tally := round.Wait(ctx)
	renewed := tally.Yes >= m.Need() && l.renewed(start)
	// Hold ops until every node answered: a renewal still on its way could
	// otherwise land after an Unlock's release and re-create the lock.
	waitAll, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.Settings.RoundTimeout())
	defer cancel()
	round.WaitAll(waitAll)
	if renewed {
		return nil
	}
	if err := l.Err(); err != nil {
		return err
	}
	return l.extendFailed(ctx, tally)
}

// renewRound sends this lease's renewal to every node.
func (l *Lease) renewRound(ctx context.Context) *quorum.Round[node.Renewed] {
	m, c := l.Target, l.Target.Runtime
	batch := []node.Renewal{{Keys: m.Keys.Node(), Owner: l.owner, Hold: l.Hold, TTL: m.Settings.TTL}}
	return quorum.Start(ctx, m.Settings.RoundTimeout(), len(c.Nodes), m.Need(), &c.Background,
		func(ctx context.Context, i int) quorum.Reply[node.Renewed] {
			renewed, err := c.Nodes[i].Renew(ctx, batch)
			l.Called(i, err) // the renewal may still run there, after a release
			switch {
			case err != nil:
				return quorum.Reply[node.Renewed]{Vote: quorum.Failed, Err: err}
			case renewed[0] == node.Refreshed:
				return quorum.Reply[node.Renewed]{Vote: quorum.Yes, Value: renewed[0]}
			case renewed[0] == node.NotALock:
				return quorum.Reply[node.Renewed]{Vote: quorum.Failed, Err: fmt.Errorf("%w: key is not a lock", node.ErrBadReply)}
			}
			return quorum.Reply[node.Renewed]{Vote: quorum.No, Value: renewed[0]}
		})
}

// extendFailed is the error of an Extend whose round did not renew.
func (l *Lease) extendFailed(ctx context.Context, tally quorum.Tally[node.Renewed]) error {
	need := l.Target.Need()
	v := VerdictOf(l.Target, tally.Replies, need)
	switch {
	case v.Yes >= need:
		// A quorum renewed, but only after the validity window ended.
		return fmt.Errorf("%w: the renewal outlasted the validity window", core.ErrLost)
	case ctx.Err() != nil && !v.outOfReach():
		return v.With(context.Cause(ctx))
	}
	return v.Err(func(v Verdict) error {
		released := 0
		for _, reply := range tally.Replies {
			if reply.Vote == quorum.No && reply.Value == node.Revoked {
				released++
			}
		}
		return refusedBy(core.ErrNotHeld, released, v.refused-released, v.N)
	})
}

// renewed moves the validity window after a quorum renewal of a round that
// began at start. It reports false when the lease was lost or released
// meanwhile, or the round outlasted its own window.
func (l *Lease) renewed(start time.Time) bool {
	s := &l.Target.Settings
	until := core.ValidUntil(start, s.TTL, s.DriftFactor)
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil || !now.Before(until) || !now.Before(l.until) {
		return false
	}
	if until.After(l.until) {
		l.until = until
		l.expiry.Reset(until.Sub(now))
	}
	if hook := s.Observer.Renewed; hook != nil {
		hook(core.RenewedEvent{Name: l.Target.LockName, Until: l.until})
	}
	return true
}

// refusedBy is why a renewal cannot succeed, matching sentinel: the
// lease's holds were removed (a ForceUnlock) on released of n nodes, and
// another owner holds the lock on taken.
func refusedBy(sentinel error, released, taken, n int) error {
	if released > 0 {
		return fmt.Errorf("%w: its holds were removed on %d of %d nodes (ForceUnlock)%s",
			sentinel, released, n, alsoTaken(taken))
	}
	return fmt.Errorf("%w: another owner holds it on %d of %d nodes", sentinel, taken, n)
}

// alsoTaken is the tail of a refusal's message that counts the nodes where
// another owner holds the lock, when there are any.
func alsoTaken(nodes int) string {
	if nodes == 0 {
		return ""
	}
	return fmt.Sprintf(", and another owner holds it on %d", nodes)
}
