package engine

import (
	"context"
	"sync"
	"time"

	"github.com/quorumlock/redlock/internal/core"
	"github.com/quorumlock/redlock/internal/leases"
	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/quorum"
)

// handoff is what a waiting call knows of the locks handed to it (see
// queue.lua): which hold each node's latest notice named, and, once an
// attempt failed, that attempt's hold, start and the nodes that refused
// it with an answer (so queued it, and were sent nothing else of it).
//
// A node hands the lock to its first waiter naming the hold of the call
// that last queued it there, and keeps it that waiter's until at least
// that call's start plus the queue's Span (queue.lua). When the notices of
// a quorum of nodes name the hold of the latest attempt, each a node that
// refused that attempt, every one of them holds the lock for this owner
// until then, and nothing this owner sent can have ended it: a later
// attempt (a claim) would have named another hold, undos go only to nodes
// that granted or did not answer, and a release, or the leave that
// follows one (Target.leaveAfterRelease), passes a handed lock on only when
// it names the handed hold. Those leaves name the hold of an undone
// attempt (sent only to nodes whose answer was not heard, which do not
// count) or of a lease (which ended, or was given back within its own
// attempt, whose hold is never adopted: see attempting). So the waiter
// takes the lease from the notices, valid until that start plus Span,
// less the drift, with no claim round. model/adopt.pml checks this, and what breaks without each
// of those conditions.
type handoff struct {
	need  int           // a quorum
	ready chan struct{} // capacity 1: a quorum named the latest failed attempt
	news  chan struct{} // capacity 1: a notice was heard (see settle)

	mu      sync.Mutex
	named   []string // by node: the hold the latest notice named
	hold    string   // the latest failed attempt's; "" while one runs
	start   time.Time
	refused []bool // by node: refused that attempt, with an answer
	// frozen: the hold of a lease whose release has started; notices
	// naming it no longer count (see freeze).
	frozen string
	// toLeave: the nodes whose queues the lease of leaveHold is still to
	// leave (see settle); taken once, by settle or by the release.
	toLeave   []int
	leaveHold string
}

// handoffGrace is how long a waiter woken while only some nodes' notices
// named its latest attempt waits for the others before it claims the lock
// with a round: the nodes' notices of one release come within a fraction
// of a millisecond of each other, and a wake-up comes before a quorum's
// when some nodes' subscriptions are down (see pubsub's threshold).
var handoffGrace = 3 * time.Millisecond

func newHandoff(nodes, need int) *handoff {
	return &handoff{need: need, ready: make(chan struct{}, 1), news: make(chan struct{}, 1),
		named: make([]string, nodes), refused: make([]bool, nodes)}
}

// heard records node i's notice (the Hub calls it for notices naming this
// waiter's owner).
func (h *handoff) heard(i int, payload string) {
	notice := node.ParseNotice(payload)
	if notice.Hold == "" || i < 0 || i >= len(h.named) {
		return
	}
	h.mu.Lock()
	if notice.Hold == h.frozen {
		h.mu.Unlock()
		return
	}
	h.named[i] = notice.Hold
	full := h.hold != "" && h.countLocked() >= h.need
	h.mu.Unlock()
	if full {
		select {
		case h.ready <- struct{}{}:
		default:
		}
	}
	select {
	case h.news <- struct{}{}:
	default:
	}
}

// countLocked counts the nodes that handed the lock to the latest failed
// attempt.
func (h *handoff) countLocked() int {
	n := 0
	for i, named := range h.named {
		if named == h.hold && h.refused[i] {
			n++
		}
	}
	return n
}

// await, after a wake-up, gives the nodes' notices that are still on
// their way up to handoffGrace to reach a quorum, when some but not
// enough named the latest failed attempt.
func (h *handoff) await(ctx context.Context) {
	h.mu.Lock()
	n := 0
	if h.hold != "" {
		n = h.countLocked()
	}
	h.mu.Unlock()
	if n == 0 || n >= h.need {
		return
	}
	timer := time.NewTimer(handoffGrace)
	defer timer.Stop()
	select {
	case <-h.ready:
	case <-timer.C:
	case <-ctx.Done():
	}
}

// attempting: an attempt starts. No notice counts until it failed: its
// requests may claim a handed lock, and its undo give it back.
func (h *handoff) attempting() {
	h.mu.Lock()
	h.hold = ""
	h.mu.Unlock()
}

// failed records the failed attempt hold that started at start: refused
// says which nodes refused it with an answer (not unsure of its fate).
// Notices heard while the attempt ran count now: when a quorum of them
// named it, ready is signalled here, since no later notice may come to
// signal it (the wake-up of the Hub needs one release id from a quorum,
// and a lock handed on by a leave on one node and a release on others
// bears two).
func (h *handoff) failed(hold string, start time.Time, refused func(i int) bool) {
	h.mu.Lock()
	h.hold, h.start = hold, start
	for i := range h.refused {
		h.refused[i] = refused(i)
	}
	full := h.countLocked() >= h.need
	h.mu.Unlock()
	if full {
		select {
		case h.ready <- struct{}{}:
		default:
		}
	}
}

// latest returns the latest failed attempt's hold and start, and the nodes
// that handed the lock to it (their notices named it, and they refused it).
func (h *handoff) latest() (string, time.Time, []int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.hold == "" {
		return "", time.Time{}, nil
	}
	select {
	case <-h.ready: // consumed: it is this call's to act on
	default:
	}
	var nodes []int
	for i, named := range h.named {
		if named == h.hold && h.refused[i] {
			nodes = append(nodes, i)
		}
	}
	return h.hold, h.start, nodes
}

// notHandedLocked returns the nodes of nodes whose latest notice did not
// name hold.
func (h *handoff) notHandedLocked(hold string, nodes []int) []int {
	var rest []int
	for _, i := range nodes {
		if h.named[i] != hold {
			rest = append(rest, i)
		}
	}
	return rest
}

// The queues a lease leaves. A lease taken from a quorum's notices is
// taken before the other nodes' notices of the same release arrive; a
// leave sent to such a node would pass the lock on there at once (it is
// this call's), a round trip the lease's release makes anyway, and would
// wake the next waiter with notices from a minority. So the nodes that
// refused the lease's attempt are left only once their notices had time
// to arrive (settle), and only those not heard from. That time is the
// node timeout, not handoffGrace: the notices of one release come apart
// by the difference of the links' delays (a far node's tens of
// milliseconds after a near one's), and a leave that reaches a far node
// after its handing frees the lock there, so the next waiter's attempt is
// granted there, fails, and must undo it on that far node before it can
// take the lock when this lease's release hands it on: the slowest node's
// round trip added to every handoff from a holder that was handed the
// lock. The previous holder's release reaches each node within the node
// timeout, or is left to the sweeper. A node
// counts as heard only by a notice heard before the lease's release
// starts (freeze): the release then reaches it after the handing and
// passes the lock on. When the release starts before settle is done, it
// sends the leaves itself, each placed on its node ahead of the release
// (takeLeave), so that a handing that comes after the release cannot stay
// with this owner.

// expectLeave records the nodes the lease of hold is to leave.
func (h *handoff) expectLeave(hold string, nodes []int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.leaveHold, h.toLeave = hold, nodes
}

// takeLeave returns, once, the nodes the lease of hold is still to leave:
// those not heard from (nil when none, or taken already).
func (h *handoff) takeLeave(hold string) []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.leaveHold != hold {
		return nil
	}
	nodes := h.notHandedLocked(hold, h.toLeave)
	h.leaveHold, h.toLeave = "", nil
	return nodes
}

// settle waits up to within for the notices of the nodes the lease of
// hold is to leave, until all came, the release started, or done closed
// (the Client is closing). The caller then takes the leave.
func (h *handoff) settle(hold string, within time.Duration, done <-chan struct{}) {
	timer := time.NewTimer(within)
	defer timer.Stop()
	for h.waitingFor(hold) {
		select {
		case <-h.news:
		case <-timer.C:
			return
		case <-done:
			return
		}
	}
}

// waitingFor reports whether the lease of hold still waits for notices.
func (h *handoff) waitingFor(hold string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.leaveHold == hold && h.frozen != hold && len(h.notHandedLocked(hold, h.toLeave)) > 0
}

// freeze: the release of the lease of hold starts. Notices naming hold
// heard from now on do not count: the release may have reached their node
// before the handing did, so only a leave can pass it on.
func (h *handoff) freeze(hold string) {
	h.mu.Lock()
	h.frozen = hold
	h.mu.Unlock()
	select {
	case h.news <- struct{}{}:
	default:
	}
}

// adopt takes the lease from the handoff notices when a quorum of nodes
// handed the lock to k's latest failed attempt (see handoff). It returns
// nil when they have not, or the lease would no longer be valid.
func (m *Mutex) adopt(ctx context.Context, k *lockCall) (*leases.Lease, outcome) {
	if k.handoff == nil {
		return nil, outcome{}
	}
	hold, start, nodes := k.handoff.latest()
	if len(nodes) < k.handoff.need {
		return nil, outcome{}
	}
	k.handoff.attempting() // once: a lease that fails its fencing is given back
	until := core.ValidUntil(start, m.target.Queue.Span(), m.target.Settings.DriftFactor)
	if !time.Now().Before(until) {
		return nil, outcome{}
	}
	tally := quorum.Tally[node.Acquired]{Replies: make([]quorum.Reply[node.Acquired], len(m.client.runtime.Nodes))}
	for i := range tally.Replies {
		tally.Replies[i] = quorum.Reply[node.Acquired]{Vote: quorum.No}
	}
	for _, i := range nodes {
		tally.Replies[i] = quorum.Reply[node.Acquired]{Vote: quorum.Yes, Value: node.Acquired{Granted: true, Holds: 1}}
	}
	tally.Yes, tally.No, tally.Answered = len(nodes), len(tally.Replies)-len(nodes), len(tally.Replies)
	return m.grant(ctx, k, hold, start, until, nil, func(*leases.Lease) quorum.Tally[node.Acquired] { return tally })
}
