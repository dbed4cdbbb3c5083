package core

import (
	"time"

	"github.com/quorumlock/redlock/node"
)

// Observer holds optional hooks called on lock events, for metrics. Nil
// hooks are skipped. Hooks run on the library's goroutines: they must be
// quick and must not call back into the lease they are told about.
type Observer struct {
	Acquired  func(AcquiredEvent)
	Released  func(ReleasedEvent)
	Renewed   func(RenewedEvent)
	Lost      func(LostEvent)
	NodeError func(*NodeError)
	// Quarantined: a node lost its data (or is new) and does not vote
	// until the restart guard has passed (see WithRestartGuard), or its
	// clock was found to run fast (see WithClockCheck).
	Quarantined func(QuarantineEvent)
}

// AcquiredEvent describes a grant.
type AcquiredEvent struct {
	Name  string
	Owner string
	Wait  time.Duration // from the Lock call to the grant
	Votes int           // nodes that granted before Lock returned
}

// ReleasedEvent describes an Unlock.
type ReleasedEvent struct {
	Name string
	Held time.Duration
	Err  error // nil, or why the release did not reach a quorum
}

// RenewedEvent describes a renewal that reached a quorum.
type RenewedEvent struct {
	Name  string
	Until time.Time
}

// LostEvent describes a lease lost before it was released.
type LostEvent struct {
	Name string
	Err  error
}

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
