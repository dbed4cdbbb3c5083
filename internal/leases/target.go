package leases

import (
	"context"

	"github.com/quorumlock/redlock/fair"
	"github.com/quorumlock/redlock/internal/core"
)

// Target is what a lease knows of the lock it holds: the Client's runtime,
// the lock's name, settings, keys and queue, and the lease's side of the
// lock's mode.
type Target struct {
	*Runtime
	LockName string
	Settings core.Settings
	Keys     core.Keys
	Queue    *fair.Queue // the waiters on the nodes
	Mode     LeaseMode
}

// LeaseMode is what a held lease asks of its lock's mode.
type LeaseMode interface {
	// LeaveAfter takes owner off node i's queue after hold's release there.
	LeaveAfter(ctx context.Context, i int, owner, hold string)
	// HoldContext gives a lease's Context what it carries of its hold.
	HoldContext(values context.Context, l *Lease) context.Context
	// Shared reports whether holds are read holds, Shared among readers.
	Shared() bool
}

// Need is the number of nodes that must agree.
func (t *Target) Need() int { return t.Settings.QuorumOf(len(t.Nodes)) }
