package node

import (
	"context"
	_ "embed"
	"fmt"
	"math"
	"strconv"
	"time"
)

var (
	//go:embed scripts/fence_read.lua
	fenceReadSource string
	//go:embed scripts/fence.lua
	fenceSource string
	//go:embed scripts/fence_held.lua
	fenceHeldSource string

	fenceReadScript = newLibScript("fence_read", true, fenceReadSource, guardSource)
	fenceScript     = newScript(fenceSource)
	fenceHeldScript = newScript(fenceHeldSource)
)

// MaxToken bounds fencing tokens and counters: the largest uint64 less
// one, so that a counter + 1 always fits.
const MaxToken = math.MaxUint64 - 1

// Fence is a node's fencing counter and its clock, read together.
type Fence struct {
	Counter uint64
	Clock   time.Time // the node's TIME, microsecond resolution
}

// ReadFence reads the fencing counter of the lock at keys and the node's
// clock. A node that lost its data less than keys.Guard ago answers a
// *Quarantine: its counter may be behind.
func (n *Node) ReadFence(ctx context.Context, keys Keys) (Fence, error) {
	used := []string{keys.Fence, n.markerKey(keys)}
	reply, err := n.run(ctx, fenceReadScript, keys.Clock, used, n.guardArg(keys)).Result()
	if err != nil {
		return Fence{}, conflicting(quarantined(err), used...)
	}
	return decodeFence(reply)
}

func decodeFence(reply any) (Fence, error) {
	items, ok := reply.([]any)
	if ok && len(items) == 3 {
		counter, counterErr := decimal(items[0], MaxToken)
		seconds, secondsErr := decimal(items[1], 1<<40)
		micros, microsErr := decimal(items[2], 999_999)
		if counterErr == nil && secondsErr == nil && microsErr == nil {
			return Fence{Counter: counter, Clock: time.Unix(int64(seconds), int64(micros)*1000)}, nil
		}
	}
	return Fence{}, fmt.Errorf("%w to read the fence: %v", ErrBadReply, reply)
}

// RaiseFence sets the fencing counter at key to at least token and answers
// the counter after the call, whoever holds the lock (ForceUnlock's raise;
// a grant's write-back is RaiseHeldFence).
func (n *Node) RaiseFence(ctx context.Context, key string, token uint64) (uint64, error) {
	reply, err := n.run(ctx, fenceScript, ClockCheck{}, []string{key}, strconv.FormatUint(token, 10)).Result()
	if err != nil {
		return 0, conflicting(err, key)
	}
	return decodeRaised(reply, token)
}

func decodeRaised(reply any, token uint64) (uint64, error) {
	value, err := decimal(reply, MaxToken)
	if err != nil || value < token {
		return 0, fmt.Errorf("%w to fence: %v", ErrBadReply, reply)
	}
	return value, nil
}

// RaiseHeldFence is RaiseFence on condition that hold still holds the lock
// at keys.Lock on the node (a hold field, or the lock handed to its owner
// naming hold): it answers the counter after the call and true, or 0 and
// false (nothing changed) when the hold is not there. It is the write-back
// of a grant's token (see internal/engine/fencing.go).
func (n *Node) RaiseHeldFence(ctx context.Context, keys Keys, hold string, token uint64) (uint64, bool, error) {
	used := []string{keys.Fence, keys.Lock}
	reply, err := n.run(ctx, fenceHeldScript, ClockCheck{}, used, strconv.FormatUint(token, 10), hold).Result()
	if err != nil {
		return 0, false, conflicting(err, used...)
	}
	return decodeRaisedHeld(reply, token)
}

func decodeRaisedHeld(reply any, token uint64) (uint64, bool, error) {
	items, _ := reply.([]any)
	switch {
	case len(items) == 1 && items[0] == int64(0):
		return 0, false, nil
	case len(items) == 2 && items[0] == int64(1):
		if value, err := decodeRaised(items[1], token); err == nil {
			return value, true, nil
		}
	}
	return 0, false, fmt.Errorf("%w to fence while held: %v", ErrBadReply, reply)
}

// decimal reads a reply that is a decimal string (or an integer) in
// [0, limit], without sign or leading zeros.
func decimal(reply any, limit uint64) (uint64, error) {
	var text string
	switch value := reply.(type) {
	case string:
		text = value
	case int64:
		if value < 0 {
			return 0, fmt.Errorf("%w: negative number %d", ErrBadReply, value)
		}
		text = strconv.FormatInt(value, 10)
	default:
		return 0, fmt.Errorf("%w: %T, want a decimal string", ErrBadReply, reply)
	}
	if len(text) > 1 && text[0] == '0' {
		return 0, fmt.Errorf("%w: %q has leading zeros", ErrBadReply, text)
	}
	value, err := strconv.ParseUint(text, 10, 64)
	if err != nil || value > limit {
		return 0, fmt.Errorf("%w: %q is not a decimal in [0, %d]", ErrBadReply, text, limit)
	}
	return value, nil
}
