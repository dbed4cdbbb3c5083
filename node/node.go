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
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed scripts/acquire.lua
	acquireSource string
	//go:embed scripts/renew.lua
	renewSource string
	//go:embed scripts/renew_slots.lua
	renewSlotsSource string

	// Every script whose answer counts as a vote checks the restart guard
	// first (guard.lua).
	acquireScript = newLibScript("acquire", true, acquireSource, guardSource)
	renewScript   = newLibScript("renew", true, renewSource, guardSource)
	// renew.lua spanning the slots of a Cluster shard (see RenewEach).
	renewSlotsScript = newCrossSlotScript("renew_slots", true, renewSlotsSource+renewSource, guardSource)
)

// luaScript is a script and its source (to SCRIPT LOAD it ahead of a
// pipeline).
type luaScript struct {
	*redis.Script
	source string
	// timed: the script answers through guard.lua's timed(), the node's
	// TIME ahead of its reply.
	timed bool
	// fn: its function in the library (see functions.go), "" when it is
	// not in it; body: its source without the prelude.
	fn, body string
	// crossSlot: its function is registered allow-cross-slot-keys, so
	// that on a Cluster shard one call spans the slots the shard serves.
	crossSlot bool
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
	index   int
	addr    string
	client  Client
	cluster bool // a Redis Cluster: one marker per slot (see markerKey)
	calls   *batcher
	marker  string // the marker Warm reads (see ShareGuard)
}

// New wraps client as the node at position index.
func New(index int, addr string, client Client) *Node {
	b := &batcher{client: client, loaded: make(map[*luaScript]bool), lanes: map[string]*lane{}, longest: new(atomic.Int64)}
	if _, ok := client.(functionCaller); !ok {
		b.library = libRefused
	}
	b.health.ping = func(ctx context.Context) error {
		pipe := client.Pipeline()
		ping := pipe.Ping(ctx)
		_, _ = pipe.Exec(ctx)
		return ping.Err()
	}
	_, cluster := client.(*redis.ClusterClient)
	_, ring := client.(*redis.Ring)
	// On a Cluster or Ring, scripts of different slots run on different
	// shards, each with its own clock, checked shard by shard.
	b.checkClock = true
	b.scatter = cluster || ring
	b.shards = newShardClocks(client)
	return &Node{index: index, addr: addr, client: client, cluster: cluster, calls: b}
}

// Wait stops the node's background work and returns once no goroutine of
// the node is running (call it after the last call returned, e.g. from
// Client.Close).
func (n *Node) Wait() { n.calls.wait() }

// run runs script on the node, sharing a round trip with concurrent calls.
func (n *Node) run(ctx context.Context, script *luaScript, check ClockCheck, keys []string, args ...any) *redis.Cmd {
	return n.calls.run(ctx, nil, script, check, keys, args...)
}

// ClockChecked reports whether the node's clock rate is checked: always,
// on a Cluster or Ring shard by shard.
func (n *Node) ClockChecked() bool { return n.calls.checkClock }

// Index is the node's position in the Client's list.
func (n *Node) Index() int { return n.index }

// Client is the go-redis client the node runs its scripts on.
func (n *Node) Client() Client { return n.client }

// Addr is the node's address, for errors and logs.
func (n *Node) Addr() string { return n.addr }

// Keys are the Redis keys of one lock (all in one hash slot).
type Keys struct {
	Lock  string // the lock hash
	Gone  string // holds released before their acquire may have arrived
	Fence string // the fencing counter
	Queue string // waiters by ticket
	Alive string // waiters' heartbeat deadlines
	Wake  string // waiters' notice channels
	// Marker is the node's marker of complete data (see scripts/guard.lua);
	// Guard how long after losing its data a node does not vote (0: the
	// guard is off).
	Marker string
	Guard  time.Duration
	// Risks the guard takes on trust where it cannot check (see Risk).
	Risks Risk
	// Clock is the clock check of the calls that vote (see ClockCheck).
	Clock ClockCheck
	// Readers is the channel of a read-write lock's waiting readers, told
	// by a release that frees the lock with no writer waiting; "" for a
	// lock without readers.
	Readers string
	// Fenced: a grant by Acquire or AcquireQueued answers the fencing
	// counter at Fence and the node's clock too (Acquired.Fence).
	Fenced bool
}

// withFence is used with the fencing counter added when keys.Fenced.
func (k Keys) withFence(used []string) []string {
	if k.Fenced {
		return append(used, k.Fence)
	}
	return used
}

// Acquired is a node's answer to an acquire.
type Acquired struct {
	Granted bool
	Holds   int64         // granted: this owner's hold count on the node
	PTTL    time.Duration // refused: the holder's remaining time, -1 when unknown
	Holder  string        // refused: a fingerprint of the holder's owner id
	// Behind: refused by a fair lock that is free, because another waiter
	// (Holder) heads the queue.
	Behind bool
	// Revoked: refused because this hold was released on the node before
	// the acquire arrived.
	Revoked bool
	// Fence: granted with Keys.Fenced, the node's fencing counter and
	// clock, read with the vote (nil otherwise).
	Fence *Fence
}

// Acquire takes the lock for owner's hold, or re-enters it. The call is
// one of order's (nil: of none).
func (n *Node) Acquire(ctx context.Context, order *Order, keys Keys, owner, hold string, ttl time.Duration) (Acquired, error) {
	used := keys.withFence([]string{keys.Lock, keys.Gone, n.markerKey(keys)})
	reply, err := n.calls.run(ctx, order, acquireScript, keys.Clock, used,
		owner, hold, milliseconds(ttl), n.guardArg(keys), n.deadlineArg(ctx, keys.Lock, ttl)).Result()
	if err != nil {
		return Acquired{}, conflicting(quarantined(err), used...)
	}
	return decodeAcquired(reply)
}

func decodeAcquired(reply any) (Acquired, error) {
	items, _ := reply.([]any)
	switch len(items) {
	case 1:
		if code, ok := items[0].(int64); ok && code == 2 {
			return Acquired{Revoked: true}, nil
		} else if ok && code == 3 {
			return Acquired{}, ErrLate
		}
	case 2, 5:
		// A grant: {1, holds}, or {1, holds, counter, seconds, micros}.
		ints, err := int64s(items[:2])
		if err != nil || ints[0] != 1 || ints[1] < 1 {
			break
		}
		acquired := Acquired{Granted: true, Holds: ints[1]}
		if len(items) == 5 {
			fence, err := decodeFence(items[2:])
			if err != nil {
				break
			}
			acquired.Fence = &fence
		}
		return acquired, nil
	case 3:
		// A refusal: {0, pttl, holder}.
		holder, ok := items[2].(string)
		ints, err := int64s(items[:2])
		if ok && err == nil && ints[0] == 0 && holder != "" && ints[1] >= -2 {
			pttl := time.Duration(-1)
			if ints[1] >= 0 {
				pttl = time.Duration(ints[1]) * time.Millisecond
			}
			return Acquired{PTTL: pttl, Holder: holder, Behind: ints[1] == -2}, nil
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
	LockDeleted Released = 2  // last hold removed: lock handed to the next waiter or deleted
)

// Removed reports whether this call removed the hold.
func (r Released) Removed() bool { return r == HoldDropped || r == LockDeleted }

func decodeReleased(reply any) (Released, error) {
	code, ok := reply.(int64)
	if !ok || code < int64(OtherOwner) || code > int64(LockDeleted) {
		return 0, fmt.Errorf("%w to release: %v", ErrBadReply, reply)
	}
	return Released(code), nil
}

// Renewal is one hold to renew.
type Renewal struct {
	Keys        Keys
	Owner, Hold string
	TTL         time.Duration
}

// Renewed is a node's answer for one Renewal.
type Renewed int

// Replies of renew.lua, per item.
const (
	NotALock  Renewed = -2 // the key is a hash that is not a lock
	Revoked   Renewed = -1 // the hold was released here (a ForceUnlock, or a release of a late copy)
	Taken     Renewed = 0  // another owner holds the lock here
	Refreshed Renewed = 1  // renewed, or re-created on a node that lost it
)

// Renew extends every hold in batch with one script call (on a Redis
// Cluster member, one per shard: see RenewEach) and answers one Renewed
// per item, in order.
func (n *Node) Renew(ctx context.Context, batch []Renewal) ([]Renewed, error) {
	if len(batch) == 0 {
		return []Renewed{}, nil
	}
	if !n.cluster {
		return n.renewCall(ctx, renewScript, batch, []string{n.markerKey(batch[0].Keys)})
	}
	renewed, errs := n.RenewEach(ctx, batch)
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return renewed, nil
}

// renewCall renews batch (at least one item) in one call of script, whose
// guard judges markers: the node's, or on a Cluster shard one per slot.
func (n *Node) renewCall(ctx context.Context, script *luaScript, batch []Renewal, markers []string) ([]Renewed, error) {
	keys := make([]string, 0, 2*len(batch)+len(markers))
	args := make([]any, 0, 3*len(batch)+2)
	guard := Keys{Risks: allRisks} // the longest guard, the risks every item accepts
	var check ClockCheck
	shortest := time.Duration(0) // the deadline's: the shortest TTL of the batch
	for _, item := range batch {
		keys = append(keys, item.Keys.Lock, item.Keys.Gone)
		args = append(args, item.Owner, item.Hold, milliseconds(item.TTL))
		if shortest == 0 || item.TTL < shortest {
			shortest = item.TTL
		}
		guard.Guard, guard.Risks = max(guard.Guard, item.Keys.Guard), guard.Risks&item.Keys.Risks
		check = check.strictest(item.Keys.Clock)
	}
	keys = append(keys, markers...)
	args = append(args, n.deadlineArg(ctx, batch[0].Keys.Lock, shortest), n.guardArg(guard))
	if script == renewSlotsScript {
		keys, args = spanned(keys, args, markers[0])
	}
	reply, err := n.run(ctx, script, check, keys, args...).Result()
	if err != nil {
		return nil, quarantined(err)
	}
	return decodeRenewed(reply, len(batch))
}

func decodeRenewed(reply any, items int) ([]Renewed, error) {
	list, ok := reply.([]any)
	ints, err := int64s(list)
	if !ok || err != nil || len(ints) != items {
		return nil, fmt.Errorf("%w to renew: %v", ErrBadReply, reply)
	}
	results := make([]Renewed, len(ints))
	for i, code := range ints {
		if code == -3 {
			// Late (nothing re-created): the client gave up on this
			// answer, so the batch counts as not answered in time.
			return nil, ErrLate
		}
		if code < int64(NotALock) || code > int64(Refreshed) {
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

// tombstoneMilliseconds renders a tombstone lifetime: "0" for none.
func tombstoneMilliseconds(d time.Duration) string {
	if d <= 0 {
		return "0"
	}
	return milliseconds(d)
}

// milliseconds renders d for PEXPIRE, rounding up so that a sub-millisecond
// remainder never shortens a lease.
func milliseconds(d time.Duration) string {
	ms := (d + time.Millisecond - 1) / time.Millisecond
	return strconv.FormatInt(int64(ms), 10)
}

// Answered reports whether err (from a call to a node) came from the node
// itself: a script error or a reply of the wrong shape. Otherwise (a
// timeout, a refused or broken connection, an answer discarded because
// the node's clock runs fast) the call's fate is unknown.
func Answered(err error) bool {
	if clockQuarantined(err) {
		return false
	}
	return err == nil || errors.Is(err, ErrBadReply) || errors.Is(err, ErrQuarantined) || errors.Is(err, ErrKeyConflict) ||
		errors.Is(err, ErrLate) || isRedisError(err)
}
