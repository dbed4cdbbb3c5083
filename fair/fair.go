// Package fair is the fair mode of a lock: waiters are served in arrival
// order, across processes. It owns the queue on the nodes: tickets, the
// enqueue that every fair acquire makes (and that is also the waiter's
// heartbeat), eviction of waiters whose heartbeat lapsed (in the scripts),
// the release notice that names the new head so that only it wakes, and
// leaving the queue.
//
// Every node orders the queue by the ticket the waiter chose once, so all
// nodes agree on the head whatever order the enqueues arrived in; a list
// appended in arrival order per node could name different heads on
// different nodes and stall the quorum.
package fair

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"strings"
	"sync/atomic"
	"time"

	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/reentrant"
	"golang.org/x/sync/errgroup"
)

// Queue is the fair queue of one lock over a set of nodes.
type Queue struct {
	Nodes        []*node.Node
	Keys         node.Keys
	Channel      string        // release notices
	TTL          time.Duration // of the lock
	QueueTimeout time.Duration // a waiter's place without a heartbeat
	NodeTimeout  time.Duration // bounds each call of Leave
	// OnError is told of each failed call of Leave (may be nil).
	OnError func(node int, err error)
}

// Acquire takes the lock on node i when it is free and owner heads the
// queue; otherwise it queues owner with ticket (or refreshes its
// heartbeat). The call is one of order's.
func (q *Queue) Acquire(ctx context.Context, order *node.Order, i int, owner, hold string, ticket int64) (node.Acquired, error) {
	return q.Nodes[i].AcquireFair(ctx, order, q.Keys, q.Channel, owner, hold, q.TTL, ticket, q.QueueTimeout)
}

// Release drops hold on node i; when it was the last, the notice (and the
// reply) names the new head.
func (q *Queue) Release(ctx context.Context, i int, owner, hold string, tombstone time.Duration) (node.Released, string, error) {
	return q.Nodes[i].ReleaseFair(ctx, q.Keys, q.Channel, owner, hold, tombstone)
}

// Undo drops hold on node i, which granted it in an attempt that failed,
// and puts owner back in the queue with ticket: the waiter tries again,
// and every node must still name the same head.
func (q *Queue) Undo(ctx context.Context, i int, owner, hold string, ticket int64) (node.Released, string, error) {
	return q.Nodes[i].ReleaseFairKeepingPlace(ctx, q.Keys, q.Channel, owner, hold, ticket, q.QueueTimeout)
}

// Leave takes owner off the queue of the given nodes and waits for every
// one of them (each call bounded by NodeTimeout). Where the lock is free,
// the new head is told.
func (q *Queue) Leave(ctx context.Context, nodes []int, owner string) {
	notice := reentrant.NewID() // unique: watchers count one notice per node
	var group errgroup.Group
	for _, i := range nodes {
		group.Go(func() error {
			ctx, cancel := context.WithTimeout(ctx, q.NodeTimeout)
			defer cancel()
			if err := q.Nodes[i].Leave(ctx, q.Keys, q.Channel, owner, notice); err != nil && q.OnError != nil {
				q.OnError(i, err)
			}
			return nil
		})
	}
	_ = group.Wait() // each failure went to OnError
}

// Heartbeat is how often a waiter must make an attempt (each is its
// heartbeat) to keep its place.
func (q *Queue) Heartbeat() time.Duration { return q.QueueTimeout / 3 }

// ForHead returns a filter of release notices that lets through those
// naming owner as the new head, and those naming no one.
func ForHead(owner string) func(payload string) bool {
	me := Fingerprint(owner)
	return func(payload string) bool {
		_, head, _ := strings.Cut(payload, " ")
		return head == me || head == ""
	}
}

// Fingerprint is how scripts name an owner in replies and notices: enough
// to recognise one's own id, useless for releasing someone else's lock.
func Fingerprint(owner string) string {
	sum := sha1.Sum([]byte(owner))
	return hex.EncodeToString(sum[:])[:16]
}

// Tickets issue queue positions: microseconds since the epoch on the
// nodes' clocks (see Clock), bumped to stay unique and increasing within
// the process. Ties between processes are broken the same way on every
// node (by owner id).
type Tickets struct{ last atomic.Int64 }

// Next is a new ticket for a waiter arriving at now (on the nodes' clock).
func (t *Tickets) Next(now time.Time) int64 {
	for {
		last := t.last.Load()
		ticket := max(now.UnixMicro(), last+1)
		if t.last.CompareAndSwap(last, ticket) {
			return ticket
		}
	}
}
