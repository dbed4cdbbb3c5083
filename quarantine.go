package redlock

import (
	"errors"
	"sync"
	"time"

	"github.com/quorumlock/redlock/node"
)

// QuarantineEvent reports a node that does not vote because it lost its
// data (or is new) less than the restart guard ago (see WithRestartGuard).
// It is reported once per data loss and node, by the first call that met
// the refusal.
type QuarantineEvent struct {
	Node   int
	Addr   string
	Reason error     // matches ErrQuarantined; says when the node lost its data
	Until  time.Time // when the node votes again (its clock)
}

// ErrQuarantined matches a node's refusal to vote after it lost its data:
// errors.Is(err, ErrQuarantined) on a *NodeError, or on ErrNoQuorum's
// error when such a node was among the failing ones.
var ErrQuarantined = node.ErrQuarantined

// quarantines remembers, per node, the last data loss reported, so that a
// node is reported once per loss, not once per refused call.
type quarantines struct {
	mu       sync.Mutex
	reported map[int]time.Time // node → Since of the last reported quarantine
}

// sawQuarantine reports err to the observer and the log when it is a
// node's first refusal for a new data loss.
func (c *Client) sawQuarantine(s *settings, index int, err error) {
	var q *node.Quarantine
	if !errors.As(err, &q) {
		return
	}
	c.quarantines.mu.Lock()
	if c.quarantines.reported == nil {
		c.quarantines.reported = make(map[int]time.Time)
	}
	fresh := !c.quarantines.reported[index].Equal(q.Since)
	c.quarantines.reported[index] = q.Since
	c.quarantines.mu.Unlock()
	if !fresh {
		return
	}
	addr := c.nodes[index].Addr()
	s.logger.Warn("redlock: node lost its data (or is new): it does not vote until the restart guard has passed",
		"node", index, "addr", addr, "since", q.Since, "until", q.Until)
	if hook := s.observer.Quarantined; hook != nil {
		hook(QuarantineEvent{Node: index, Addr: addr, Reason: err, Until: q.Until})
	}
}

// restartGuard is the guard of a Mutex with settings s (see
// WithRestartGuard): as set, or the longest TTL this Client has used.
func (c *Client) restartGuard(s settings) time.Duration {
	for {
		longest := c.longest.Load()
		if int64(s.ttl) <= longest || c.longest.CompareAndSwap(longest, int64(s.ttl)) {
			break
		}
	}
	if s.guardSet {
		return s.restartGuard
	}
	return time.Duration(c.longest.Load())
}
