package node

import (
	"context"
	_ "embed"
	"time"
)

var (
	//go:embed scripts/acquire_read.lua
	acquireReadSource string

	acquireReadScript = newLibScript("acquire_read", true, acquireReadSource, guardSource, queueSource)
)

// Readers is the owner value every read hold of a read-write lock is kept
// under on the nodes (see scripts/acquire_read.lua): renewal and release
// treat the read holds as holds of this one owner. It cannot be an owner id
// (reentrant.NewID), and the library refuses it as an explicit owner.
const Readers = "redlock:readers"

// ForcedOwner holds, on a node, a lock whose handing to a waiter a
// ForceUnlock ended, until the handing would have lapsed (see
// scripts/force.lua): no one can claim, renew or release it. Like Readers,
// it cannot be an owner id, and the library refuses it as an explicit owner.
const ForcedOwner = "redlock:forced"

// AcquireRead takes a read hold of a read-write lock on this node: granted
// while no writer holds the lock here and, unless nested (a read hold
// inside a read hold of the same caller), no writer waits in the queue. A
// refusal names the writer (Behind: a waiting one). The call is one of
// order's.
func (n *Node) AcquireRead(ctx context.Context, order *Order, keys Keys, hold string, ttl time.Duration, nested bool) (Acquired, error) {
	reentry := "0"
	if nested {
		reentry = "1"
	}
	used := append(keys.queued(), n.markerKey(keys))
	reply, err := n.calls.run(ctx, order, acquireReadScript, keys.Clock, used,
		Readers, hold, milliseconds(ttl), reentry, n.guardArg(keys), n.deadlineArg(ctx, keys.Lock, ttl)).Result()
	if err != nil {
		return Acquired{}, conflicting(quarantined(err), used...)
	}
	return decodeAcquired(reply)
}
