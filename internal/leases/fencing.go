package leases

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/quorumlock/redlock/internal/core"
	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/quorum"
)

// Fence gives a new grant its fencing token; granted are the acquire
// round's replies. The token is the highest counter + 1 over the grants'
// answers, or their clock term (clockTerm) if that is higher, written
// back to a quorum only while this lease's hold still holds the lock there
// (node.RaiseHeldFence). Where fewer than a quorum of grants carry
// counters (a lease adopted from the handoff notices), it reads them first
// in a round of its own (node.ReadFence). Why tokens increase, and
// what each step guards against: docs/safety.md, "Why fencing tokens
// increase".
func (l *Lease) Fence(ctx context.Context, granted []quorum.Reply[node.Acquired]) error {
	m := l.Target
	need := m.Settings.QuorumOf(len(m.Nodes))
	fences := votedFences(granted)
	if len(fences) < need {
		var err error
		if fences, err = l.readFences(ctx); err != nil {
			return err
		}
	}
	return l.writeBack(ctx, fences)
}

// votedFences are the counters and clocks the grants answered.
func votedFences(granted []quorum.Reply[node.Acquired]) []node.Fence {
	var fences []node.Fence
	for _, reply := range granted {
		if reply.Vote == quorum.Yes && reply.Value.Fence != nil {
			fences = append(fences, *reply.Value.Fence)
		}
	}
	return fences
}

// readFences reads the counters and clocks of a quorum, in a round that
// starts after the grant.
func (l *Lease) readFences(ctx context.Context) ([]node.Fence, error) {
	m, c := l.Target, l.Target.Runtime
	need := m.Settings.QuorumOf(len(c.Nodes))
	reads := quorum.Start(ctx, m.Settings.RoundTimeout(), len(c.Nodes), need, &c.Background,
		func(ctx context.Context, i int) quorum.Reply[node.Fence] {
			fence, err := c.Nodes[i].ReadFence(ctx, m.Keys.Node())
			if err != nil {
				return quorum.Reply[node.Fence]{Vote: quorum.Failed, Err: err}
			}
			return quorum.Reply[node.Fence]{Vote: quorum.Yes, Value: fence}
		})
	read := reads.Wait(ctx)
	v := VerdictOf(m, read.Replies, need)
	if err := v.Err(nil); err != nil {
		err = fmt.Errorf("%w: fencing counters not read: %w", core.ErrNotAcquired, err)
		if count, stopped := v.Conflicts(); stopped {
			return nil, &StopError{Err: fmt.Errorf("%w (%w on %d of %d nodes: remove the key or use another key prefix)", err, core.ErrKeyConflict, count, v.N)}
		}
		return nil, err
	}
	var fences []node.Fence
	for _, reply := range read.Replies {
		if reply.Vote == quorum.Yes {
			fences = append(fences, reply.Value)
		}
	}
	return fences, nil
}

// raiseHeld is node i's write-back of token: accepted only while this
// lease's hold holds the lock there (refused otherwise).
func (l *Lease) raiseHeld(ctx context.Context, i int, token uint64) quorum.Reply[uint64] {
	m := l.Target
	value, held, err := m.Nodes[i].RaiseHeldFence(ctx, m.Keys.Node(), l.Hold, token)
	switch {
	case err != nil:
		return quorum.Reply[uint64]{Vote: quorum.Failed, Err: err}
	case !held:
		return quorum.Reply[uint64]{Vote: quorum.No}
	}
	return quorum.Reply[uint64]{Vote: quorum.Yes, Value: value}
}

// writeBack gives the lease the token after fences and has a quorum
// accept it within the lease's validity window.
func (l *Lease) writeBack(ctx context.Context, fences []node.Fence) error {
	m, c := l.Target, l.Target.Runtime
	need := m.Settings.QuorumOf(len(c.Nodes))
	token, err := nextToken(fences, time.Since(l.acquired))
	if err != nil {
		return err
	}
	l.token = token
	writes := quorum.Start(ctx, m.Settings.RoundTimeout(), len(c.Nodes), need, &c.Background,
		func(ctx context.Context, i int) quorum.Reply[uint64] { return l.raiseHeld(ctx, i, token) })
	written := writes.Wait(ctx)
	gone := func(v Verdict) error {
		return fmt.Errorf("this lease no longer held the lock on %d of %d nodes", v.refused, v.N)
	}
	if err := VerdictOf(m, written.Replies, need).Err(gone); err != nil {
		return fmt.Errorf("%w: fencing token %d not confirmed: %w", core.ErrNotAcquired, token, err)
	}
	if !time.Now().Before(l.Until()) {
		return fmt.Errorf("%w: fencing token %d confirmed after the validity window ended", core.ErrNotAcquired, token)
	}
	return nil
}

// nextToken is the token after the counters and clocks a quorum answered,
// elapsed after the attempt started: above every counter, and at least
// the clock term.
func nextToken(fences []node.Fence, elapsed time.Duration) (uint64, error) {
	var token uint64
	for _, fence := range fences {
		if fence.Counter >= node.MaxToken {
			return 0, fmt.Errorf("%w: fencing counter %d is at its limit", core.ErrNotAcquired, fence.Counter)
		}
		token = max(token, fence.Counter+1)
	}
	return max(token, clockTerm(fences, elapsed)), nil
}

// clockTerm is the highest clock reading in microseconds, capped at the
// lower median reading plus elapsed (rounded up). Every reading was taken
// after the attempt started, so correct clocks read at most elapsed apart
// (skew aside): one above the cap is a clock ahead, which must not carry
// every later token, and a minority of clocks off cannot move the median.
// Why: docs/safety.md, "Why fencing tokens increase".
func clockTerm(fences []node.Fence, elapsed time.Duration) uint64 {
	if len(fences) == 0 {
		return 0
	}
	readings := make([]uint64, len(fences))
	for i, fence := range fences {
		readings[i] = uint64(max(fence.Clock.UnixMicro(), 0))
	}
	slices.Sort(readings)
	median := readings[(len(readings)-1)/2]
	spread := uint64(max(elapsed, 0)+time.Microsecond-1) / uint64(time.Microsecond)
	return min(readings[len(readings)-1], median+spread)
}
