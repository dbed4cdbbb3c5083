package redlock

import "github.com/quorumlock/redlock/internal/core"

// Clock drift. A lease is valid for its validity window: the TTL less the
// time the acquire round took, less a drift allowance (TTL × the drift
// factor + 2 ms) for node clocks that run fast and expire the key early.
// Lease.Until is the end of that window on this process's monotonic clock.
// The clock check finds nodes whose clocks run faster than the allowance
// covers. The formula: internal/core/drift.go; why: docs/safety.md.

// DefaultDriftFactor is the fraction of the TTL set aside for node clocks
// running fast, as the Redlock paper suggests.
const DefaultDriftFactor = core.DefaultDriftFactor

// WithDriftFactor sets the fraction of the TTL set aside for node clocks
// running fast (default DefaultDriftFactor), in [0, 0.5): a lease's
// validity window is the TTL less this share and 2ms, so never under half
// the TTL but for those 2ms.
func WithDriftFactor(factor float64) Option {
	return core.WithDriftFactor(factor)
}

// WithClockCheck turns the check of the nodes' clock rates on or off
// (default on). Every round trip to a node reads its clock (TIME, in the
// same pipeline as the call). A node whose clock is proven to run faster
// than 1 + the drift factor allows, or to have jumped forward, expires keys
// early: its answers to acquires, renewals and fencing reads do not count
// (Observer.Quarantined, a slog warning, ErrQuarantined in node errors)
// until it has been found in bounds for a TTL after the last finding. It
// rests on this process's monotonic clock running true, and is off on
// Redis Cluster clients. See docs/safety.md, "The clock check".
func WithClockCheck(on bool) Option {
	return core.WithClockCheck(on)
}
