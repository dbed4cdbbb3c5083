package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/quorumlock/redlock/fair"
	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/quorum"
)

// mode is what a plain and a fair mutex do differently. newMode, called
// where the Mutex is built, is the one place that reads the fair setting.
// Both queue their waiters on the nodes (package fair), so that a release
// hands the lock to one waiter and wakes only it.
type mode interface {
	// enter starts call k, before its first attempt.
	enter(ctx context.Context, k *call) error
	// acquire runs the acquire script of k's attempt hold on node i.
	acquire(ctx context.Context, order *node.Order, i int, k *call, hold string) (node.Acquired, error)
	// undo drops the hold of k's failed attempt on node i, which granted it.
	undo(ctx context.Context, i int, k *call, hold string) error
	// pace adjusts the wait after a failed attempt, and says whether the
	// next attempt asks the lead node first.
	pace(delay time.Duration, last outcome) (time.Duration, bool)
	// dequeue takes k's owner off the queue of the given nodes, where a
	// TryLock may have queued it.
	dequeue(ctx context.Context, nodes []int, k *call)
	// finish ends call k with lease (nil when it failed).
	finish(ctx context.Context, k *call, lease *lease)
	// releasing: the release of the lease of k's hold starts, and k
	// heard notices (k.handoff).
	releasing(k *call, hold string)
}

func newMode(m *Mutex) (mode, *fair.Queue) {
	c := m.client
	q := &fair.Queue{
		Nodes: c.nodes, Keys: m.keys.node(), Channel: m.keys.channel + ":" + c.tag, Fair: m.settings.fair,
		TTL: m.settings.ttl, QueueTimeout: m.settings.queueTimeout, NodeTimeout: m.settings.nodeTimeout,
		OnError:    func(i int, err error) { c.nodeError(&m.settings, i, err) },
		Background: &c.background,
	}
	w := waiters{m: m, queue: q}
	if m.reader {
		return readMode{m: m, channel: m.keys.lock + readersChannel}, q
	}
	if q.Fair {
		return fairMode{w}, q
	}
	return plainMode{w}, q
}

// waiters is what both modes do with the nodes' queue.
type waiters struct {
	m     *Mutex
	queue *fair.Queue
}

// takeTicket gives k its place in the queue, in the nodes' time.
func (w waiters) takeTicket(ctx context.Context, k *call) {
	c := w.m.client
	k.ticket = c.tickets.Next(c.clock.Now(ctx, w.queue))
}

// undo: a waiter keeps its place in the queue on the nodes that granted.
func (w waiters) undo(ctx context.Context, i int, k *call, hold string) error {
	if !k.wait {
		_, _, err := w.queue.Release(ctx, i, k.owner, hold, 0)
		return err
	}
	_, _, err := w.queue.Undo(ctx, i, k.owner, hold, k.ticket)
	return err
}

// leaveQueue: the waiter leaves the queue on every node that may still
// hold its place (or a lock handed to it that the lease does not count).
func (w waiters) leaveQueue(ctx context.Context, k *call, lease *lease) {
	var queued []int
	for i := range w.m.client.nodes {
		// A node that granted took us off its queue. One still to answer
		// is left to the lease's late-answer handler, which leaves its
		// queue after the answer: a leave sent now could overtake the
		// acquire and be undone by it.
		if lease == nil || k.granted.Replies[i].Vote == quorum.No || k.granted.Replies[i].Vote == quorum.Failed {
			queued = append(queued, i)
		}
	}
	if lease == nil {
		// The waiter gives up: off the queue before Lock returns.
		w.queue.Leave(context.WithoutCancel(ctx), queued, k.owner, k.id)
		return
	}
	if len(queued) == 0 {
		k.unwatch()
		return // every node granted (an uncontended Lock): nothing to leave
	}
	// Holding the lock already: leaving the other nodes' queues must not
	// delay Lock (a dead node would cost the node timeout). A call that
	// hears notices first gives the ones on their way up to the node
	// timeout, and does not leave the nodes that handed it the lock
	// (handoff.settle); the lease's release takes over the leave if it
	// starts sooner.
	h := k.handoff
	if h == nil || k.watcher == nil { // nothing to hear: finish left no watcher behind
		w.m.client.background.Go(func() { w.queue.Leave(context.WithoutCancel(ctx), queued, k.owner, k.id) })
		return
	}
	h.expectLeave(lease.hold, queued)
	w.m.client.background.Go(func() {
		h.settle(lease.hold, max(handoffGrace, w.m.settings.nodeTimeout), w.m.client.done)
		k.unwatch()
		if rest := h.takeLeave(lease.hold); len(rest) > 0 {
			w.queue.Leave(context.WithoutCancel(ctx), rest, k.owner, k.id)
		}
	})
}

// releasing: notices heard from now on do not count, and the queues not
// left yet are left now, each leave placed on its node ahead of the
// release.
func (w waiters) releasing(k *call, hold string) {
	k.handoff.freeze(hold)
	rest := k.handoff.takeLeave(hold)
	if len(rest) == 0 {
		return
	}
	order := &node.Order{}
	order.Expect(len(rest))
	w.m.client.background.Go(func() { w.queue.LeaveOrdered(context.Background(), order, rest, k.owner, k.id) })
	order.Wait()
}

// plainMode: goroutines of one Client queue at the Client's gate, and
// only the first contends on the nodes. A newcomer takes a free lock in
// one round; one that was refused waits in the nodes' queue for a handoff.
type plainMode struct{ waiters }

func (p plainMode) enter(ctx context.Context, k *call) error {
	m, c := p.m, p.m.client
	if err := c.gates.enter(ctx, c.done, m.keys.lock, k.owner, k.wait); err != nil {
		switch {
		case errors.Is(err, ErrClosed):
			return ErrClosed
		case ctx.Err() != nil:
			return gaveUp(ctx, nil)
		}
		return fmt.Errorf("%w: another owner of this client holds it or is acquiring it", ErrNotAcquired)
	}
	k.gated = true
	if k.wait {
		p.takeTicket(ctx, k)
		if c.hub.Active(p.queue.Channel) {
			k.watch(ctx) // subscribed already: watch before the first attempt, at no cost
		}
	}
	return nil
}

// acquire: a TryLock does not queue (it will not wait for a handoff).
func (p plainMode) acquire(ctx context.Context, order *node.Order, i int, k *call, hold string) (node.Acquired, error) {
	if !k.wait {
		return p.m.client.nodes[i].Acquire(ctx, order, p.m.keys.node(), k.owner, hold, p.m.settings.ttl)
	}
	return p.queue.Acquire(ctx, order, i, k.owner, hold, k.ticket)
}

// pace: ask the lead node first only right after a split vote. After
// losing the lead, ask every node again, or a stale hold left on the lead
// node alone (a minority) would block this waiter until it expired. Call
// again before the place in the queue lapses.
func (p plainMode) pace(delay time.Duration, last outcome) (time.Duration, bool) {
	return min(delay, p.queue.Heartbeat()), last.split
}

func (plainMode) dequeue(context.Context, []int, *call) {} // a plain TryLock never queues

// finish: a lease takes over the gate entry, and leaves it when it ends.
func (p plainMode) finish(ctx context.Context, k *call, lease *lease) {
	if k.wait {
		p.leaveQueue(ctx, k, lease)
	}
	if k.gated && lease == nil {
		p.m.client.gates.leave(p.m.keys.lock)
	}
}

// fairMode: the nodes' queue orders every waiter, across Clients and
// within one.
type fairMode struct{ waiters }

// enter: a waiter takes its ticket and subscribes to notices with its
// first attempt (and waits for the subscription if that attempt fails).
func (f fairMode) enter(ctx context.Context, k *call) error {
	f.takeTicket(ctx, k)
	if k.wait {
		k.subscribe()
	}
	return nil
}

func (f fairMode) acquire(ctx context.Context, order *node.Order, i int, k *call, hold string) (node.Acquired, error) {
	return f.queue.Acquire(ctx, order, i, k.owner, hold, k.ticket)
}

// pace: each attempt is also the waiter's heartbeat in the queue. A node
// that granted found this waiter at the head: the attempt met a grant
// still being undone (the nodes named different heads for a moment), so
// try again after a few milliseconds, not after a notice that may not
// come from a quorum.
func (f fairMode) pace(delay time.Duration, last outcome) (time.Duration, bool) {
	if last.votes > 0 {
		delay = min(delay, rand.N(fairRetryJitter)+time.Millisecond)
	}
	return min(delay, f.queue.Heartbeat()), false
}

// fairRetryJitter spreads the retries of waiters that each found
// themselves at the head of some node's queue: a few round trips.
const fairRetryJitter = 8 * time.Millisecond

func (f fairMode) dequeue(ctx context.Context, nodes []int, k *call) {
	f.queue.Leave(ctx, nodes, k.owner, k.id)
}

func (f fairMode) finish(ctx context.Context, k *call, lease *lease) { f.leaveQueue(ctx, k, lease) }
