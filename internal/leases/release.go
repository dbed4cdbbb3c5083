package leases

import (
	"context"
	"time"

	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/quorum"
)

// The release paths, all through dropHold: a lease's release round
// (Lease.Release), ReleaseNode for one node (with the sweeper behind it),
// releaseNodes for several, undoGrant for a failed attempt's grant, and
// the sweeper's retry (sweep.retry).

// ReleaseNodes drops hold on the given nodes and waits for their answers
// (each bounded by the node timeout); uncertain and leaving as in
// ReleaseNode.
func (t *Target) ReleaseNodes(ctx context.Context, nodes []int, owner, hold string, uncertain func(int) bool, leaving func() bool) {
	quorum.Each(ctx, nodes, 0, func(ctx context.Context, i int) { t.ReleaseNode(ctx, i, owner, hold, uncertain(i), leaving) })
}

// always is a leaving condition that holds.
func always() bool { return true }

// ReleaseNode drops hold on node i; the last hold hands the lock to the
// first waiter. uncertain says that the acquire's fate on the node is unknown
// (it timed out, or has not answered yet): then the release leaves a
// tombstone that refuses the acquire if it arrives later. When the node
// does not answer (or was not sent it: the node is down), the Client's
// sweeper tries again until it does (at most 10,000 per node; past that
// the oldest are dropped and expire at their TTL). When leaving (may be
// nil) holds once the release is answered, owner leaves the node's queue
// (leaveAfterRelease): the release of a hold whose acquire there timed
// out, of a lease, or of an attempt whose call has ended by then.
func (t *Target) ReleaseNode(ctx context.Context, i int, owner, hold string, uncertain bool, leaving func() bool) {
	ctx, cancel := context.WithTimeout(ctx, t.Settings.RoundTimeout())
	defer cancel()
	_, _, err := t.dropHold(ctx, i, owner, hold, uncertain)
	switch {
	case err == nil && leaving != nil && leaving():
		t.leaveAfterRelease(ctx, i, owner, hold)
	case err != nil:
		t.NodeError(&t.Settings, i, err)
		if !node.Answered(err) {
			t.Sweeper.Add(t, i, owner, hold, leaving)
		}
	}
}

// leaveAfterRelease takes owner off node i's queue once the release of
// hold, with a tombstone, was answered there: a lease's (by its release,
// its late-answer handler or the sweeper), or a failed attempt's whose
// call has ended (its undo). The acquire of hold on that node timed out,
// so it may have run there after the waiter left that queue (the leave
// went on a fresh connection and overtook it) and, refused, queued the
// owner again: a place that nobody heartbeats, which the node would hand
// the lock to until its deadline.
// From the tombstone on, no such acquire can queue it. Only a lock handed
// naming hold itself is passed on (the release did that already, unless
// the handing came later): the call may still be waiting, its lease given
// back (a failed fencing), and a later attempt of it may hold the lock
// there, taken from the notices. Read holds never queue.
func (t *Target) leaveAfterRelease(ctx context.Context, i int, owner, hold string) {
	t.Mode.LeaveAfter(context.WithoutCancel(ctx), i, owner, hold)
}

// dropHold is the release script on node i, the one call every release
// path makes (undoGrant aside: a waiter's undo keeps its place in the
// queue). named is the waiter the lock was handed to, if any.
func (t *Target) dropHold(ctx context.Context, i int, owner, hold string, uncertain bool) (released node.Released, named string, err error) {
	var tombstone time.Duration
	if uncertain {
		tombstone = node.Tombstone(t.Settings.TTL, t.Settings.NodeTimeout)
	}
	return t.Queue.Release(ctx, i, owner, hold, tombstone)
}
