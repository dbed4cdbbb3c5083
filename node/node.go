// Package node speaks to one Redis node: it runs the lock scripts (EVALSHA,
// falling back to EVAL when the node lost its script cache) and decodes
// their replies. It is the only package that knows the wire contract. A
// reply of the wrong shape is an error, never a panic.
package node

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed scripts/acquire.lua
	acquireSource string
	//go:embed scripts/release.lua
	releaseSource string
	//go:embed scripts/renew.lua
	renewSource string

	acquireScript = newScript(acquireSource)
	releaseScript = newScript(releaseSource)
	renewScript   = newScript(renewSource)
)

// luaScript is a script and its source (to SCRIPT LOAD it ahead of a
// pipeline).
type luaScript struct {
	*redis.Script
	source string
}

func newScript(source string) *luaScript {
	return &luaScript{Script: redis.NewScript(source), source: source}
}

// ErrBadReply reports a reply that does not have the shape the script
// promises: the node is not running our script, or something rewrote it.
var ErrBadReply = errors.New("unexpected reply")

// Client is what a node needs of a go-redis client.
type Client interface {
	redis.Scripter
	Pipeline() redis.Pipeliner
}

// Node is one Redis node. Its methods are safe for concurrent use; each call
// is bounded by ctx.
type Node struct {
	index  int
	addr   string
	client Client
	calls  *batcher
}

// New wraps client as the node at position index.
func New(index int, addr string, client Client) *Node {
	return &Node{index: index, addr: addr, client: client, calls: &batcher{client: client, loaded: make(map[*luaScript]bool)}}
}

// Wait returns once no goroutine of the node is running (call it after the
// last call returned, e.g. from Client.Close).
func (n *Node) Wait() { n.calls.wait() }

// run runs script on the node, sharing a round trip with concurrent calls.
func (n *Node) run(ctx context.Context, script *luaScript, keys []string, args ...any) *redis.Cmd {
	return n.calls.run(ctx, script, keys, args...)
}

// Index is the node's position in the Client's list.
func (n *Node) Index() int { return n.index }

// Client is the go-redis client the node runs its scripts on.
func (n *Node) Client() Client { return n.client }

// Addr is the node's address, for errors and logs.
func (n *Node) Addr() string { return n.addr }

// Acquired is a node's answer to an acquire.
type Acquired struct {
	Granted bool
	Holds   int64         // granted: this owner's hold count on the node
	Fence   int64         // granted with fencing: the node's counter
	PTTL    time.Duration // refused: the holder's remaining time, -1 when unknown
	Holder  string        // refused: a fingerprint of the holder's owner id
	// Behind: refused by a fair lock that is free, because another waiter
	// (Holder) heads the queue.
	Behind bool
}

// Acquire takes the lock key for owner's hold, or re-enters it; fenceKey is
// incremented when fence is true.
func (n *Node) Acquire(ctx context.Context, key, fenceKey, owner, hold string, ttl time.Duration, fence bool) (Acquired, error) {
	fenceFlag := "0"
	if fence {
		fenceFlag = "1"
	}
	reply, err := n.run(ctx, acquireScript, []string{key, fenceKey},
		owner, hold, milliseconds(ttl), fenceFlag).Slice()
	if err != nil {
		return Acquired{}, err
	}
	return decodeAcquired(reply)
}

func decodeAcquired(reply []any) (Acquired, error) {
	if len(reply) == 3 {
		if holder, ok := reply[2].(string); ok {
			// A refusal: {0, pttl, holder}.
			ints, err := int64s(reply[:2])
			if err == nil && ints[0] == 0 && holder != "" {
				pttl := time.Duration(-1)
				if ints[1] >= 0 {
					pttl = time.Duration(ints[1]) * time.Millisecond
				}
				return Acquired{PTTL: pttl, Holder: holder, Behind: ints[1] == -2}, nil
			}
		} else if ints, err := int64s(reply); err == nil && ints[0] == 1 {
			return Acquired{Granted: true, Holds: ints[1], Fence: ints[2]}, nil
		}
	}
	return Acquired{}, fmt.Errorf("%w to acquire: %v", ErrBadReply, reply)
}

// Released is a node's answer to a release.
type Released int

// Replies of release.lua.
const (
	OtherOwner  Released = -1 // another owner holds the lock: nothing changed
	HoldAbsent  Released = 0  // this hold was not there: nothing changed
	HoldDropped Released = 1  // hold removed, other holds of the owner remain
	LockDeleted Released = 2  // last hold removed: lock deleted, notice sent
)

// Removed reports whether this call removed the hold.
func (r Released) Removed() bool { return r == HoldDropped || r == LockDeleted }

// Release drops owner's hold on key; the last hold deletes the key and
// publishes hold on channel.
func (n *Node) Release(ctx context.Context, key, channel, owner, hold string) (Released, error) {
	reply, err := n.run(ctx, releaseScript, []string{key}, owner, hold, channel).Result()
	if err != nil {
		return 0, err
	}
	return decodeReleased(reply)
}

func decodeReleased(reply any) (Released, error) {
	code, ok := reply.(int64)
	if !ok || code < int64(OtherOwner) || code > int64(LockDeleted) {
		return 0, fmt.Errorf("%w to release: %v", ErrBadReply, reply)
	}
	return Released(code), nil
}

// Renewal is one hold to renew.
type Renewal struct {
	Key, Owner, Hold string
	TTL              time.Duration
}

// Renewed is a node's answer for one Renewal.
type Renewed int

// Replies of renew.lua, per item.
const (
	NotALock  Renewed = -2 // the key is a hash that is not a lock
	Taken     Renewed = 0  // another owner holds the lock here
	Refreshed Renewed = 1  // renewed, or re-created on a node that lost it
)

// Renew extends every hold in batch with one script call and answers one
// Renewed per item, in order.
func (n *Node) Renew(ctx context.Context, batch []Renewal) ([]Renewed, error) {
	keys := make([]string, len(batch))
	args := make([]any, 0, 3*len(batch))
	for i, item := range batch {
		keys[i] = item.Key
		args = append(args, item.Owner, item.Hold, milliseconds(item.TTL))
	}
	reply, err := n.run(ctx, renewScript, keys, args...).Slice()
	if err != nil {
		return nil, err
	}
	ints, err := int64s(reply)
	if err != nil || len(ints) != len(batch) {
		return nil, fmt.Errorf("%w to renew: %v", ErrBadReply, reply)
	}
	results := make([]Renewed, len(ints))
	for i, code := range ints {
		if code < int64(NotALock) || code > int64(Refreshed) || code == -1 {
			return nil, fmt.Errorf("%w to renew: %v", ErrBadReply, reply)
		}
		results[i] = Renewed(code)
	}
	return results, nil
}

func int64s(reply []any) ([]int64, error) {
	ints := make([]int64, len(reply))
	for i, value := range reply {
		number, ok := value.(int64)
		if !ok {
			return nil, fmt.Errorf("%w: element %d is %T, want an integer", ErrBadReply, i, value)
		}
		ints[i] = number
	}
	return ints, nil
}

// milliseconds renders d for PEXPIRE, rounding up so that a sub-millisecond
// remainder never shortens a lease.
func milliseconds(d time.Duration) string {
	ms := (d + time.Millisecond - 1) / time.Millisecond
	return strconv.FormatInt(int64(ms), 10)
}
