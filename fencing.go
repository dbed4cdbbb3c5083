package redlock

import (
	"context"
	"fmt"
	"time"

	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/quorum"
)

// publishToken makes this grant's fencing token durable before Lock
// returns: the token is the highest counter among the granting nodes, and
// it is written back to every node (raised, never lowered) and confirmed by
// a quorum. Any later grant's quorum then meets a node that has it, so its
// token is higher — as long as a quorum does not lose acknowledged writes,
// the assumption the lock itself rests on. A restarted node's counter
// starts low, but the others' carry the order.
func (l *Lease) publishToken(ctx context.Context, granted quorum.Tally[node.Acquired]) error {
	for _, reply := range granted.Replies {
		if reply.Vote == quorum.Yes && uint64(reply.Value.Fence) > l.token {
			l.token = uint64(reply.Value.Fence)
		}
	}
	m, c := l.mutex, l.mutex.client
	need := m.settings.quorumOf(len(c.nodes))
	round := quorum.Start(ctx, m.settings.roundTimeout(), len(c.nodes), need, &c.background,
		func(ctx context.Context, i int) quorum.Reply[uint64] {
			value, err := c.nodes[i].RaiseFence(ctx, m.keys.fence, l.token)
			if err != nil {
				return quorum.Reply[uint64]{Vote: quorum.Failed, Err: err}
			}
			return quorum.Reply[uint64]{Vote: quorum.Yes, Value: value}
		})
	tally := round.Wait(ctx)
	if tally.Yes >= need && time.Now().Before(l.Until()) {
		return nil
	}
	var nodeErrs []error
	for i, reply := range tally.Replies {
		if reply.Vote == quorum.Failed {
			nodeErrs = append(nodeErrs, c.nodeError(&m.settings, i, reply.Err))
		}
	}
	return fmt.Errorf("%w: fencing token %d not confirmed: %w", ErrNotAcquired, l.token, noQuorum(tally.Yes, need, nodeErrs))
}
