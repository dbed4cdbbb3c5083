package redlock

import (
	"testing"
	"time"

	"github.com/quorumlock/redlock/internal/engine"
)

// SetLocalClock replaces the process clock c's fair-mode tickets start
// from, as if the process's clock were off.
func SetLocalClock(c *Client, local func() time.Time) { engine.SetLocalClock(c.e, local) }

// SetHandoffGrace sets how long a waiter waits for the handoff notices
// still on their way until t ends. Call it before t makes any Client.
func SetHandoffGrace(t testing.TB, d time.Duration) {
	old := engine.SetHandoffGrace(d)
	t.Cleanup(func() { engine.SetHandoffGrace(old) })
}

// CloseGrace is how long c's Close would let calls still out finish.
func CloseGrace(c *Client) time.Duration { return engine.CloseGrace(c.e) }

// NodeRTTs is what c learned of each node's round trip (0: nothing yet).
func NodeRTTs(c *Client) []time.Duration { return engine.NodeRTTs(c.e) }
