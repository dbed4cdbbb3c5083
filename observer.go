package redlock

import "github.com/quorumlock/redlock/internal/core"

// Observer holds optional hooks called on lock events, for metrics. Nil
// hooks are skipped. Hooks run on the library's goroutines: they must be
// quick and must not call back into the lease they are told about.
type Observer = core.Observer

// AcquiredEvent describes a grant.
type AcquiredEvent = core.AcquiredEvent

// ReleasedEvent describes an Unlock.
type ReleasedEvent = core.ReleasedEvent

// RenewedEvent describes a renewal that reached a quorum.
type RenewedEvent = core.RenewedEvent

// LostEvent describes a lease lost before it was released.
type LostEvent = core.LostEvent

// QuarantineEvent reports a node that does not vote: it lost its data (or
// is new) less than the restart guard ago (see WithRestartGuard), or its
// clock was found to run fast (see WithClockCheck). It is reported once per
// data loss, or run of clock findings, and node, by the first call that
// met the refusal.
type QuarantineEvent = core.QuarantineEvent

// CallEvent describes a call as it starts (Observer.Call).
type CallEvent = core.CallEvent

// CallResult describes how a call ended (Observer.Call).
type CallResult = core.CallResult

// NotAcquiredEvent describes a call that returned no lease.
type NotAcquiredEvent = core.NotAcquiredEvent

// JoinObservers returns one Observer that calls the hooks of each of
// observers in turn, e.g. the OpenTelemetry and Prometheus modules' at once:
// WithObserver(JoinObservers(a, b)).
func JoinObservers(observers ...Observer) Observer { return core.JoinObservers(observers...) }

// Outcome names how a call that returned err ended, in one word for a
// metric's label or a span's attribute: "ok", "cancelled", "no_quorum",
// "refused", "lost", "closed", "config" or "error". The contrib modules
// label calls with it.
func Outcome(err error) string { return core.Outcome(err) }
