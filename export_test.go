package redlock

import (
	"testing"
	"time"
)

// SetLocalClock replaces the process clock c's fair-mode tickets start
// from, as if the process's clock were off.
func SetLocalClock(c *Client, local func() time.Time) { c.clock.Local = local }

// SetHandoffGrace sets how long a waiter waits for the handoff notices
// still on their way (see handoffGrace) until t ends. Call it before t
// makes any Client: the Clients' goroutines read it unsynchronized.
func SetHandoffGrace(t testing.TB, d time.Duration) {
	old := handoffGrace
	handoffGrace = d
	t.Cleanup(func() { handoffGrace = old })
}

// CloseGrace is how long c's Close would let calls still out finish.
func CloseGrace(c *Client) time.Duration { return c.closeGrace() }

// NodeRTTs is what c learned of each node's round trip (0: nothing yet).
func NodeRTTs(c *Client) []time.Duration {
	rtts := make([]time.Duration, len(c.nodes))
	for i, n := range c.nodes {
		rtts[i], _ = n.RTT()
	}
	return rtts
}
