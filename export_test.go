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
