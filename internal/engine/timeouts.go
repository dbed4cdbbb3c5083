package engine

import "time"

// stretch returns the timeout of a round whose node timeout is floor:
// floor, or longer where a node's learned round trip needs it
// (node.Timeout), so that a far node is not failed for its distance.
func (c *Client) stretch(floor time.Duration) time.Duration {
	timeout := floor
	for _, n := range c.runtime.Nodes {
		timeout = max(timeout, n.Timeout(floor))
	}
	return timeout
}

// closeGrace is how long Close lets calls still out finish before it cuts
// those on Dial's connections: minGrace, or three round trips of the
// farthest node that answered, within the longest round timeout.
func (c *Client) closeGrace() time.Duration {
	grace := minGrace
	for _, n := range c.runtime.Nodes {
		if rtt, ok := n.RTT(); ok {
			grace = max(grace, 3*rtt)
		}
	}
	return min(grace, c.defaults.RoundTimeout())
}
