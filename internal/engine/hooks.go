package engine

import "time"

// Hooks for the root package's tests (its export_test.go): they reach what
// a test must set or read and the public API does not offer.

// SetLocalClock replaces the process clock c's fair-mode tickets start from.
func SetLocalClock(c *Client, local func() time.Time) { c.clock.Local = local }

// SetHandoffGrace sets handoffGrace and returns the old value. Clients'
// goroutines read it unsynchronized: set it before making any.
func SetHandoffGrace(d time.Duration) time.Duration {
	old := handoffGrace
	handoffGrace = d
	return old
}

// CloseGrace is how long c's Close would let calls still out finish.
func CloseGrace(c *Client) time.Duration { return c.closeGrace() }

// NodeRTTs is what c learned of each node's round trip (0: nothing yet).
func NodeRTTs(c *Client) []time.Duration {
	rtts := make([]time.Duration, len(c.runtime.Nodes))
	for i, n := range c.runtime.Nodes {
		rtts[i], _ = n.RTT()
	}
	return rtts
}
