// Package fair is the queue of a lock's waiters over its nodes, and the
// handoff: when the lock is freed and someone waits, it goes straight to
// the first waiter (it is never free between two holders, so no one can
// barge in and no one has to win a vote for it), and only that waiter is
// told. It owns tickets (in the nodes' time), the enqueue that every
// waiting acquire makes (also the waiter's heartbeat), eviction of
// waiters whose heartbeat lapsed (in the scripts), the handoff and its
// targeted wake-up, and leaving.
//
// A fair queue serves every waiter in ticket order; a plain one lets a
// newcomer take a free lock at once (with someone waiting, a lock is free
// only when a handoff lapsed). Every node orders the queue by the ticket
// the waiter chose once, so all nodes agree on the first waiter whatever
// order the enqueues arrived in.
package fair

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/quorum"
	"github.com/quorumlock/redlock/reentrant"
)

// Queue is the queue of one lock over a set of nodes, as one Client sees it.
type Queue struct {
	Nodes []*node.Node
	Keys  node.Keys
	// Channel is where notices for this Client's waiters are published:
	// one channel per Client and lock, so that a handoff wakes one Client.
	Channel      string
	Fair         bool          // serve waiters in ticket order (else plain)
	TTL          time.Duration // of the lock
	QueueTimeout time.Duration // a waiter's place without a heartbeat (fair)
	NodeTimeout  time.Duration // bounds each call of Leave
	// OnError is told of each failed call of Leave (may be nil).
	OnError func(node int, err error)
	// Background, when set, owns calls still out when a method returned
	// without them (a clock reading a majority already answered); its
	// owner waits for it. Nil: the method waits for them itself.
	Background *sync.WaitGroup
}

// lifetime is how long a waiter keeps its place without calling again.
// A fair waiter calls every QueueTimeout/3; a plain one waits for the
// holder's TTL, so its place lasts that long and the queue timeout more.
func (q *Queue) lifetime() time.Duration {
	if q.Fair {
		return q.QueueTimeout
	}
	return q.TTL + q.QueueTimeout
}

// Window is how long a lock handed to a waiter queued by an older client
// (whose wake entry names no hold and no span) stays its own unclaimed:
// one node timeout, for the notice's flight and the claim. Waiters of
// this version are handed the lock for their Span.
func (q *Queue) Window() time.Duration { return min(q.NodeTimeout, q.TTL) }

// Span is how long a lock handed to one of this queue's waiters stays its
// own at most: the lock's TTL, or the queue timeout when shorter, so that
// a waiter that died while queued holds up the lock no longer than its
// place would have lasted without a heartbeat. A waiter that takes the
// lease from the notices holds it until the start of the call that queued
// it plus Span, less the drift (see node.Notice and queue.lua).
func (q *Queue) Span() time.Duration { return min(q.TTL, q.QueueTimeout) }

func (q *Queue) waiter(ticket int64) node.Waiter {
	return node.Waiter{Ticket: ticket, Lifetime: q.lifetime(), Channel: q.Channel, Fair: q.Fair, Span: q.Span()}
}

// Acquire takes the lock on node i: when it is free (fair: and owner heads
// the queue), or claims it when it was handed to owner; otherwise it
// queues owner with ticket (or refreshes its heartbeat). The call is one
// of order's.
func (q *Queue) Acquire(ctx context.Context, order *node.Order, i int, owner, hold string, ticket int64) (node.Acquired, error) {
	return q.AcquireAs(ctx, order, i, owner, hold, ticket, false)
}

// AcquireAs is Acquire; when yields, the waiter takes no place in the
// queue and leaves the one it had (see node.Waiter's Yields): its
// attempts reach too few nodes to win.
func (q *Queue) AcquireAs(ctx context.Context, order *node.Order, i int, owner, hold string, ticket int64, yields bool) (node.Acquired, error) {
	w := q.waiter(ticket)
	w.Yields = yields
	return q.Nodes[i].AcquireQueued(ctx, order, q.Keys, owner, hold, q.TTL, w, q.Window())
}

// Release drops hold on node i; when it was the last, the lock goes to the
// first waiter, whose fingerprint is returned.
func (q *Queue) Release(ctx context.Context, i int, owner, hold string, tombstone time.Duration) (node.Released, string, error) {
	return q.Nodes[i].Release(ctx, q.Keys, owner, hold, tombstone, q.Window())
}

// Undo drops hold on node i, which granted it in an attempt that failed,
// and puts owner back in the queue with ticket: the waiter tries again,
// and every node must still name the same first waiter.
func (q *Queue) Undo(ctx context.Context, i int, owner, hold string, ticket int64) (node.Released, string, error) {
	return q.Nodes[i].ReleaseKeepingPlace(ctx, q.Keys, owner, hold, q.waiter(ticket), q.Window())
}

// Leave takes owner off the queue of the given nodes (and passes on a
// lock handed to it there naming an attempt of call) and waits for every
// one of them, each call bounded by NodeTimeout.
func (q *Queue) Leave(ctx context.Context, nodes []int, owner, call string) {
	q.LeaveOrdered(ctx, nil, nodes, owner, call)
}

// LeaveOrdered is Leave, with order (may be nil) learning when each call
// has its place in its node's queue: a call made on a node after
// order.Wait returned runs there after the leave. The caller announces
// the calls (order.Expect(len(nodes))).
func (q *Queue) LeaveOrdered(ctx context.Context, order *node.Order, nodes []int, owner, call string) {
	notice := reentrant.NewID() // unique: watchers count one notice per node
	quorum.Each(ctx, nodes, q.NodeTimeout, func(ctx context.Context, i int) {
		if err := q.Nodes[i].Leave(ctx, order, q.Keys, owner, call, notice, q.Window()); err != nil && q.OnError != nil {
			q.OnError(i, err)
		}
	})
}

// LeaveAfter takes owner off node i's queue after the release of hold,
// passing on a lock handed to it there only when it names hold itself
// (see node.Node.LeaveAfter), bounded by NodeTimeout.
func (q *Queue) LeaveAfter(ctx context.Context, i int, owner, hold string) {
	ctx, cancel := context.WithTimeout(ctx, q.NodeTimeout)
	defer cancel()
	if err := q.Nodes[i].LeaveAfter(ctx, q.Keys, owner, hold, reentrant.NewID(), q.Window()); err != nil && q.OnError != nil {
		q.OnError(i, err)
	}
}

// Heartbeat is how often a waiter must make an attempt (each is its
// heartbeat) to keep its place.
func (q *Queue) Heartbeat() time.Duration { return q.lifetime() / 3 }

// ForHead returns a filter of notices that lets through those naming owner
// as the waiter a lock went to, and those naming no one.
func ForHead(owner string) func(payload string) bool { return node.NoticeFor(owner) }

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
