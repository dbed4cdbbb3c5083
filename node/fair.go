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
	//go:embed scripts/fence.lua
	fenceSource string

	acquireFairScript = newScript(acquireFairSource)
	releaseFairScript = newScript(releaseFairSource)
	leaveScript       = newScript(leaveSource)
	fenceScript       = newScript(fenceSource)
)

// FairKeys are the keys of a fair lock.
type FairKeys struct {
	Lock, Fence, Queue, Alive string
}

// AcquireFair takes the lock when it is free and owner heads the queue,
// and otherwise queues owner with ticket and refreshes its heartbeat. A
// refusal because another waiter is ahead is Behind; that waiter is then
// told on channel.
func (n *Node) AcquireFair(ctx context.Context, keys FairKeys, channel, owner, hold string, ttl time.Duration, fence bool,
	ticket int64, queueTimeout time.Duration) (Acquired, error) {
	fenceFlag := "0"
	if fence {
		fenceFlag = "1"
	}
	reply, err := n.run(ctx, acquireFairScript, []string{keys.Lock, keys.Fence, keys.Queue, keys.Alive},
		owner, hold, milliseconds(ttl), fenceFlag, strconv.FormatInt(ticket, 10), milliseconds(queueTimeout), channel).Slice()
	if err != nil {
		return Acquired{}, err
	}
	return decodeAcquired(reply)
}

// ReleaseFair is Release for a fair lock: the notice names the new head,
// whose fingerprint is returned too when the lock was deleted.
func (n *Node) ReleaseFair(ctx context.Context, keys FairKeys, channel, owner, hold string) (Released, string, error) {
	reply, err := n.run(ctx, releaseFairScript, []string{keys.Lock, keys.Queue, keys.Alive},
		owner, hold, channel).Result()
	if err != nil {
		return 0, "", err
	}
	if deleted, ok := reply.([]any); ok {
		code, codeOK := deleted[0].(int64)
		head, headOK := "", false
		if len(deleted) == 2 {
			head, headOK = deleted[1].(string)
		}
		if !codeOK || !headOK || Released(code) != LockDeleted {
			return 0, "", fmt.Errorf("%w to release: %v", ErrBadReply, reply)
		}
		return LockDeleted, head, nil
	}
	released, err := decodeReleased(reply)
	return released, "", err
}

// Leave takes owner out of the queue; when the lock is free the new head is
// told on channel, with notice as the notice's id.
func (n *Node) Leave(ctx context.Context, keys FairKeys, channel, owner, notice string) error {
	reply, err := n.run(ctx, leaveScript, []string{keys.Lock, keys.Queue, keys.Alive},
		owner, notice, channel).Result()
	if err != nil {
		return err
	}
	if code, ok := reply.(int64); !ok || code < 0 || code > 1 {
		return fmt.Errorf("%w to leave: %v", ErrBadReply, reply)
	}
	return nil
}

// RaiseFence sets the fence counter to at least token and answers the
// counter after the call.
func (n *Node) RaiseFence(ctx context.Context, key string, token uint64) (uint64, error) {
	reply, err := n.run(ctx, fenceScript, []string{key}, strconv.FormatUint(token, 10)).Result()
	if err != nil {
		return 0, err
	}
	value, ok := reply.(int64)
	if !ok || value < 0 || uint64(value) < token {
		return 0, fmt.Errorf("%w to fence: %v", ErrBadReply, reply)
	}
	return uint64(value), nil
}
