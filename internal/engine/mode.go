package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/quorumlock/redlock/fair"
	"github.com/quorumlock/redlock/internal/core"
	"github.com/quorumlock/redlock/internal/leases"
	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/quorum"
	"github.com/quorumlock/redlock/reentrant"
)

// mode is what a plain, a fair and a read mutex do differently. newMode,
// called where the Mutex is built, is the one place that chooses.
// Both queue their waiters on the nodes (package fair), so that a release
// hands the lock to one waiter and wakes only it.
type mode interface {
	// enter starts call k, before its first attempt.
	enter(ctx context.Context, k *lockCall) error
	// acquire runs the acquire script of k's attempt hold on node i.
	acquire(ctx context.Context, order *node.Order, i int, k *lockCall, hold string) (node.Acquired, error)
	// undo drops the hold of k's failed attempt on node i, which granted it.
	undo(ctx context.Context, i int, k *lockCall, hold string) error
	// pace adjusts the wait after a failed attempt, and says whether the
	// next attempt asks the lead node first.
	pace(delay time.Duration, last outcome) (time.Duration, bool)
	// dequeue takes k's owner off the queue of the given nodes, where a
	// TryLock may have queued it.
	dequeue(ctx context.Context, nodes []int, k *lockCall)
	// finish ends call k with lease (nil when it failed).
	finish(ctx context.Context, k *lockCall, lease *leases.Lease)
	// releasing: the release of the lease of k's hold starts, and k
	// heard notices (k.handoff).
	releasing(k *lockCall, hold string)

	// owner is a call's owner: ctx's, the readers', or a new one (fresh).
	owner(ctx context.Context) (owner string, fresh bool, err error)
	// adopts reports whether waiters take leases from handoff notices.
	adopts() bool
	// subscribe starts waking k on release notices.
	subscribe(k *lockCall)
	// behind reports that holder's holds are a waiting writer's that
	// this mode's callers queue behind.
	behind(replies []quorum.Reply[node.Acquired], holder string) bool
	leases.LeaseMode
}

func newMode(m *Mutex, read bool) (mode, *fair.Queue) {
	c := m.client
	q := &fair.Queue{
		Nodes: c.runtime.Nodes, Keys: m.target.Keys.Node(), Channel: m.target.Keys.Channel + ":" + c.tag, Fair: m.target.Settings.Fair,
		TTL: m.target.Settings.TTL, QueueTimeout: m.target.Settings.QueueTimeout, NodeTimeout: m.target.Settings.NodeTimeout,
		OnError:    func(i int, err error) { c.runtime.NodeError(&m.target.Settings, i, err) },
		Background: &c.runtime.Background,
	}
	w := waiters{m: m, queue: q}
	if read {
		return readMode{m: m, channel: m.target.Keys.Lock + readersChannel}, q
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
func (w waiters) takeTicket(ctx context.Context, k *lockCall) {
	c := w.m.client
	k.ticket = c.tickets.Next(c.clock.Now(ctx, w.queue))
}

// undo: a waiter keeps its place in the queue on the nodes that granted,
// unless it yields (see reach): then the lock goes on to the next waiter.
func (w waiters) undo(ctx context.Context, i int, k *lockCall, hold string) error {
	if !k.wait || k.reach.yields {
		_, _, err := w.queue.Release(ctx, i, k.owner, hold, 0)
		return err
	}
	_, _, err := w.queue.Undo(ctx, i, k.owner, hold, k.ticket)
	return err
}

// leaveQueue: the waiter leaves the queue on every node that may still
// hold its place (or a lock handed to it that the lease does not count).
func (w waiters) leaveQueue(ctx context.Context, k *lockCall, lease *leases.Lease) {
	var queued []int
	for i := range w.m.client.runtime.Nodes {
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
		w.m.client.runtime.Background.Go(func() { w.queue.Leave(context.WithoutCancel(ctx), queued, k.owner, k.id) })
		return
	}
	h.expectLeave(lease.Hold, queued)
	w.m.client.runtime.Background.Go(func() {
		h.settle(lease.Hold, max(handoffGrace, w.m.target.Settings.NodeTimeout), w.m.client.runtime.Done)
		k.unwatch()
		if rest := h.takeLeave(lease.Hold); len(rest) > 0 {
			w.queue.Leave(context.WithoutCancel(ctx), rest, k.owner, k.id)
		}
	})
}

// releasing: notices heard from now on do not count, and the queues not
// left yet are left now, each leave placed on its node ahead of the
// release.
func (w waiters) releasing(k *lockCall, hold string) {
	k.handoff.freeze(hold)
	rest := k.handoff.takeLeave(hold)
	if len(rest) == 0 {
		return
	}
	order := &node.Order{}
	order.Expect(len(rest))
	w.m.client.runtime.Background.Go(func() { w.queue.LeaveOrdered(context.Background(), order, rest, k.owner, k.id) })
	order.Wait()
}

// owner: the owner ctx carries, or one of the call's own.
func (w waiters) owner(ctx context.Context) (string, bool, error) {
	owner, explicit := reentrant.Owner(ctx)
	switch {
	case explicit && owner == "":
		return "", false, fmt.Errorf("%w: empty owner in context", core.ErrConfig)
	case explicit && owner == node.Readers:
		return "", false, fmt.Errorf("%w: the owner %q is kept for the read holds of an RWMutex", core.ErrConfig, owner)
	case explicit && owner == node.ForcedOwner:
		return "", false, fmt.Errorf("%w: the owner %q is kept for a handing that ForceUnlock ended", core.ErrConfig, owner)
	case !explicit:
		return reentrant.NewID(), true, nil
	}
	return owner, false, nil
}

// adopts: a lease taken from notices is valid for the queue's Span from
// its attempt's start, so without the watchdog it must not be shorter
// than the TTL the caller asked for.
func (w waiters) adopts() bool {
	return w.m.target.Settings.Watchdog || w.queue.Span() >= w.m.target.Settings.TTL
}

// HoldContext: the lease's Context carries its owner, so Lock re-enters.
func (w waiters) HoldContext(values context.Context, l *leases.Lease) context.Context {
	return reentrant.WithOwner(values, l.Owner())
}

// subscribe: k hears the notices naming the queue's head.
func (w waiters) subscribe(k *lockCall) {
	var heard func(int, string)
	if k.handoff != nil {
		heard = k.handoff.heard
	}
	k.watcher = w.m.client.runtime.Hub.Subscribe(w.queue.Channel, w.m.target.Need(), fair.ForHead(k.owner), heard)
}

func (w waiters) LeaveAfter(ctx context.Context, i int, owner, hold string) {
	w.queue.LeaveAfter(ctx, i, owner, hold)
}

func (waiters) behind([]quorum.Reply[node.Acquired], string) bool { return false }

func (waiters) Shared() bool { return false }

// plainMode: goroutines of one Client queue at the Client's gate, and
// only the first contends on the nodes. A newcomer takes a free lock in
// one round; one that was refused waits in the nodes' queue for a handoff.
type plainMode struct{ waiters }

func (p plainMode) enter(ctx context.Context, k *lockCall) error {
	m, c := p.m, p.m.client
	if err := c.runtime.Gates.Enter(ctx, c.runtime.Done, m.target.Keys.Lock, k.owner, k.wait); err != nil {
		switch {
		case errors.Is(err, core.ErrClosed):
			return core.ErrClosed
		case ctx.Err() != nil:
			return gaveUp(ctx, nil)
		}
		return fmt.Errorf("%w: another owner of this client holds it or is acquiring it", core.ErrNotAcquired)
	}
	k.gated = true
	if k.wait {
		p.takeTicket(ctx, k)
		if c.runtime.Hub.Active(p.queue.Channel) {
			k.watch(ctx) // subscribed already: watch before the first attempt, at no cost
		}
	}
	return nil
}

// acquire: a TryLock does not queue (it will not wait for a handoff).
func (p plainMode) acquire(ctx context.Context, order *node.Order, i int, k *lockCall, hold string) (node.Acquired, error) {
	if !k.wait {
		return p.m.client.runtime.Nodes[i].Acquire(ctx, order, p.m.target.Keys.Node(), k.owner, hold, p.m.target.Settings.TTL)
	}
	return p.queue.AcquireAs(ctx, order, i, k.owner, hold, k.ticket, k.reach.yields)
}

// pace: ask the lead node first only right after a split vote. After
// losing the lead, ask every node again, or a stale hold left on the lead
// node alone (a minority) would block this waiter until it expired. Call
// again before the place in the queue lapses.
func (p plainMode) pace(delay time.Duration, last outcome) (time.Duration, bool) {
	return min(delay, p.queue.Heartbeat()), last.split
}

func (plainMode) dequeue(context.Context, []int, *lockCall) {} // a plain TryLock never queues

// finish: a lease takes over the gate entry, and leaves it when it ends.
func (p plainMode) finish(ctx context.Context, k *lockCall, lease *leases.Lease) {
	if k.wait {
		p.leaveQueue(ctx, k, lease)
	}
	if k.gated && lease == nil {
		p.m.client.runtime.Gates.Exit(p.m.target.Keys.Lock)
	}
}

// fairMode: the nodes' queue orders every waiter, across Clients and
// within one.
type fairMode struct{ waiters }

// enter: a waiter takes its ticket and subscribes to notices with its
// first attempt (and waits for the subscription if that attempt fails).
func (f fairMode) enter(ctx context.Context, k *lockCall) error {
	f.takeTicket(ctx, k)
	if k.wait {
		k.subscribe()
	}
	return nil
}

func (f fairMode) acquire(ctx context.Context, order *node.Order, i int, k *lockCall, hold string) (node.Acquired, error) {
	return f.queue.AcquireAs(ctx, order, i, k.owner, hold, k.ticket, k.reach.yields)
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

func (f fairMode) dequeue(ctx context.Context, nodes []int, k *lockCall) {
	f.queue.Leave(ctx, nodes, k.owner, k.id)
}

func (f fairMode) finish(ctx context.Context, k *lockCall, lease *leases.Lease) {
	f.leaveQueue(ctx, k, lease)
}

// readMode is the read side of an RWMutex: no gate (readers of one Client
// do not exclude each other), no place in the queue (a writer is handed
// the lock, a reader is not), woken by the writer's release on the
// readers' channel.
type readMode struct {
	m       *Mutex
	channel string
}

// enter: a waiting reader watches the readers' channel before its first
// attempt only when it is subscribed already (at no cost); otherwise after
// its first refusal, as a Mutex's waiter does (call.watch), so that a
// reader that gets the lock at once never waits for a subscription (a
// paused node would hold that up for the node timeout).
func (r readMode) enter(ctx context.Context, k *lockCall) error {
	k.nested = readHeld(ctx, r.m) != nil
	if k.wait && r.m.client.runtime.Hub.Active(r.channel) {
		k.subscribe()
	}
	return nil
}

// subscribe starts waking k on every notice of the readers' channel.
func (r readMode) subscribe(k *lockCall) {
	c := r.m.client
	k.watcher = c.runtime.Hub.Subscribe(r.channel, r.m.target.Settings.QuorumOf(len(c.runtime.Nodes)), func(string) bool { return true }, nil)
}

func (r readMode) acquire(ctx context.Context, order *node.Order, i int, k *lockCall, hold string) (node.Acquired, error) {
	return r.m.client.runtime.Nodes[i].AcquireRead(ctx, order, r.m.target.Keys.Node(), hold, r.m.target.Settings.TTL, k.nested)
}

func (r readMode) undo(ctx context.Context, i int, k *lockCall, hold string) error {
	_, _, err := r.m.target.Queue.Release(ctx, i, k.owner, hold, 0)
	return err
}

func (readMode) pace(delay time.Duration, _ outcome) (time.Duration, bool) {
	return min(delay, readerRecheck), false
}

func (readMode) dequeue(context.Context, []int, *lockCall) {}

func (readMode) finish(context.Context, *lockCall, *leases.Lease) {}

func (readMode) releasing(*lockCall, string) {} // readers take no lease from notices

// owner: every read hold is the readers'; nested read holds are told
// apart by their hold ids.
func (readMode) owner(ctx context.Context) (string, bool, error) {
	if owner, explicit := reentrant.Owner(ctx); explicit && owner == "" {
		return "", false, fmt.Errorf("%w: empty owner in context", core.ErrConfig)
	}
	return node.Readers, false, nil
}

func (readMode) adopts() bool { return false } // a reader is never handed the lock

// HoldContext: a read hold's Context says so (RLock with it re-enters,
// Lock with it is refused), and keeps the caller's owner, if any.
func (readMode) HoldContext(values context.Context, l *leases.Lease) context.Context {
	return withReadHold(values, l)
}

func (readMode) LeaveAfter(context.Context, int, string, string) {} // readers never queue

// behind: readers arriving after a waiting writer wait for it.
func (readMode) behind(replies []quorum.Reply[node.Acquired], holder string) bool {
	return behind(replies, holder)
}

func (readMode) Shared() bool { return true }
