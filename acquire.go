package redlock

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/pubsub"
	"github.com/quorumlock/redlock/quorum"
	"github.com/quorumlock/redlock/reentrant"
)

// call is the state of one Lock or TryLock call.
type call struct {
	m       *Mutex
	owner   string
	wait    bool
	gated   bool                        // holds an entry of the Client's gate
	ticket  int64                       // fair mode: this waiter's place in the queue
	watcher *pubsub.Watcher             // release notices, once waiting
	granted quorum.Tally[node.Acquired] // the winning round, for fair clean-up
}

func (m *Mutex) acquire(ctx context.Context, wait bool) (*Lease, error) {
	if m.err != nil {
		return nil, m.err
	}
	if ctx == nil {
		return nil, fmt.Errorf("%w: nil context", ErrConfig)
	}
	c := m.client
	if !c.begin() {
		return nil, ErrClosed
	}
	defer c.end()
	owner, explicit := reentrant.Owner(ctx)
	if explicit && owner == "" {
		return nil, fmt.Errorf("%w: empty owner in context", ErrConfig)
	}
	if !explicit {
		owner = reentrant.NewID()
	}
	began := time.Now()
	k := &call{m: m, owner: owner, wait: wait}
	if err := k.enter(ctx); err != nil {
		return nil, err
	}
	pacer := m.newPacer()
	contended := false // the last attempt split the votes or lost the lead
	for {
		if err := ctx.Err(); err != nil {
			k.finish(ctx, nil)
			return nil, gaveUp(ctx, nil)
		}
		lease, outcome := m.attempt(ctx, k, contended)
		if lease != nil && ctx.Err() != nil {
			// Granted just as ctx ended: the caller has stopped waiting and
			// would never unlock it, so give it back (as x/sync/semaphore
			// does). The release leaves the gate.
			k.finish(ctx, lease)
			_ = lease.release(context.WithoutCancel(ctx), ErrReleased, true)
			return nil, gaveUp(ctx, nil)
		}
		if lease != nil {
			k.finish(ctx, lease)
			if err := c.track(lease); err != nil {
				_ = lease.release(context.WithoutCancel(ctx), ErrClosed, true)
				return nil, err
			}
			m.observeAcquired(lease, time.Since(began), outcome.votes)
			return lease, nil
		}
		if !wait || errors.Is(outcome.err, ErrConfig) {
			k.finish(ctx, nil)
			return nil, outcome.err
		}
		if k.watcher == nil {
			// Subscribe, then try again at once: a release between the
			// failed attempt and the subscription must not be missed.
			k.watch(ctx)
			continue
		}
		delay, ok := pacer.next(outcome)
		if !ok {
			k.finish(ctx, nil)
			return nil, outcome.err
		}
		if m.settings.fair {
			// Each attempt is also the waiter's heartbeat in the queue.
			delay = min(delay, m.settings.queueTimeout/3)
		} else {
			// Ask the lead node first only right after a split vote: after
			// losing the lead, ask every node again, or a stale hold left
			// on the lead node alone (a minority) would block this waiter
			// until it expired.
			contended = outcome.split
		}
		timer := time.NewTimer(delay)
		select {
		case <-k.watcher.Wake():
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			k.finish(ctx, nil)
			return nil, gaveUp(ctx, outcome.err)
		case <-c.done:
			timer.Stop()
			k.finish(ctx, nil)
			return nil, ErrClosed
		}
		timer.Stop()
	}
}

// enter starts the call: a fair waiter takes its ticket and watches for
// notices before its first attempt; any other waits its turn at the
// Client's gate (the fair queue orders fair waiters itself, across
// Clients and within one).
func (k *call) enter(ctx context.Context) error {
	m, c := k.m, k.m.client
	if m.settings.fair {
		k.ticket = c.tickets.next()
		if k.wait {
			k.watch(ctx)
		}
		return nil
	}
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
	if k.wait && c.hub.Active(m.keys.channel) {
		k.watch(ctx) // subscribed already: watch before the first attempt, at no cost
	}
	return nil
}

func (k *call) watch(ctx context.Context) {
	m := k.m
	var accept func(string) bool
	if m.settings.fair {
		// A fair release names the new head: only it wakes.
		me := fingerprint(k.owner)
		accept = func(payload string) bool {
			_, head, _ := strings.Cut(payload, " ")
			return head == me || head == ""
		}
	}
	k.watcher = m.client.hub.Watch(ctx, m.keys.channel, m.settings.quorumOf(len(m.client.nodes)), accept)
}

// finish ends the call with lease (nil when it failed). A lease takes over
// the gate entry, and leaves it when it ends. A fair waiter leaves the
// queue on every node that may still hold its place.
func (k *call) finish(ctx context.Context, lease *Lease) {
	m := k.m
	if k.watcher != nil {
		k.watcher.Leave(lease != nil)
	}
	if k.gated && lease == nil {
		m.client.gates.leave(m.keys.lock)
	}
	if !m.settings.fair {
		return
	}
	var queued []int
	for i := range m.client.nodes {
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
		m.leaveQueue(context.WithoutCancel(ctx), queued, k.owner)
		return
	}
	// Holding the lock already: leaving the other nodes' queues must not
	// delay Lock (a dead node would cost the node timeout).
	m.client.background.Go(func() { m.leaveQueue(context.WithoutCancel(ctx), queued, k.owner) })
}

// leaveQueue takes owner off the fair queue of the given nodes.
func (m *Mutex) leaveQueue(ctx context.Context, nodes []int, owner string) {
	notice := reentrant.NewID()
	m.onNodes(ctx, nodes, func(ctx context.Context, i int) {
		ctx, cancel := context.WithTimeout(ctx, m.settings.nodeTimeout)
		defer cancel()
		if err := m.client.nodes[i].Leave(ctx, m.keys.fair(), m.keys.channel, owner, notice); err != nil {
			m.client.nodeError(&m.settings, i, err)
		}
	})
}

// fingerprint is how scripts name an owner in replies and notices: enough
// to recognise one's own id, useless for releasing someone else's lock.
func fingerprint(owner string) string {
	sum := sha1.Sum([]byte(owner))
	return hex.EncodeToString(sum[:])[:16]
}

// tickets issue fair-mode queue positions: microseconds since the epoch,
// bumped to stay unique and increasing within the process. Waiters of
// different processes are ordered by their clocks; ties are broken the same
// way on every node (by owner id).
type tickets struct{ last atomic.Int64 }

func (t *tickets) next() int64 {
	for {
		now, last := time.Now().UnixMicro(), t.last.Load()
		ticket := max(now, last+1)
		if t.last.CompareAndSwap(last, ticket) {
			return ticket
		}
	}
}
