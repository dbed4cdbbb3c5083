package node

import (
	"context"
	"errors"
	"strconv"
	"time"
)

// ErrLate: a request reached the node after its deadline, and the node
// took no hold and re-created none (see too_late in scripts/call.lua). Its
// client had given up on the answer by then; a release may have come
// before it.
// A renewal batch answers it when any item was missing there: the items
// whose holds were there were renewed all the same.
var ErrLate = errors.New("redlock: the request reached the node after its deadline: it took and re-created nothing")

// deadlineArg is the deadline of a request that takes or renews a hold of
// ttl, on the clock of the node (or shard) serving key: ttl after now, as
// the kept reading of its clock tells, less that reading's uncertainty
// (half its round trip), so never later on the node than ttl after the
// request left, however far the node. A release whose calls' fate was
// unknown leaves a tombstone for ttl plus the node timeout (see
// Tombstone), so a request that lands after the release is refused by the
// tombstone or by its deadline. "0" (none) while the node's clock is
// unknown: no answer has read it yet.
func (n *Node) deadlineArg(ctx context.Context, key string, ttl time.Duration) string {
	c := n.calls.clockFor(ctx, key)
	if c == nil {
		return "0"
	}
	offset, trip, ok := c.anyOffset()
	if !ok {
		return "0"
	}
	return strconv.FormatInt(time.Now().Add(offset-trip/2+ttl).UnixMilli(), 10)
}

// Tombstone is how long a release records a hold of ttl as released when
// an acquire or renewal of it may still be on its way: until that
// request's deadline has passed (deadlineArg), at most ttl after it left;
// the node timeout more covers the drift of the node's clock since it was
// read, and the millisecond the deadline is rounded to.
func Tombstone(ttl, nodeTimeout time.Duration) time.Duration { return ttl + nodeTimeout }
