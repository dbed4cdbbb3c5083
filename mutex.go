package redlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/quorum"
	"github.com/quorumlock/redlock/reentrant"
)

// Mutex is one named lock over the Client's nodes. It holds no state of its
// own between calls: it is cheap, and safe for concurrent use.
type Mutex struct {
	client   *Client
	name     string
	settings settings
	keys     keys
	err      error // invalid configuration, reported by Lock and TryLock
}

// Name is the lock's name.
func (m *Mutex) Name() string { return m.name }

// Lock waits until the lock is acquired or ctx is done.
//
// The owner is the one ctx carries (WithOwner, or a Lease's Context): if
// that owner already holds the lock, Lock re-enters it at once and returns
// a new Lease for the extra hold. Without one, each Lock is a new owner.
//
// When ctx ends first, the error matches both ErrNotAcquired and ctx's
// error, and nothing is left locked on any node.
func (m *Mutex) Lock(ctx context.Context) (*Lease, error) {
	return m.acquire(ctx, true)
}

// TryLock makes one attempt. When another owner holds the lock the error
// matches ErrNotAcquired; when too few nodes answered it matches
// ErrNoQuorum and carries each failing node's *NodeError.
func (m *Mutex) TryLock(ctx context.Context) (*Lease, error) {
	return m.acquire(ctx, false)
}

// gaveUp is the error of a Lock whose ctx ended: it matches ErrNotAcquired,
// the ctx's error, and the last attempt's error when there was one.
func gaveUp(ctx context.Context, last error) error {
	reason := ctx.Err()
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, reason) {
		reason = fmt.Errorf("%w (%w)", reason, cause)
	}
	if last == nil {
		return fmt.Errorf("%w: %w", ErrNotAcquired, reason)
	}
	return fmt.Errorf("%w: %w (last attempt: %w)", ErrNotAcquired, reason, last)
}

// outcome describes a failed attempt.
type outcome struct {
	votes    int
	held     bool          // one other owner holds it on enough nodes to block us
	leadLost bool          // another contender took the lead node first
	split    bool          // no owner can have a quorum: contenders split the votes
	minPTTL  time.Duration // the blocking holder's smallest remaining TTL; -1 if unknown
	err      error
}

// attempt is one round: the acquire script on every node at once. It
// returns a lease when a quorum granted within the validity window.
// Otherwise it undoes every grant (and every call whose fate is unknown)
// before it returns, so a failed attempt leaves nothing locked.
func (m *Mutex) attempt(ctx context.Context, k *call, leadFirst bool) (*Lease, outcome) {
	c, s := m.client, &m.settings
	owner, hold := k.owner, reentrant.NewID()
	need := s.quorumOf(len(c.nodes))
	// queued counts the acquire calls not yet in their node's queue; the
	// lease's release waits for it, so that on every node the release runs
	// after this acquire, never before it (which would leave a grant behind).
	queued := new(sync.WaitGroup)
	acquire := func(ctx context.Context, i int) quorum.Reply[node.Acquired] {
		ctx = node.WithQueued(ctx, queued.Done)
		var acquired node.Acquired
		var err error
		if s.fair {
			acquired, err = c.nodes[i].AcquireFair(ctx, m.keys.fair(), m.keys.channel, owner, hold, s.ttl, s.fencing, k.ticket, s.queueTimeout)
		} else {
			acquired, err = c.nodes[i].Acquire(ctx, m.keys.lock, m.keys.fence, owner, hold, s.ttl, s.fencing)
		}
		c.health.record(i, err)
		switch {
		case err != nil:
			return quorum.Reply[node.Acquired]{Vote: quorum.Failed, Err: err}
		case acquired.Granted:
			return quorum.Reply[node.Acquired]{Vote: quorum.Yes, Value: acquired}
		}
		return quorum.Reply[node.Acquired]{Vote: quorum.No, Value: acquired}
	}
	start := time.Now()
	lead, leadReply := -1, quorum.Reply[node.Acquired]{}
	if leadFirst && len(c.nodes) > 1 {
		// Right after a release every waiting client tries at once; if all
		// sent to every node, the nodes would split their votes between
		// them. Asking one agreed node first lets its winner alone go on,
		// and costs each loser one call.
		lead = c.health.lead()
		queued.Add(1)
		leadCtx, cancel := context.WithTimeout(ctx, s.nodeTimeout)
		leadReply = acquire(leadCtx, lead)
		cancel()
		switch leadReply.Vote {
		case quorum.No:
			return nil, outcome{leadLost: true, minPTTL: leadReply.Value.PTTL,
				err: fmt.Errorf("%w: another owner took node %d first", ErrNotAcquired, lead)}
		case quorum.Failed:
			lead = -1 // ask every node, this one again too (same hold: harmless)
		}
	}
	if lead >= 0 {
		queued.Add(len(c.nodes) - 1)
	} else {
		queued.Add(len(c.nodes))
	}
	round := quorum.Start(ctx, s.roundTimeout(), len(c.nodes), need, &c.background,
		func(ctx context.Context, i int) quorum.Reply[node.Acquired] {
			if i == lead {
				return leadReply
			}
			return acquire(ctx, i)
		})
	tally := round.Wait(ctx)
	until := validUntil(start, s.ttl, s.driftFactor)
	if tally.Yes >= need && time.Now().Before(until) && ctx.Err() == nil {
		lease := newLease(ctx, m, owner, hold, start, until, tally)
		lease.queued = queued
		// Every answer in by now is in this tally, and every later one
		// goes to lateAcquire: none is missed.
		k.granted = round.Detach(lease.lateAcquire)
		if s.fencing {
			if err := lease.publishToken(ctx, k.granted); err != nil {
				// The call keeps its gate entry (finish leaves it), so
				// the release must not leave it too.
				lease.gateOnce.Do(func() {})
				_ = lease.release(context.WithoutCancel(ctx), ErrReleased, true)
				return nil, outcome{votes: tally.Yes, err: err}
			}
		}
		return lease, outcome{votes: tally.Yes}
	}

	// Failed: let the round finish (each call is bounded by the node
	// timeout), then undo what any node may have granted.
	tally = round.WaitAll(context.WithoutCancel(ctx))
	result := m.describeFailure(ctx, tally, need, until)
	undo := context.WithoutCancel(ctx)
	answered := round.Detach(func(i int, reply quorum.Reply[node.Acquired]) {
		if reply.Vote != quorum.No {
			m.releaseNode(undo, i, owner, hold)
		}
		if m.settings.fair && k.wait == false {
			m.leaveQueue(undo, []int{i}, owner) // TryLock's late answer may have queued it
		}
	})
	var mayHold []int
	for i, reply := range answered.Replies {
		if reply.Vote == quorum.Yes || reply.Vote == quorum.Failed {
			mayHold = append(mayHold, i)
		}
	}
	m.releaseNodes(undo, mayHold, owner, hold)
	return nil, result
}

// describeFailure turns a failed round into the error TryLock returns and
// what the wait before the next attempt depends on.
func (m *Mutex) describeFailure(ctx context.Context, tally quorum.Tally[node.Acquired], need int, until time.Time) outcome {
	result := outcome{votes: tally.Yes, minPTTL: -1}
	var nodeErrs []error
	refusals := make(map[string]int) // holder fingerprint → nodes it holds
	for i, reply := range tally.Replies {
		switch reply.Vote {
		case quorum.No:
			refusals[reply.Value.Holder]++
		case quorum.Failed, quorum.Pending:
			err := reply.Err
			if err == nil {
				err = context.DeadlineExceeded
			}
			nodeErrs = append(nodeErrs, m.client.nodeError(&m.settings, i, err))
		}
	}
	holder, holds := "", 0
	for fingerprint, count := range refusals {
		if count > holds {
			holder, holds = fingerprint, count
		}
	}
	for _, reply := range tally.Replies {
		if pttl := reply.Value.PTTL; reply.Vote == quorum.No && reply.Value.Holder == holder && pttl >= 0 &&
			(result.minPTTL < 0 || pttl < result.minPTTL) {
			result.minPTTL = pttl
		}
	}
	n := len(tally.Replies)
	// Held: one owner has, or may have (counting the silent nodes), a
	// quorum. Split: no owner can, so every contender backs off briefly.
	result.held = holds > 0 && holds+len(nodeErrs) >= need
	result.split = !result.held && len(nodeErrs) == 0 && tally.Yes < need
	switch {
	case ctx.Err() != nil:
		result.err = gaveUp(ctx, errors.Join(nodeErrs...))
	case result.held && holds > n-need:
		result.err = errors.Join(append([]error{fmt.Errorf("%w: held by another owner on %d of %d nodes",
			ErrNotAcquired, holds, n)}, nodeErrs...)...)
	case tally.Yes >= need:
		// Enough nodes granted, too late: a node error besides does not
		// make it a quorum failure.
		result.err = errors.Join(append([]error{fmt.Errorf("%w: the round outlasted the validity window (ends %v)",
			ErrNotAcquired, until)}, nodeErrs...)...)
	case len(nodeErrs) > 0:
		result.err = noQuorum(tally.Yes, need, nodeErrs)
	default:
		result.err = fmt.Errorf("%w: votes split, %d of %d needed", ErrNotAcquired, tally.Yes, need)
	}
	return result
}

// refusalsAndErrors counts the nodes that answered no, and wraps the
// failures of those that failed. A node still pending when the round was
// decided is neither: it is not reported.
func refusalsAndErrorsOf[T any](m *Mutex, replies []quorum.Reply[T]) (int, []error) {
	refused := 0
	var nodeErrs []error
	for i, reply := range replies {
		switch reply.Vote {
		case quorum.No:
			refused++
		case quorum.Failed:
			nodeErrs = append(nodeErrs, m.client.nodeError(&m.settings, i, reply.Err))
		}
	}
	return refused, nodeErrs
}

// releaseNodes drops hold on the given nodes and waits for their answers
// (each bounded by the node timeout).
func (m *Mutex) releaseNodes(ctx context.Context, nodes []int, owner, hold string) {
	m.onNodes(ctx, nodes, func(ctx context.Context, i int) { m.releaseNode(ctx, i, owner, hold) })
}

// onNodes runs fn on the given nodes at once and waits for all of them.
func (m *Mutex) onNodes(ctx context.Context, nodes []int, fn func(ctx context.Context, i int)) {
	done := make(chan struct{}, len(nodes))
	for _, i := range nodes {
		m.client.background.Go(func() {
			fn(ctx, i)
			done <- struct{}{}
		})
	}
	for range nodes {
		<-done
	}
}

// releaseNode drops hold on node i; a fair lock's notice names the next
// waiter.
func (m *Mutex) releaseNode(ctx context.Context, i int, owner, hold string) {
	ctx, cancel := context.WithTimeout(ctx, m.settings.nodeTimeout)
	defer cancel()
	if _, err := m.releaseOn(ctx, i, owner, hold); err != nil {
		m.client.nodeError(&m.settings, i, err)
		m.settings.logger.Warn("redlock: release failed; the hold expires at its TTL",
			"lock", m.name, "node", i, "err", err)
	}
}

func (m *Mutex) releaseOn(ctx context.Context, i int, owner, hold string) (node.Released, error) {
	released, _, err := m.releaseNamingHead(ctx, i, owner, hold)
	return released, err
}

// releaseNamingHead is releaseOn that also returns, for a fair lock it
// deleted, the fingerprint of the queue's new head.
func (m *Mutex) releaseNamingHead(ctx context.Context, i int, owner, hold string) (node.Released, string, error) {
	if m.settings.fair {
		return m.client.nodes[i].ReleaseFair(ctx, m.keys.fair(), m.keys.channel, owner, hold)
	}
	released, err := m.client.nodes[i].Release(ctx, m.keys.lock, m.keys.channel, owner, hold)
	return released, "", err
}

func (m *Mutex) observeAcquired(lease *Lease, wait time.Duration, votes int) {
	if hook := m.settings.observer.Acquired; hook != nil {
		hook(AcquiredEvent{Name: m.name, Owner: lease.owner, Wait: wait, Votes: votes})
	}
}
