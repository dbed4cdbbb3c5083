package leases

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/quorumlock/redlock/internal/core"
	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/quorum"
)

// Lease is the lease of one Mutex, behind the engine's Lease: its Context,
// expiry, renewal, fencing and release.
type Lease struct {
	Target   *Target
	owner    string
	Hold     string
	token    uint64
	acquired time.Time

	ctx    context.Context
	cancel context.CancelCauseFunc

	// ops serializes the network operations on this lease (Extend,
	// renewal, Unlock), so that no renewal can land after the release.
	ops sync.Mutex

	GateOnce sync.Once // the lease leaves its Client's gate once, at release or loss

	// Order is the winning round's: the release waits until every acquire
	// call of that round has its place in its node's queue, so that it runs
	// after them (see engine.Mutex.attempt).
	Order *node.Order

	// Releasing (may be nil) is called once the release starts, before
	// anything of it is sent (see handoff.freeze).
	Releasing func()

	mu       sync.Mutex
	until    time.Time
	err      error       // nil while held; ErrLost, ErrReleased or ErrClosed after
	released bool        // Unlock or Close started: late grants must be undone
	expiry   *time.Timer // fires at until: the lease is lost unless renewed
	// unsure[i]: a call of this lease to node i (acquire or renewal) failed
	// without an answer, so it may still run there after the release: the
	// release leaves a tombstone there. (A call still in flight needs none:
	// the release is queued behind it, and lateAcquire sees it fail.)
	unsure []bool
	// unreached[i]: no call of this lease was ever sent to node i (see
	// node.ErrNotSent), so nothing of it can be there to release.
	unreached []bool
}

func NewLease(parent context.Context, m *Target, owner, hold string, start, until time.Time) *Lease {
	l := &Lease{
		Target:    m,
		owner:     owner,
		Hold:      hold,
		acquired:  start,
		until:     until,
		unsure:    make([]bool, len(m.Nodes)),
		unreached: make([]bool, len(m.Nodes)),
	}
	l.ctx, l.cancel = context.WithCancelCause(m.Mode.HoldContext(context.WithoutCancel(parent), l))
	// Under mu: the timer may fire before AfterFunc returns.
	l.mu.Lock()
	l.expiry = time.AfterFunc(time.Until(until), l.expire)
	l.mu.Unlock()
	if m.Settings.Watchdog {
		m.Watchdog.add(l)
	}
	return l
}

func (l *Lease) Context() context.Context { return l.ctx }

func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

func (l *Lease) Until() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until
}

func (l *Lease) Token() uint64 { return l.token }

func (l *Lease) Owner() string { return l.owner }

func (l *Lease) Unlock(ctx context.Context) error {
	if !l.Target.Begin() {
		return core.ErrClosed // Close released it already
	}
	defer l.Target.End()
	return l.Release(ctx, core.ErrReleased, false)
}

// Release ends the lease with cause and removes the hold from every node.
// It returns once a quorum answered, or with complete, once every node
// answered (or timed out).
func (l *Lease) Release(ctx context.Context, cause error, complete bool) error {
	l.ops.Lock()
	defer l.ops.Unlock()
	lost, err := l.markReleased(cause)
	if err != nil {
		return err
	}
	if l.Releasing != nil {
		l.Releasing()
	}
	m, c := l.Target, l.Target.Runtime
	c.Watchdog.remove(l)
	defer c.Untrack(l)
	defer l.cancel(cause)
	defer l.exitGate() // after the release: the next local owner finds the lock free

	started := time.Now()
	if l.Order != nil {
		l.Order.Wait() // microseconds: the calls are queued, not answered
	}
	var head nextHead // fair: the new head some node named
	round := l.releaseRound(ctx, &head)
	tally := round.Wait(ctx)
	if complete {
		tally = round.WaitAll(ctx)
	}
	err = l.releaseResult(tally, m.Need())
	if next := head.get(); err == nil && next != "" {
		// The next in line may be a waiter of this Client: wake it now
		// rather than after the nodes' notices come back.
		c.Hub.Wake(m.Queue.Channel, l.Hold+" "+next)
	}
	if hook := m.Settings.Observer.Released; hook != nil {
		hook(core.ReleasedEvent{Name: m.LockName, Held: started.Sub(l.acquired), Err: err, Lost: lost})
	}
	return err
}

// markReleased ends the lease with cause, once: a second release gets
// ErrReleased (ErrClosed when Close released it). lost: it was lost before.
func (l *Lease) markReleased(cause error) (lost bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		if errors.Is(l.err, core.ErrClosed) {
			return false, core.ErrClosed
		}
		return false, core.ErrReleased
	}
	l.released = true
	l.expiry.Stop()
	lost = l.err != nil
	if !lost {
		l.err = cause
	}
	return lost, nil
}

// nextHead is the fair queue's new head, as some node named it.
type nextHead struct {
	mu   sync.Mutex
	name string
}

func (h *nextHead) set(name string) {
	if name != "" {
		h.mu.Lock()
		h.name = name
		h.mu.Unlock()
	}
}

func (h *nextHead) get() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.name
}

// releaseRound sends the release to every node; nodes that did not answer
// go to the sweeper, and nodes whose acquire's fate was unknown get a
// leave after the release.
func (l *Lease) releaseRound(ctx context.Context, head *nextHead) *quorum.Round[node.Released] {
	m, c := l.Target, l.Target.Runtime
	l.mu.Lock()
	unsure, unreached := slices.Clone(l.unsure), slices.Clone(l.unreached)
	l.mu.Unlock()
	return quorum.Start(context.WithoutCancel(ctx), m.Settings.RoundTimeout(), len(c.Nodes), m.Need(), &c.Background,
		func(ctx context.Context, i int) quorum.Reply[node.Released] {
			if unreached[i] {
				// Nothing to release, and no answer to count.
				return quorum.Reply[node.Released]{Vote: quorum.Failed, Err: fmt.Errorf("%w: nothing of this lease was sent there", node.ErrNotSent)}
			}
			released, named, err := m.dropHold(ctx, i, l.owner, l.Hold, unsure[i])
			if err != nil && !node.Answered(err) {
				var leaving func() bool
				if unsure[i] {
					leaving = always
				}
				c.Sweeper.Add(m, i, l.owner, l.Hold, leaving)
			}
			if err == nil && unsure[i] {
				c.Background.Go(func() { m.leaveAfterRelease(ctx, i, l.owner, l.Hold) })
			}
			head.set(named)
			switch {
			case err != nil:
				return quorum.Reply[node.Released]{Vote: quorum.Failed, Err: err}
			case released.Removed():
				return quorum.Reply[node.Released]{Vote: quorum.Yes, Value: released}
			}
			return quorum.Reply[node.Released]{Vote: quorum.No, Value: released}
		})
}

func (l *Lease) releaseResult(tally quorum.Tally[node.Released], need int) error {
	return VerdictOf(l.Target, tally.Replies, need).Err(func(v Verdict) error {
		return fmt.Errorf("%w: hold found on %d of %d nodes", core.ErrNotHeld, v.Yes, v.N)
	})
}

func (l *Lease) exitGate() {
	l.GateOnce.Do(func() { l.Target.Gates.Exit(l.Target.Keys.Lock) })
}

// NoteGrant records which nodes failed the winning round's acquire without
// an answer, and which were never sent it.
func (l *Lease) NoteGrant(granted quorum.Tally[node.Acquired]) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, reply := range granted.Replies {
		if reply.Vote != quorum.Failed {
			continue
		}
		l.unsure[i] = l.unsure[i] || node.Unknown(reply.Err)
		l.unreached[i] = errors.Is(reply.Err, node.ErrNotSent)
	}
}

// Called records the outcome of a later call of this lease to node i (a
// renewal): one whose fate is unknown may still run there after the
// release; one that was sent reached the node.
func (l *Lease) Called(i int, err error) {
	l.mu.Lock()
	unknown := node.Unknown(err)
	l.unsure[i] = l.unsure[i] || unknown
	l.unreached[i] = l.unreached[i] && errors.Is(err, node.ErrNotSent)
	released := l.released
	l.mu.Unlock()
	if released && unknown {
		// The release went out while the renewal was in flight, with no
		// tombstone to refuse it if it lands later: release once more
		// (not on the caller's goroutine: the watchdog's).
		l.Target.Runtime.Background.Go(func() { l.Target.ReleaseNode(context.Background(), i, l.owner, l.Hold, true, always) })
	}
}

// LateAcquire receives the answers of acquire calls that arrived after
// Lock returned: one whose fate is unknown is released again once the
// lease is gone.
func (l *Lease) LateAcquire(i int, reply quorum.Reply[node.Acquired]) {
	if reply.Vote != quorum.Yes {
		// Refused late: the node queued us (and may hand us the lock
		// later, naming this hold); we hold the lock, so leave. Only a
		// lock handed naming this hold is passed on: the call may have
		// given this lease back (a failed fencing) and gone on waiting.
		l.Target.Mode.LeaveAfter(context.Background(), i, l.owner, l.Hold)
	}
	l.mu.Lock()
	// Granted or refused: Unlock's release goes to every node and is
	// queued after this call (see order), so it runs after it. Unknown
	// (timed out): the call may still run after a release sent on a fresh
	// connection, so the release leaves a tombstone there.
	unknown := reply.Vote == quorum.Failed && node.Unknown(reply.Err)
	if unknown {
		l.unsure[i] = true
	}
	released := l.released
	l.mu.Unlock()
	if released && unknown {
		// The release already went out, maybe before this node had a
		// tombstone to refuse the acquire with: release once more.
		l.Target.ReleaseNode(context.Background(), i, l.owner, l.Hold, true, always)
	}
}

// expire runs when the expiry timer fires: past Until without a renewal,
// the lease is lost.
func (l *Lease) expire() {
	l.mu.Lock()
	if remaining := time.Until(l.until); remaining > 0 && l.err == nil && !l.released {
		l.expiry.Reset(remaining) // renewed while the timer fired
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	l.Lose(core.ErrLost)
}

// Lose ends a lease that is still held with cause (which matches ErrLost):
// its Context is cancelled, renewal stops, the loss is logged and observed.
// The holds left on the nodes expire at their TTL, or go with Unlock.
func (l *Lease) Lose(cause error) {
	l.mu.Lock()
	if l.err != nil || l.released {
		l.mu.Unlock()
		return
	}
	l.err = cause
	l.expiry.Stop()
	l.mu.Unlock()
	l.cancel(cause)
	l.Target.Watchdog.remove(l)
	l.exitGate()
	s := &l.Target.Settings
	s.Logger.Warn("redlock: lease lost", "lock", l.Target.LockName, "owner", l.owner, "err", cause)
	if hook := s.Observer.Lost; hook != nil {
		hook(core.LostEvent{Name: l.Target.LockName, Err: cause})
	}
}
