package redlock

import (
	"context"
	"fmt"
	"time"

	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/quorum"
)

// fence gives a new grant its fencing token. granted are the acquire
// round's replies. Where a quorum of its grants answered their node's
// fencing counter and clock with the vote (WithFencing asks every acquire
// script for them), that costs one more round:
//
//   - the token is the highest counter + 1 over those grants, or the
//     highest clock reading in microseconds if that is higher;
//   - write-back: each node raises its counter to the token (never lowers
//     it), but only while this lease's hold still holds the lock there
//     (node.RaiseHeldFence); a quorum must accept before Lock returns.
//
// Why it increases: a lease of another owner that ended before this one
// was granted had its write-back accepted by a quorum W before its Lock
// returned, each node of W while that lease's hold was there. This
// grant's quorum meets W at some node, where this vote found the lock
// free of that owner: so it came after that hold left the node, after the
// write-back there, and read a counter at least that token; a node's
// counter only grows. (Or the vote came before that hold arrived: then
// this hold left the node first, by its release, its expiry or a restart,
// each after this lease's validity, so this lease did not come later.)
// The write-back must also end within the validity window, or a key
// expired meanwhile breaks the argument (model: EXPIRY with NOVALID).
// Without the hold check the argument fails: a
// write-back may land where the other vote came first, and tokens then go
// backwards under message delay alone (model/fencing.pml, NOOWNER). So
// does reading the counter at vote time with an unchecked write-back.
//
// Where the grants carry no counters (a lease adopted from the handoff
// notices, adopt.go: no acquire reply of its hold), fence reads the
// counters in a round of its own that starts after the grant
// (node.ReadFence), three rounds in all. Its write-back is checked too:
// unchecked, it could land where a vote of a two-round grant came first,
// and the argument above would fail for that grant (model: UNCHECKEDREAD).
//
// The clock term covers what the counters cannot: nodes that lost them.
// When every node of the quorum that held the previous token has
// restarted empty since — which the lock's own rule allows only after the
// TTL — the token still exceeds the previous one as long as the nodes'
// wall clocks agree within half the TTL (each token is at most its
// issuer's latest read, as long as fewer than one grant per microsecond is
// made, every read is before its write-back, and a restart after the TTL
// comes at least a TTL after it). So the counters are never made to
// expire: that clock assumption would then carry every reuse of a name
// after a quiet spell, not only restarts.
func (l *lease) fence(ctx context.Context, granted []quorum.Reply[node.Acquired]) error {
	m := l.mutex
	need := m.settings.quorumOf(len(m.client.nodes))
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
func (l *lease) readFences(ctx context.Context) ([]node.Fence, error) {
	m, c := l.mutex, l.mutex.client
	need := m.settings.quorumOf(len(c.nodes))
	reads := quorum.Start(ctx, m.settings.roundTimeout(), len(c.nodes), need, &c.background,
		func(ctx context.Context, i int) quorum.Reply[node.Fence] {
			fence, err := c.nodes[i].ReadFence(ctx, m.keys.node())
			if err != nil {
				return quorum.Reply[node.Fence]{Vote: quorum.Failed, Err: err}
			}
			return quorum.Reply[node.Fence]{Vote: quorum.Yes, Value: fence}
		})
	read := reads.Wait(ctx)
	v := verdictOf(m, read.Replies, need)
	if err := v.err(nil); err != nil {
		err = fmt.Errorf("%w: fencing counters not read: %w", ErrNotAcquired, err)
		if count, stopped := v.conflicts(); stopped {
			return nil, &stopError{fmt.Errorf("%w (%w on %d of %d nodes: remove the key or use another key prefix)", err, ErrKeyConflict, count, v.n)}
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
func (l *lease) raiseHeld(ctx context.Context, i int, token uint64) quorum.Reply[uint64] {
	m := l.mutex
	value, held, err := m.client.nodes[i].RaiseHeldFence(ctx, m.keys.node(), l.hold, token)
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
func (l *lease) writeBack(ctx context.Context, fences []node.Fence) error {
	m, c := l.mutex, l.mutex.client
	need := m.settings.quorumOf(len(c.nodes))
	token, err := nextToken(fences)
	if err != nil {
		return err
	}
	l.token = token
	writes := quorum.Start(ctx, m.settings.roundTimeout(), len(c.nodes), need, &c.background,
		func(ctx context.Context, i int) quorum.Reply[uint64] { return l.raiseHeld(ctx, i, token) })
	written := writes.Wait(ctx)
	gone := func(v verdict) error {
		return fmt.Errorf("this lease no longer held the lock on %d of %d nodes", v.refused, v.n)
	}
	if err := verdictOf(m, written.Replies, need).err(gone); err != nil {
		return fmt.Errorf("%w: fencing token %d not confirmed: %w", ErrNotAcquired, token, err)
	}
	if !time.Now().Before(l.Until()) {
		return fmt.Errorf("%w: fencing token %d confirmed after the validity window ended", ErrNotAcquired, token)
	}
	return nil
}

// nextToken is the token after the counters and clocks a quorum answered:
// above every counter, and at least every clock in microseconds.
func nextToken(fences []node.Fence) (uint64, error) {
	var token uint64
	for _, fence := range fences {
		if fence.Counter >= node.MaxToken {
			return 0, fmt.Errorf("%w: fencing counter %d is at its limit", ErrNotAcquired, fence.Counter)
		}
		token = max(token, fence.Counter+1)
		if micros := fence.Clock.UnixMicro(); micros > 0 {
			token = max(token, uint64(micros))
		}
	}
	return token, nil
}
