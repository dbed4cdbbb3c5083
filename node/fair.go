package node

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"time"
)

var (
	//go:embed scripts/acquire_fair.lua
	acquireFairSource string
	//go:embed scripts/release_fair.lua
	releaseFairSource string
	//go:embed scripts/leave.lua
	leaveSource string

	acquireFairScript = newScript(acquireFairSource)
	releaseFairScript = newScript(releaseFairSource)
	leaveScript       = newScript(leaveSource)
)

// AcquireFair takes the lock when it is free and owner heads the queue,
// and otherwise queues owner with ticket and refreshes its heartbeat. A
// refusal because another waiter is ahead is Behind; that waiter is then
// told on channel. The call is one of order's (nil: of none).
func (n *Node) AcquireFair(ctx context.Context, order *Order, keys Keys, channel, owner, hold string, ttl time.Duration,
	ticket int64, queueTimeout time.Duration) (Acquired, error) {
	reply, err := n.calls.run(ctx, order, acquireFairScript, []string{keys.Lock, keys.Gone, keys.Queue, keys.Alive},
		owner, hold, milliseconds(ttl), strconv.FormatInt(ticket, 10), milliseconds(queueTimeout), channel).Result()
	if err != nil {
		return Acquired{}, err
	}
	return decodeAcquired(reply)
}

// ReleaseFair is Release for a fair lock: the notice names the new head,
// whose fingerprint is returned too when the lock was deleted.
func (n *Node) ReleaseFair(ctx context.Context, keys Keys, channel, owner, hold string, tombstone time.Duration) (Released, string, error) {
	reply, err := n.run(ctx, releaseFairScript, []string{keys.Lock, keys.Gone, keys.Queue, keys.Alive},
		owner, hold, channel, tombstoneMilliseconds(tombstone)).Result()
	if err != nil {
		return 0, "", err
	}
	return decodeReleasedFair(reply)
}

// ReleaseFairKeepingPlace is ReleaseFair for the undo of a failed attempt
// by a waiter that will try again: owner goes back in the queue with
// ticket (and a heartbeat), where the grant had taken it off.
func (n *Node) ReleaseFairKeepingPlace(ctx context.Context, keys Keys, channel, owner, hold string,
	ticket int64, queueTimeout time.Duration) (Released, string, error) {
	reply, err := n.run(ctx, releaseFairScript, []string{keys.Lock, keys.Gone, keys.Queue, keys.Alive},
		owner, hold, channel, "0", strconv.FormatInt(ticket, 10), milliseconds(queueTimeout)).Result()
	if err != nil {
		return 0, "", err
	}
	return decodeReleasedFair(reply)
}

func decodeReleasedFair(reply any) (Released, string, error) {
	deleted, ok := reply.([]any)
	if !ok {
		released, err := decodeReleased(reply)
		return released, "", err
	}
	if len(deleted) == 2 {
		code, codeOK := deleted[0].(int64)
		head, headOK := deleted[1].(string)
		if codeOK && headOK && Released(code) == LockDeleted {
			return LockDeleted, head, nil
		}
	}
	return 0, "", fmt.Errorf("%w to release: %v", ErrBadReply, reply)
}

// Leave takes owner out of the queue; when the lock is free the new head is
// told on channel, with notice as the notice's id.
func (n *Node) Leave(ctx context.Context, keys Keys, channel, owner, notice string) error {
	reply, err := n.run(ctx, leaveScript, []string{keys.Lock, keys.Queue, keys.Alive},
		owner, notice, channel).Result()
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
