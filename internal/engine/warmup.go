package engine

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/quorumlock/redlock/node"
)

// warmTimeout bounds the warm-up of one node: a new connection and three
// clock readings through a link of a few hundred milliseconds.
const warmTimeout = 3 * time.Second

// warm connects to every node and reads its clock, in the background, so
// that the first Lock pays one round trip per node rather than a new
// connection's four and the clock's first readings (which through a far
// link used to exceed the node timeout and open the node's breaker). Each
// node's result arrives on the returned channel; Close cuts what is left.
func (c *Client) warm() <-chan error {
	results := make(chan error, len(c.runtime.Nodes))
	ctx, cancel := context.WithTimeout(context.Background(), max(warmTimeout, c.defaults.NodeTimeout))
	c.stopWarm = cancel
	var left atomic.Int32
	left.Store(int32(len(c.runtime.Nodes)))
	check := c.defaults.ClockCheck()
	for _, n := range c.runtime.Nodes {
		c.runtime.Background.Go(func() {
			results <- n.Warm(ctx, check)
			if left.Add(-1) == 0 {
				cancel()
			}
		})
	}
	return results
}

// awaitWarm waits until a quorum of nodes answered the warm-up, all of
// them reported, or d passed.
func (c *Client) awaitWarm(results <-chan error, d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	need, answered := c.defaults.QuorumOf(len(c.runtime.Nodes)), 0
	for range c.runtime.Nodes {
		select {
		case err := <-results:
			if node.Answered(err) {
				answered++
			}
			if answered >= need {
				return
			}
		case <-timer.C:
			return
		}
	}
}

// raisedGuard is the longest guard a node has answered, when it is longer
// than carried, the guard a round's calls carried at least (0: it is not,
// or the guard is off): votes cast under carried must not count.
func (c *Client) raisedGuard(guard, carried time.Duration) time.Duration {
	if longest := time.Duration(c.records.Load()); guard > 0 && longest > carried {
		return longest
	}
	return 0
}

// minGrace is Close's least grace for calls still out: a near node's
// round trip, many times over.
const minGrace = 100 * time.Millisecond
