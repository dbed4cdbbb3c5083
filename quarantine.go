package redlock

import (
	"errors"
	"sync"
	"time"

	"github.com/quorumlock/redlock/node"
)

// QuarantineEvent reports a node that does not vote: it lost its data (or
// is new) less than the restart guard ago (see WithRestartGuard), or its
// clock was found to run fast (see WithClockCheck). It is reported once per
// data loss, or run of clock findings, and node, by the first call that
// met the refusal.
type QuarantineEvent struct {
	Node   int
	Addr   string
	Reason error // matches ErrQuarantined; a *node.Quarantine or a *node.ClockQuarantine says why
	// Until is when the node votes again: on its own clock after a data
	// loss, on this process's clock (and only if no further finding
	// comes) after a fast clock.
	Until time.Time
}

// ErrQuarantined matches a node's refusal to vote after it lost its data,
// and an answer not counted because the node's clock runs fast:
// errors.Is(err, ErrQuarantined) on a *NodeError, or on ErrNoQuorum's
// error when such a node was among the failing ones.
var ErrQuarantined = node.ErrQuarantined

// quarantines remembers, per node and kind, the last quarantine reported,
// so that a node is reported once per loss or run of clock findings, not
// once per refused call.
type quarantines struct {
	mu       sync.Mutex
	reported map[quarantineKey]time.Time // → Since of the last reported quarantine
}

type quarantineKey struct {
	node  int
	clock bool
}

// sawQuarantine reports err to the observer and the log when it is a
// node's first refusal for a new data loss or a new run of clock findings.
func (c *Client) sawQuarantine(s *settings, index int, err error) {
	var lost *node.Quarantine
	var fast *node.ClockQuarantine
	var key quarantineKey
	var since, until time.Time
	switch {
	case errors.As(err, &lost):
		key, since, until = quarantineKey{node: index}, lost.Since, lost.Until
	case errors.As(err, &fast) && fast.Rate > 0:
		key, since, until = quarantineKey{node: index, clock: true}, fast.Since, fast.Until
	default:
		return
	}
	c.quarantines.mu.Lock()
	if c.quarantines.reported == nil {
		c.quarantines.reported = make(map[quarantineKey]time.Time)
	}
	fresh := !c.quarantines.reported[key].Equal(since)
	c.quarantines.reported[key] = since
	c.quarantines.mu.Unlock()
	if !fresh {
		return
	}
	addr := c.nodes[index].Addr()
	if key.clock {
		s.logger.Warn("redlock: node's clock runs fast: its answers do not count until it is back in bounds for a TTL",
			"node", index, "addr", addr, "rate", fast.Rate, "since", since, "until", until)
	} else {
		s.logger.Warn("redlock: node lost its data (or is new): it does not vote until the restart guard has passed",
			"node", index, "addr", addr, "since", since, "until", until)
	}
	if hook := s.observer.Quarantined; hook != nil {
		hook(QuarantineEvent{Node: index, Addr: addr, Reason: err, Until: until})
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
