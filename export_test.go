package redlock

import "time"

// SetLocalClock replaces the process clock c's fair-mode tickets start
// from, as if the process's clock were off.
func SetLocalClock(c *Client, local func() time.Time) { c.clock.Local = local }
