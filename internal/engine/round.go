package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/quorumlock/redlock/internal/core"
	"github.com/quorumlock/redlock/internal/leases"
	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/quorum"
)

// outcome describes a failed attempt.
type outcome struct {
	votes    int
	answered int           // nodes that answered the round
	held     bool          // one other owner holds it on enough nodes to block us
	seen     bool          // held, and that owner was seen on a quorum of nodes
	leadLost bool          // another contender took the lead node first
	split    bool          // no owner can have a quorum: contenders split the votes
	minPTTL  time.Duration // the blocking holder's smallest remaining TTL; -1 if unknown
	// votesAgain: quarantines keep a quorum from voting until then (this
	// process's clock); zero when they do not.
	votesAgain time.Time
	// guardRaised: a quorum granted, but a node answered a longer guard
	// than the calls carried; the votes were released (see raisedGuard).
	guardRaised bool
	err         error
}

// attempt is one round: the acquire script on every node at once. It
// returns a lease when a quorum granted within the validity window.
// Otherwise it undoes every grant (and every call whose fate is unknown)
// before it returns, so a failed attempt leaves nothing locked.
func (m *Mutex) attempt(ctx context.Context, k *lockCall, leadFirst bool) (*leases.Lease, outcome) {
	guard := m.target.Keys.Guard
	// Each call carries at least this guard: the node takes the longest
	// record known when the call is sent.
	carried := max(guard, time.Duration(m.client.records.Load()))
	r := &attemptState{k: k, hold: k.nextHold(), order: new(node.Order), lead: -1, lead0: -1}
	if k.handoff != nil {
		k.handoff.attempting()
	}
	r.start = time.Now()
	if leadFirst && len(m.client.runtime.Nodes) > 1 {
		if lost, ok := m.askLead(ctx, r); !ok {
			return nil, lost
		}
	}
	round, stopWatch := m.startRound(ctx, r)
	defer stopWatch()
	tally := round.Wait(ctx)
	until := core.ValidUntil(r.start, m.target.Settings.TTL, m.target.Settings.DriftFactor)
	raised := m.client.raisedGuard(guard, carried)
	if tally.Yes >= m.target.Need() && time.Now().Before(until) && raised == 0 && stopWatch() {
		lease, result := m.grant(ctx, k, r.hold, r.start, until, r.order, func(lease *leases.Lease) quorum.Tally[node.Acquired] {
			// Every answer in by now is in this tally, and every later one
			// goes to leases.Lease.LateAcquire: none is missed.
			return round.Detach(lease.LateAcquire)
		})
		if lease != nil && r.leadReply.Vote == quorum.Failed {
			// The lead node was asked twice: the first copy, fate
			// unknown, may still arrive after the release.
			lease.Called(r.lead0, r.leadReply.Err)
		}
		return lease, result
	}
	result := m.lost(ctx, r, round, until)
	if raised > 0 && tally.Yes >= m.target.Need() {
		result.guardRaised = true
		result.err = fmt.Errorf("%w: a node records a restart guard of %v, longer than the %v this round's calls carried: "+
			"its %d votes were released, to be cast again under the longer guard", core.ErrNotAcquired, raised, carried, tally.Yes)
	}
	return nil, result
}

// attemptState is what one attempt knows: its hold, the order the lease's
// release waits on (so that on every node it runs after this acquire,
// never before it), and the lead node asked first.
type attemptState struct {
	k         *lockCall
	hold      string
	order     *node.Order
	start     time.Time
	lead      int // the lead node, when its answer stands (-1: none)
	lead0     int // the lead node asked first, even when asked again
	leadReply quorum.Reply[node.Acquired]
}

// ask sends r's acquire to node i and turns its answer into a vote.
func (m *Mutex) ask(ctx context.Context, r *attemptState, i int) quorum.Reply[node.Acquired] {
	c := m.client
	acquired, err := m.mode.acquire(ctx, r.order, i, r.k, r.hold)
	c.lead.record(i, err)
	c.runtime.SawQuarantine(&m.target.Settings, i, err)
	switch {
	case err != nil:
		return quorum.Reply[node.Acquired]{Vote: quorum.Failed, Err: err}
	case acquired.Granted:
		return quorum.Reply[node.Acquired]{Vote: quorum.Yes, Value: acquired}
	}
	return quorum.Reply[node.Acquired]{Vote: quorum.No, Value: acquired}
}

// askLead asks the agreed lead node alone first. Right after a release
// every waiting client tries at once; if all sent to every node, the nodes
// would split their votes. Asking one node first lets its winner alone go
// on, and costs each loser one call. ok is false when the lead refused.
func (m *Mutex) askLead(ctx context.Context, r *attemptState) (lost outcome, ok bool) {
	r.lead = m.client.lead.pick()
	r.lead0 = r.lead
	r.order.Expect(1)
	leadCtx, cancel := context.WithTimeout(ctx, m.target.Settings.RoundTimeout())
	r.leadReply = m.ask(leadCtx, r, r.lead)
	cancel()
	switch r.leadReply.Vote {
	case quorum.No:
		if r.k.handoff != nil {
			r.k.handoff.failed(r.hold, r.start, func(i int) bool { return i == r.lead0 })
		}
		return outcome{leadLost: true, minPTTL: r.leadReply.Value.PTTL,
			err: fmt.Errorf("%w: another owner took node %d first", core.ErrNotAcquired, r.lead0)}, false
	case quorum.Failed:
		r.lead = -1 // ask every node, this one again too (same hold: harmless)
	}
	return outcome{}, true
}

// startRound sends r's acquire to every node not asked yet. The calls end
// when ctx is cancelled, until the round is won (stopWatch returns true):
// then they are cut loose, so that a caller that cancels ctx as soon as
// Lock returns does not cut the calls still out to slower nodes, whose
// fate would be unknown and cost a release with a tombstone each. They
// keep ctx's deadline, and the round timeout bounds each of them.
func (m *Mutex) startRound(ctx context.Context, r *attemptState) (*quorum.Round[node.Acquired], func() bool) {
	c, n := m.client, len(m.client.runtime.Nodes)
	if r.lead >= 0 {
		r.order.Expect(n - 1)
	} else {
		r.order.Expect(n)
	}
	calls, cancelCalls := context.WithCancel(context.WithoutCancel(ctx))
	if deadline, ok := ctx.Deadline(); ok {
		calls, cancelCalls = context.WithDeadline(context.WithoutCancel(ctx), deadline)
	}
	stopWatch := context.AfterFunc(ctx, cancelCalls)
	pending := atomic.Int32{}
	pending.Store(int32(n))
	round := quorum.Start(calls, m.target.Settings.RoundTimeout(), n, m.target.Need(), &c.runtime.Background,
		func(ctx context.Context, i int) quorum.Reply[node.Acquired] {
			defer func() {
				if pending.Add(-1) == 0 {
					cancelCalls() // the last one: frees the deadline's timer
				}
			}()
			if i == r.lead {
				return r.leadReply
			}
			return m.ask(ctx, r, i)
		})
	return round, stopWatch
}

// lost ends a round that did not win: it lets the round finish (each call
// bounded by the node timeout), so that the outcome counts every node's
// answer, and undoes the hold wherever it may have been granted.
func (m *Mutex) lost(ctx context.Context, r *attemptState, round *quorum.Round[node.Acquired], until time.Time) outcome {
	k, need := r.k, m.target.Need()
	tally := round.WaitAll(context.WithoutCancel(ctx))
	result := m.describeFailure(tally, need, until)
	result.votesAgain = votesAgain(tally.Replies, need)
	if k.handoff != nil {
		// Before the undo: a node that refused is sent nothing of it.
		k.handoff.failed(r.hold, r.start, func(i int) bool {
			return tally.Replies[i].Vote == quorum.No && !(i == r.lead0 && r.leadReply.Vote == quorum.Failed)
		})
	}
	done := m.undo(ctx, k, round, k.owner, r.hold, r.lead0, r.leadReply)
	if k.wait {
		// The next attempt need not wait for releases to nodes that did
		// not answer; the call waits for them when it gives up (finish).
		k.undoing(done)
	} else {
		<-done
	}
	return result
}

// grant makes the lease of k's hold, granted on a quorum at start and
// valid until until; granted, given the lease, returns the granting
// tally. The lease's release waits on order (nil: none). With fencing on,
// the lease is fenced before it is returned, and given back when that
// fails.
func (m *Mutex) grant(ctx context.Context, k *lockCall, hold string, start, until time.Time, order *node.Order,
	granted func(*leases.Lease) quorum.Tally[node.Acquired]) (*leases.Lease, outcome) {
	lease := leases.NewLease(ctx, m.target, k.owner, hold, start, until)
	lease.Order = order
	if k.handoff != nil {
		lease.Releasing = func() { m.mode.releasing(k, hold) }
	}
	if !k.gated {
		// Fair writers and readers never entered the Client's gate:
		// their release must not leave an entry of another owner's.
		lease.GateOnce.Do(func() {})
	}
	k.granted = granted(lease)
	lease.NoteGrant(k.granted)
	if m.target.Settings.Fencing {
		if err := lease.Fence(ctx, k.granted.Replies); err != nil {
			// The call keeps its gate entry (finish leaves it), so
			// the release must not leave it too.
			lease.GateOnce.Do(func() {})
			_ = lease.Release(context.WithoutCancel(ctx), core.ErrReleased, true)
			return nil, outcome{votes: k.granted.Yes, answered: voted(k.granted), err: err}
		}
	}
	return lease, outcome{votes: k.granted.Yes, answered: voted(k.granted)}
}

// undo releases the hold of a failed attempt on every node that may have
// granted it. Nodes that granted are released before it returns: a hold
// left there while its owner tries again would be re-entered by the next
// attempt and could stall every waiter. Nodes whose answer is unknown
// (a call failed without an answer, or the lead node was asked twice)
// are released in the background, with a tombstone; nodes still silent
// are released when they answer (a grant), or with a tombstone (no
// answer). A call that was never sent (node.ErrNotSent) needs nothing.
// done is closed once all of that has happened (each call bounded by the
// node timeout; a release that is not answered goes on in the Client's
// sweeper). lead0 is the lead node asked first (-1: none), leadFirst its
// first answer.
func (m *Mutex) undo(ctx context.Context, k *lockCall, round *quorum.Round[node.Acquired], owner, hold string,
	lead0 int, leadFirst quorum.Reply[node.Acquired]) (done <-chan struct{}) {
	c, undo := m.client, context.WithoutCancel(ctx)
	fateUnknown := func(reply quorum.Reply[node.Acquired]) bool {
		return reply.Vote == quorum.Failed && node.Unknown(reply.Err)
	}
	unsure := func(i int, reply quorum.Reply[node.Acquired]) bool {
		return fateUnknown(reply) || (i == lead0 && fateUnknown(leadFirst))
	}
	late := make(chan struct{}, len(c.runtime.Nodes))
	answered := round.Detach(func(i int, reply quorum.Reply[node.Acquired]) {
		defer func() { late <- struct{}{} }()
		if reply.Vote == quorum.Yes || unsure(i, reply) {
			var leaving func() bool
			if unsure(i, reply) {
				leaving = k.ended.Load
			}
			m.target.ReleaseNode(undo, i, owner, hold, unsure(i, reply), leaving)
		}
		if !k.wait {
			m.mode.dequeue(undo, []int{i}, k) // TryLock's late answer may have queued it
		}
	})
	var granted, unknown []int
	for i, reply := range answered.Replies {
		switch {
		case reply.Vote == quorum.Pending:
		case unsure(i, reply):
			unknown = append(unknown, i)
		case reply.Vote == quorum.Yes:
			granted = append(granted, i)
		}
	}
	quorum.Each(undo, granted, 0, func(ctx context.Context, i int) { m.undoGrant(ctx, i, k, hold) })
	finished := make(chan struct{})
	c.runtime.Background.Go(func() {
		defer close(finished)
		m.target.ReleaseNodes(undo, unknown, owner, hold, func(int) bool { return true }, k.ended.Load)
		for range len(answered.Replies) - answered.Answered {
			<-late
		}
	})
	return finished
}

// describeFailure turns a failed round into the error TryLock returns and
// what the wait before the next attempt depends on.
func (m *Mutex) describeFailure(tally quorum.Tally[node.Acquired], need int, until time.Time) outcome {
	result := outcome{votes: tally.Yes, answered: voted(tally), minPTTL: -1}
	replies := slices.Clone(tally.Replies)
	refusals := make(map[string]int) // holder fingerprint → nodes it holds
	silent := 0                      // nodes whose vote is unknown: they may hold it for anyone
	for i, reply := range replies {
		switch reply.Vote {
		case quorum.No:
			refusals[reply.Value.Holder]++
		case quorum.Pending:
			// Still silent when the round ended: failed, as far as
			// this attempt can tell.
			replies[i] = quorum.Reply[node.Acquired]{Vote: quorum.Failed, Err: context.DeadlineExceeded}
			silent++
		case quorum.Failed:
			// A call never sent (the node is down) voted for no one
			// in this round: it does not make a split look held.
			if node.Unknown(reply.Err) {
				silent++
			}
		}
	}
	markLive(replies)
	v := leases.VerdictOf(m.target, replies, need)
	holder, holds := "", 0
	for fingerprint, count := range refusals {
		if count > holds {
			holder, holds = fingerprint, count
		}
	}
	result.minPTTL = shortestPTTL(replies, holder)
	// Held: one owner has, or may have (counting the silent nodes), a
	// quorum. Split: no owner can, so every contender backs off briefly.
	stop := stopError(v)
	result.held = holds > 0 && holds+silent >= need
	result.seen = holds >= need
	result.split = !result.held && silent == 0 && v.Yes < need
	switch {
	case stop != nil:
		result.err = stop
	case result.held && holds > v.N-need && m.mode.behind(replies, holder):
		result.err = v.With(fmt.Errorf("%w: a writer waits for it on %d of %d nodes, and readers arriving after a waiting writer wait for it",
			core.ErrNotAcquired, holds, v.N))
	case result.held && holds > v.N-need:
		result.err = v.With(fmt.Errorf("%w: held by another owner on %d of %d nodes", core.ErrNotAcquired, holds, v.N))
	case v.Yes >= need:
		// Enough nodes granted, too late: a node error besides does not
		// make it a quorum failure.
		result.err = v.With(fmt.Errorf("%w: the round outlasted the validity window (ends %v)", core.ErrNotAcquired, until))
	case len(v.NodeErrs) > 0:
		result.err = v.Err(nil)
	default:
		result.err = fmt.Errorf("%w: votes split, %d of %d needed", core.ErrNotAcquired, v.Yes, need)
	}
	return result
}

// markLive tells each new node's quarantine whether other nodes answered
// the round: then the set is live, and its message does not suggest
// `redlock init`.
func markLive(replies []quorum.Reply[node.Acquired]) {
	live := false
	for _, reply := range replies {
		live = live || reply.Vote == quorum.Yes || reply.Vote == quorum.No
	}
	for _, reply := range replies {
		var q *node.Quarantine
		if live && errors.As(reply.Err, &q) {
			q.Live = true
		}
	}
}

// stopError is the error of a round after which trying again does not
// help: too many nodes answered that a key of the lock holds something
// else, or refuse to vote because the restart guard cannot see there.
func stopError(v leases.Verdict) error {
	if conflicts, stopped := v.Conflicts(); stopped {
		return &leases.StopError{Err: v.With(fmt.Errorf("%w on %d of %d nodes, so no quorum can agree: remove the key or use another key prefix",
			core.ErrKeyConflict, conflicts, v.N))}
	}
	if unguarded, stopped := v.Unguarded(); stopped {
		return &leases.StopError{Err: v.With(fmt.Errorf("%w: %d of %d nodes refuse to vote because the restart guard "+
			"cannot see whether they lost a lease there (each node's error names the remedy), so no quorum can agree",
			core.ErrNoQuorum, unguarded, v.N))}
	}
	return nil
}

// shortestPTTL is the shortest time left of holder's key among the nodes
// that refused for it, or -1 when none said.
func shortestPTTL(replies []quorum.Reply[node.Acquired], holder string) time.Duration {
	shortest := time.Duration(-1)
	for _, reply := range replies {
		if pttl := reply.Value.PTTL; reply.Vote == quorum.No && reply.Value.Holder == holder && pttl >= 0 &&
			(shortest < 0 || pttl < shortest) {
			shortest = pttl
		}
	}
	return shortest
}

// behind reports whether some refusal by holder was a waiting writer's
// (a reader refused while holder waits; see node.AcquireRead).
func behind(replies []quorum.Reply[node.Acquired], holder string) bool {
	return slices.ContainsFunc(replies, func(r quorum.Reply[node.Acquired]) bool {
		return r.Vote == quorum.No && r.Value.Holder == holder && r.Value.Behind
	})
}

// undoGrant drops the hold of k's failed attempt on node i, which granted
// it; as Target.ReleaseNode otherwise (the sweeper retries it when the node does
// not answer).
func (m *Mutex) undoGrant(ctx context.Context, i int, k *lockCall, hold string) {
	ctx, cancel := context.WithTimeout(ctx, m.target.Settings.RoundTimeout())
	defer cancel()
	if err := m.mode.undo(ctx, i, k, hold); err != nil {
		m.client.runtime.NodeError(&m.target.Settings, i, err)
		if !node.Answered(err) {
			m.target.Sweeper.Add(m.target, i, k.owner, hold, nil)
		}
	}
}
