package node

import (
	"context"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

var (
	//go:embed scripts/queue.lua
	queueSource string
	//go:embed scripts/acquire_queued.lua
	acquireQueuedSource string
	//go:embed scripts/release.lua
	releaseSource string
	//go:embed scripts/leave.lua
	leaveSource string

	// The scripts that queue waiters or free the lock share queue.lua:
	// the queue, and the handoff of a freed lock to its first waiter.
	// (guard.lua goes first: it has the node's clock, and the guard.)
	acquireQueuedScript = newLibScript("acquire_queued", true, acquireQueuedSource, guardSource, queueSource)
	releaseScript       = newLibScript("release", false, releaseSource, guardSource, queueSource)
	leaveScript         = newLibScript("leave", false, leaveSource, guardSource, queueSource)
)

// Waiter is how an acquire queues its owner when it is refused.
type Waiter struct {
	Ticket   int64         // its place: every node orders waiters by it
	Lifetime time.Duration // evicted unless it calls again within this
	Channel  string        // where the notices meant for it are published
	// Fair: a free lock goes to the first waiter; otherwise a newcomer
	// takes a free lock ahead of the queue.
	Fair bool
	// Span is how long a lock handed to the waiter stays its own at most
	// (less when its heartbeat deadline comes first): the validity of a
	// lease taken from the notices counts from the start of the call that
	// queued it, for Span (see Notice). Zero: until the heartbeat deadline.
	Span time.Duration
	// Yields: the waiter's attempts reach too few nodes to win, so it
	// takes no place in the queue, and leaves the one it had: a place it
	// cannot use would only hold up the waiters behind it.
	Yields bool
}

func (w Waiter) args() []any {
	fair := "0"
	if w.Fair {
		fair = "1"
	}
	return []any{strconv.FormatInt(w.Ticket, 10), milliseconds(w.Lifetime), w.Channel, fair}
}

func (w Waiter) span() string {
	if w.Span <= 0 {
		return milliseconds(w.Lifetime)
	}
	return milliseconds(w.Span)
}

func (k Keys) queued() []string {
	return []string{k.Lock, k.Gone, k.Queue, k.Alive, k.Wake}
}

// handing is keys.queued() and the node's marker: the keys of a script
// that may hand the lock on, which it does only where the node may vote
// (see hand in scripts/queue.lua).
func (n *Node) handing(keys Keys) []string {
	return append(keys.queued(), n.markerKey(keys))
}

// AcquireQueued is Acquire for a waiter: a lock handed to owner is
// claimed for hold; a refusal queues owner as w says (or refreshes its
// heartbeat). A freed lock is handed to the queue's first waiter for at
// most window before it must claim it (see Release). A refusal because a
// free fair lock went to another waiter is Behind. The call is one of
// order's (nil: of none).
func (n *Node) AcquireQueued(ctx context.Context, order *Order, keys Keys, owner, hold string, ttl time.Duration,
	w Waiter, window time.Duration) (Acquired, error) {
	args := append([]any{owner, hold, milliseconds(ttl)}, w.args()...)
	used := keys.withFence(n.handing(keys))
	yields := "0"
	if w.Yields {
		yields = "1"
	}
	reply, err := n.calls.run(ctx, order, acquireQueuedScript, keys.Clock, used,
		append(args, milliseconds(window), n.guardArg(keys), w.span(), n.deadlineArg(ctx, keys.Lock, ttl), yields)...).Result()
	if err != nil {
		return Acquired{}, conflicting(quarantined(err), used...)
	}
	return decodeAcquired(reply)
}

// Release drops owner's hold. The last hold frees the lock, which goes
// straight to the first live waiter of the queue, if any, for at most
// window (until it claims it with its acquire); only that waiter is told.
// The fingerprint of that waiter is returned when there was one. A node
// the restart guard keeps from voting (keys.Guard, see Acquire) hands the
// lock to no one: the waiter's notice would count as its vote.
//
// With tombstone > 0, the hold is recorded as released for that long,
// whether it is there or not, so that its acquire, if it arrives late
// (another copy may still be on its way), is refused: pass it when the
// fate of an acquire (or renewal) of the hold is unknown.
func (n *Node) Release(ctx context.Context, keys Keys, owner, hold string, tombstone, window time.Duration) (Released, string, error) {
	reply, err := n.run(ctx, releaseScript, ClockCheck{}, n.handing(keys), owner, hold, milliseconds(window),
		tombstoneMilliseconds(tombstone), keys.Readers, n.guardArg(keys)).Result()
	if err != nil {
		return 0, "", err
	}
	return decodeReleasedTo(reply)
}

// ReleaseKeepingPlace is Release for the undo of a failed attempt by a
// waiter that will try again: owner goes back in the queue as w says,
// where the grant had taken it off. When owner heads the queue, the lock
// is left free for its next attempt.
func (n *Node) ReleaseKeepingPlace(ctx context.Context, keys Keys, owner, hold string, w Waiter, window time.Duration) (Released, string, error) {
	args := append([]any{owner, hold, milliseconds(window), "0", keys.Readers, n.guardArg(keys)}, w.args()[:3]...)
	args = append(args, w.span())
	reply, err := n.run(ctx, releaseScript, ClockCheck{}, n.handing(keys), args...).Result()
	if err != nil {
		return 0, "", err
	}
	return decodeReleasedTo(reply)
}

func decodeReleasedTo(reply any) (Released, string, error) {
	freed, ok := reply.([]any)
	if !ok {
		released, err := decodeReleased(reply)
		return released, "", err
	}
	if len(freed) == 2 {
		code, codeOK := freed[0].(int64)
		head, headOK := freed[1].(string)
		if codeOK && headOK && Released(code) == LockDeleted && (head == "" || len(head) == fingerprintLen) {
			return LockDeleted, head, nil
		}
	}
	return 0, "", fmt.Errorf("%w to release: %v", ErrBadReply, reply)
}

// Leave takes owner out of the queue. A lock handed to owner naming an
// attempt of call (see CallOf), and not claimed, goes on to the next
// waiter; a free lock goes to the new first waiter. notice is the id of
// the notice that tells that waiter. order (may be nil) learns when the
// call has its place in the node's queue.
func (n *Node) Leave(ctx context.Context, order *Order, keys Keys, owner, call, notice string, window time.Duration) error {
	return n.leave(ctx, order, keys, notice, window, owner, call)
}

// LeaveAfter is Leave after the release of hold: a lock handed to owner
// is passed on only when it names hold itself. The call that made hold
// may go on waiting (its lease was given back), and a later attempt of it
// may hold the lock, taken from the notices, on this node.
func (n *Node) LeaveAfter(ctx context.Context, keys Keys, owner, hold, notice string, window time.Duration) error {
	return n.leave(ctx, nil, keys, notice, window, owner, hold, "hold")
}

func (n *Node) leave(ctx context.Context, order *Order, keys Keys, notice string, window time.Duration, owner, which string, mode ...any) error {
	args := append([]any{owner, notice, milliseconds(window), which, n.guardArg(keys)}, mode...)
	used := []string{keys.Lock, keys.Queue, keys.Alive, keys.Wake, n.markerKey(keys)}
	reply, err := n.calls.run(ctx, order, leaveScript, ClockCheck{}, used, args...).Result()
	if err != nil {
		return err
	}
	return decodeLeft(reply)
}

func decodeLeft(reply any) error {
	if code, ok := reply.(int64); !ok || code < 0 || code > 1 {
		return fmt.Errorf("%w to leave: %v", ErrBadReply, reply)
	}
	return nil
}

// fingerprintLen is the length of a Fingerprint.
const fingerprintLen = 16

// Fingerprint is how scripts name an owner in replies and notices: enough
// to recognise one's own id, useless for releasing someone else's lock.
func Fingerprint(owner string) string {
	sum := sha1.Sum([]byte(owner))
	return hex.EncodeToString(sum[:])[:fingerprintLen]
}

// CallOf is the id of the call whose attempt hold is ("<call>.<n>"), or
// hold itself when it has no such form.
func CallOf(hold string) string {
	if i := strings.LastIndexByte(hold, '.'); i > 0 {
		if _, err := strconv.ParseUint(hold[i+1:], 10, 64); err == nil {
			return hold[:i]
		}
	}
	return hold
}

// Notice is a release notice, as the scripts publish it: "<id>" (a
// reader's release), "<id> <fingerprint>" (the lock was handed to that
// owner, or, with no fingerprint, freed), or "<id> <fingerprint> <hold>"
// (handed to that owner, naming the hold of the call that last queued it
// on the node: see queue.lua).
type Notice struct {
	ID   string // the release's (the same on every node)
	Who  string // fingerprint of the owner the lock was handed to; "" none
	Hold string // the hold the handing names; "" none
}

// ParseNotice reads a notice's payload. It never fails: fields it does
// not find are empty.
func ParseNotice(payload string) Notice {
	id, rest, _ := strings.Cut(payload, " ")
	who, hold, _ := strings.Cut(rest, " ")
	return Notice{ID: id, Who: who, Hold: hold}
}

// NoticeFor returns a filter of notices that lets through those naming
// owner, and those naming no one.
func NoticeFor(owner string) func(payload string) bool {
	me := Fingerprint(owner)
	return func(payload string) bool {
		who := ParseNotice(payload).Who
		return who == me || who == ""
	}
}
