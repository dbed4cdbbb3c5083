package redlock

import (
	"context"
	"fmt"
	"time"

	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/quorum"
)

// fence gives a new grant its fencing token, in two rounds that both start
// after the lock was granted on a quorum:
//
//  1. read: each node answers its fencing counter and its clock; with a
//     quorum of answers, the token is the highest counter + 1, or the
//     highest clock reading in microseconds if that is higher;
//  2. write-back: each node raises its counter to the token (never lowers
//     it); a quorum must confirm before Lock returns.
//
// Why it increases: a lease that ended before this one was granted had its
// token confirmed by a write quorum before its Lock returned, so before
// this read round began; every read quorum meets that write quorum, and a
// node's counter only grows. Reading at vote time instead (in the acquire
// script) is wrong: a vote can be cast before the previous holder's
// write-back and counted after that holder's lease ended, and tokens then
// go backwards under message delay alone (model/README.md shows the trail).
//
// The clock term covers what the counters cannot: nodes that lost them.
// When every node of the read quorum that held the previous token has
// restarted empty since — which the lock's own rule allows only after the
// TTL — the token still exceeds the previous one as long as the nodes'
// wall clocks agree within half the TTL (each token is at most its
// issuer's read time, as long as fewer than one grant per microsecond is
// made, and a restart after the TTL comes at least a TTL after it). So
// the counters are never made to expire: that clock assumption would then
// carry every reuse of a name after a quiet spell, not only restarts.
func (l *lease) fence(ctx context.Context) error {
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
			return &stopError{fmt.Errorf("%w (%w on %d of %d nodes: remove the key or use another key prefix)", err, ErrKeyConflict, count, v.n)}
		}
		return err
	}
	token, err := nextToken(read.Replies)
	if err != nil {
		return err
	}
	l.token = token

	writes := quorum.Start(ctx, m.settings.roundTimeout(), len(c.nodes), need, &c.background,
		func(ctx context.Context, i int) quorum.Reply[uint64] {
			value, err := c.nodes[i].RaiseFence(ctx, m.keys.fence, token)
			if err != nil {
				return quorum.Reply[uint64]{Vote: quorum.Failed, Err: err}
			}
			return quorum.Reply[uint64]{Vote: quorum.Yes, Value: value}
		})
	written := writes.Wait(ctx)
	if err := verdictOf(m, written.Replies, need).err(nil); err != nil {
		return fmt.Errorf("%w: fencing token %d not confirmed: %w", ErrNotAcquired, token, err)
	}
	if !time.Now().Before(l.Until()) {
		return fmt.Errorf("%w: fencing token %d confirmed after the validity window ended", ErrNotAcquired, token)
	}
	return nil
}

// nextToken is the token after the counters and clocks a read quorum
// answered: above every counter, and at least every clock in microseconds.
func nextToken(replies []quorum.Reply[node.Fence]) (uint64, error) {
	var token uint64
	for _, reply := range replies {
		if reply.Vote != quorum.Yes {
			continue
		}
		if reply.Value.Counter >= node.MaxToken {
			return 0, fmt.Errorf("%w: fencing counter %d is at its limit", ErrNotAcquired, reply.Value.Counter)
		}
		token = max(token, reply.Value.Counter+1)
		if micros := reply.Value.Clock.UnixMicro(); micros > 0 {
			token = max(token, uint64(micros))
		}
	}
	return token, nil
}
