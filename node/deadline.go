package node

import (
	"context"
	"errors"
	"strconv"
	"time"
)

// ErrLate: a request reached the node after its deadline, and the node
// changed nothing (see too_late in scripts/call.lua). Its client had given
// up on the answer by then; a release may have come before it.
var ErrLate = errors.New("redlock: the request reached the node after its deadline, and changed nothing")

// deadlineArg is the deadline of a request that takes or renews a hold of
// ttl, on the clock of the node (or shard) serving key: ttl after now, as
// the latest reading of its clock tells, so at most ttl plus half that
// reading's round trip after the request left. A release whose calls' fate
// was unknown leaves a tombstone for ttl plus the node timeout (see
// Tombstone), so a request that lands after the release is refused by the
// tombstone or by its deadline. "0" (none) while the node's clock is
// unknown: no answer has read it yet.
func (n *Node) deadlineArg(ctx context.Context, key string, ttl time.Duration) string {
	c := n.calls.clockFor(ctx, key)
	if c == nil {
		return "0"
	}
	offset, ok := c.anyOffset()
	if !ok {
		return "0"
	}
	return strconv.FormatInt(time.Now().Add(offset+ttl).UnixMilli(), 10)
}

// Tombstone is how long a release records a hold of ttl as released when
// an acquire or renewal of it may still be on its way: until that
// request's deadline has passed (deadlineArg), which is at most ttl and
// half a round trip after it left, a round trip within nodeTimeout.
func Tombstone(ttl, nodeTimeout time.Duration) time.Duration { return ttl + nodeTimeout }
