package node

import (
	"context"
	_ "embed"
	"fmt"
	"time"
)

var (
	//go:embed scripts/inspect.lua
	inspectSource string
	//go:embed scripts/force.lua
	forceSource string

	inspectScript = newLibScript("inspect", false, inspectSource, guardSource, queueSource)
	forceScript   = newLibScript("force", false, forceSource, guardSource, queueSource)
)

// View is one node's view of a lock (Inspect).
type View struct {
	Holder  string        // fingerprint of the owner holding or handed it; "" when free
	Holds   int64         // that owner's hold count (0: free, or handed and not claimed)
	Handed  bool          // handed to a waiter that has not claimed it yet
	PTTL    time.Duration // remaining time; -2 ms free, -1 ms no expiry
	Waiting int64         // waiters queued
	Fence   uint64        // the fencing counter
}

// Inspect reads the node's view of the lock at keys. It changes nothing.
func (n *Node) Inspect(ctx context.Context, keys Keys) (View, error) {
	used := []string{keys.Lock, keys.Queue, keys.Fence}
	reply, err := n.run(ctx, inspectScript, ClockCheck{}, used).Result()
	if err != nil {
		return View{}, conflicting(err, used...)
	}
	return decodeView(reply)
}

func decodeView(reply any) (View, error) {
	items, _ := reply.([]any)
	if len(items) == 6 {
		holder, holderOK := items[0].(string)
		ints, intsErr := int64s(items[1:5])
		fence, fenceErr := decimal(items[5], MaxToken)
		if holderOK && intsErr == nil && fenceErr == nil && (holder == "" || len(holder) == fingerprintLen) &&
			ints[0] >= 0 && (ints[1] == 0 || ints[1] == 1) && ints[2] >= -2 && ints[3] >= 0 &&
			(holder != "" || (ints[0] == 0 && ints[1] == 0 && ints[2] == -2)) {
			return View{Holder: holder, Holds: ints[0], Handed: ints[1] == 1,
				PTTL: time.Duration(ints[2]) * time.Millisecond, Waiting: ints[3], Fence: fence}, nil
		}
	}
	return View{}, fmt.Errorf("%w to inspect: %v", ErrBadReply, reply)
}

// Forced is a node's answer to ForceRelease.
type Forced struct {
	Removed int64  // holds removed
	Next    string // fingerprint of the waiter the lock went to; "" none
	Fence   uint64 // the fencing counter
}

// ForceRelease removes every hold of the lock at keys, whoever holds it,
// and records them as released for at least tombstone (and the lock's
// remaining time), so that their owner's renewals are refused. The lock
// goes to the first live waiter, for at most window, told by a notice with
// id notice (not on a node the restart guard keeps from voting: see
// Release). A lock handed to a waiter naming a hold counts as that hold
// (the waiter may hold its lease from the notices); one handed by an older
// client, naming none, is left to the waiter. A handing so ended goes to
// no one: the key is kept under ForcedOwner until it would have lapsed,
// since the waiter may still take its lease from notices on their way.
func (n *Node) ForceRelease(ctx context.Context, keys Keys, tombstone, window time.Duration, notice string) (Forced, error) {
	used := append(keys.queued(), keys.Fence, n.markerKey(keys))
	reply, err := n.run(ctx, forceScript, ClockCheck{}, used,
		tombstoneMilliseconds(tombstone), milliseconds(window), notice, n.guardArg(keys), ForcedOwner).Result()
	if err != nil {
		return Forced{}, conflicting(err, used...)
	}
	return decodeForced(reply)
}

func decodeForced(reply any) (Forced, error) {
	items, _ := reply.([]any)
	if len(items) == 3 {
		removed, removedOK := items[0].(int64)
		next, nextOK := items[1].(string)
		fence, fenceErr := decimal(items[2], MaxToken)
		if removedOK && nextOK && fenceErr == nil && removed >= 0 && (next == "" || len(next) == fingerprintLen) {
			return Forced{Removed: removed, Next: next, Fence: fence}, nil
		}
	}
	return Forced{}, fmt.Errorf("%w to force a release: %v", ErrBadReply, reply)
}
