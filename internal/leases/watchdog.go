package leases

import (
	"context"
	"sync"
	"time"

	"github.com/quorumlock/redlock/internal/core"
	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/quorum"
	"github.com/redis/go-redis/v9"
)

const (
	// maxRenewBatch is how many leases one renew script call carries: big
	// enough that 10,000 leases cost 100 calls per node per cycle, small
	// enough that one call stays well under a millisecond of server time.
	maxRenewBatch = 100
	// clusterRenewBatch is the batch on Cluster members, cut there into
	// one call per shard.
	clusterRenewBatch = 300
	// renewRetryDivisor: after a failed renewal round, the next try comes
	// after TTL/renewRetryDivisor (there is TTL*2/3 left at most).
	renewRetryDivisor = 10
)

// Watchdog renews every lease that has renewal on, for one Client: one
// scheduler goroutine, not one per lease, and one script call per node per
// batch of due leases. It renews a lease every TTL/3; a renewal counts only
// when a quorum confirmed it within the validity window.
type Watchdog struct {
	client     *Runtime
	batchLimit int
	kick       chan struct{} // capacity 1: a lease was added
	ctx        context.Context
	cancel     context.CancelFunc
	work       sync.WaitGroup // the scheduler and its batch rounds

	mu      sync.Mutex
	due     map[*Lease]time.Time // next renewal; zero while a round is in flight
	wakeAt  time.Time            // when the scheduler wakes next (collect sets it)
	started bool
	closed  bool
}

func NewWatchdog(c *Runtime) *Watchdog {
	ctx, cancel := context.WithCancel(context.Background())
	w := &Watchdog{
		client:     c,
		batchLimit: maxRenewBatch,
		kick:       make(chan struct{}, 1),
		ctx:        ctx,
		cancel:     cancel,
		due:        make(map[*Lease]time.Time),
	}
	for _, n := range c.Nodes {
		if _, cluster := n.Client().(*redis.ClusterClient); cluster {
			// A batch is cut per shard there (node.RenewEach): a larger one
			// keeps each shard's call as full as a plain node's.
			w.batchLimit = clusterRenewBatch
		}
	}
	return w
}

// add schedules l's first renewal a third of its TTL after it was granted
// (of its validity, when shorter: a lease taken from handoff notices).
func (w *Watchdog) add(l *Lease) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	at := l.acquired.Add(min(l.Target.Settings.TTL, l.until.Sub(l.acquired)) / 3)
	w.due[l] = at
	if !w.started {
		w.started = true
		w.work.Go(w.run)
	}
	// The scheduler wakes at wakeAt anyway: a lease due no earlier needs
	// no wake-up now (a Lock does not cost a scan of every lease).
	later := !w.wakeAt.IsZero() && !at.Before(w.wakeAt)
	w.mu.Unlock()
	if later {
		return
	}
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// remove stops renewing l. A round already in flight for l finishes first:
// the caller holds l.ops, which the round holds while it runs.
func (w *Watchdog) remove(l *Lease) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.due, l)
}

// Close stops the scheduler and waits for it and its rounds.
func (w *Watchdog) Close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.cancel()
	w.work.Wait()
}

func (w *Watchdog) run() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		batches, wake := w.collect(time.Now())
		for _, batch := range batches {
			w.work.Go(func() { w.renew(batch) })
		}
		timer.Reset(wake)
		select {
		case <-w.ctx.Done():
			return
		case <-w.kick:
		case <-timer.C:
		}
	}
}

// collect takes the leases due now, or due within a fifteenth of their
// TTL (or of their first validity, when shorter: renewing a little early
// lets more leases share a call), marks them in flight and cuts them into
// batches. It returns how long to sleep until the next lease is due.
func (w *Watchdog) collect(now time.Time) ([][]*Lease, time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var due []*Lease
	sleep := time.Hour
	for l, at := range w.due {
		if at.IsZero() {
			continue // in flight
		}
		// A fifteenth of the TTL, or of the validity of a lease taken
		// from handoff notices before its first renewal (due a third of
		// it after its start).
		early := min(l.Target.Settings.TTL/15, at.Sub(l.acquired)/5)
		if !at.After(now.Add(early)) {
			due = append(due, l)
			w.due[l] = time.Time{}
			continue
		}
		sleep = min(sleep, at.Sub(now))
	}
	w.wakeAt = now.Add(sleep)
	var batches [][]*Lease
	for len(due) > 0 {
		size := min(len(due), w.batchLimit)
		batches = append(batches, due[:size])
		due = due[size:]
	}
	return batches, sleep
}

// reschedule sets l's next renewal, unless it was removed meanwhile, and
// wakes the scheduler if it would sleep past it (asleep with every lease
// in flight, say). Not otherwise: each wake-up scans every lease, and on
// Cluster members, one lease a round, a wake-up per round fell behind
// from some 5,000 leases.
func (w *Watchdog) reschedule(l *Lease, at time.Time) {
	w.mu.Lock()
	_, kept := w.due[l]
	if kept {
		w.due[l] = at
	}
	sooner := kept && (w.wakeAt.IsZero() || at.Before(w.wakeAt))
	w.mu.Unlock()
	if !sooner {
		return
	}
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// renew runs one renewal round for a batch of leases: one call per node.
func (w *Watchdog) renew(batch []*Lease) {
	c := w.client
	leases := make([]*Lease, 0, len(batch))
	for _, l := range batch {
		if !l.ops.TryLock() {
			// Unlock or Extend is running on it: look again shortly.
			w.reschedule(l, time.Now().Add(l.Target.Settings.TTL/renewRetryDivisor))
			continue
		}
		if l.Err() != nil {
			l.ops.Unlock()
			continue
		}
		leases = append(leases, l)
	}
	if len(leases) == 0 {
		return
	}
	defer func() {
		for _, l := range leases {
			l.ops.Unlock()
		}
	}()
	items := make([]node.Renewal, len(leases))
	need := 0
	timeout := time.Duration(0)
	for i, l := range leases {
		s := &l.Target.Settings
		items[i] = node.Renewal{Keys: l.Target.Keys.Node(), Owner: l.owner, Hold: l.Hold, TTL: s.TTL}
		need = max(need, s.QuorumOf(len(c.Nodes)))
		timeout = max(timeout, s.RoundTimeout())
	}
	start := time.Now()
	round := quorum.Start(w.ctx, timeout, len(c.Nodes), need, &c.Background,
		func(ctx context.Context, i int) quorum.Reply[renewReply] {
			renewed, errs := c.Nodes[i].RenewEach(ctx, items)
			answered := false
			for j, l := range leases {
				l.Called(i, errs[j]) // the renewal may still run there, after a release
				answered = answered || errs[j] == nil
			}
			if !answered {
				return quorum.Reply[renewReply]{Vote: quorum.Failed, Err: errs[0]}
			}
			return quorum.Reply[renewReply]{Vote: quorum.Yes, Value: renewReply{renewed, errs}}
		})
	// Decide each lease as soon as enough nodes answered, then wait for the
	// stragglers before letting Unlock run (their renewal would otherwise
	// land after the release and re-create the key).
	decided := make([]bool, len(leases))
	w.apply(leases, decided, round.Wait(w.ctx), start, false)
	waitAll, cancel := context.WithTimeout(w.ctx, timeout)
	defer cancel()
	w.apply(leases, decided, round.WaitAll(waitAll), start, true)
}

// renewReply is a node's answer to a batch: on a Cluster member one call
// per shard, each with its own error (errs[i] nil: renewed[i] answers).
type renewReply struct {
	renewed []node.Renewed
	errs    []error
}

// of is item i's answer, ok false when its call failed.
func (r renewReply) of(i int) (node.Renewed, bool) { return r.renewed[i], r.errs[i] == nil }

// apply applies a round's tally to the leases not decided yet; final
// decides them all.
func (w *Watchdog) apply(leases []*Lease, decided []bool, tally quorum.Tally[renewReply], start time.Time, final bool) {
	c := w.client
	n := len(c.Nodes)
	for i, l := range leases {
		if decided[i] {
			continue
		}
		s := &l.Target.Settings
		need := s.QuorumOf(n)
		refreshed, taken, released := 0, 0, 0
		var nodeErrs []error
		for index, reply := range tally.Replies {
			var answer node.Renewed
			ok := reply.Vote == quorum.Yes
			if ok {
				answer, ok = reply.Value.of(i)
			}
			switch {
			case ok && answer == node.Refreshed:
				refreshed++
			case ok && answer == node.Taken:
				taken++
			case ok && answer == node.Revoked:
				released++
			case reply.Vote == quorum.Failed && final:
				nodeErrs = append(nodeErrs, c.NodeError(s, index, reply.Err))
			case reply.Vote == quorum.Yes && !ok && final:
				nodeErrs = append(nodeErrs, c.NodeError(s, index, reply.Value.errs[i]))
			}
		}
		switch {
		case refreshed >= need && l.renewed(start):
			decided[i] = true
			w.reschedule(l, start.Add(s.TTL/3))
		case taken+released > n-need && (released == 0 || final):
			// Another owner holds it, or its holds were removed (a
			// ForceUnlock), on enough nodes that this lease can never be
			// renewed: it is lost now, not at Until. A removal is counted
			// on every node that answers (the stragglers follow within
			// the node timeout), so that the count matches the one the
			// forcer saw, not just the quorum that settled it.
			decided[i] = true
			l.Lose(refusedBy(core.ErrLost, released, taken, n))
		case final:
			decided[i] = true
			if len(nodeErrs) > 0 {
				s.Logger.Warn("redlock: renewal missed its quorum", "lock", l.Target.LockName,
					"renewed", refreshed, "need", need, "err", Verdict{Yes: refreshed, need: need, N: n, NodeErrs: nodeErrs}.Err(nil))
			}
			// Try again after a tenth of the TTL, or sooner when less
			// than thrice that is left (a lease taken from handoff
			// notices, before its first renewal): several tries fit.
			retry := min(s.TTL/renewRetryDivisor, time.Until(l.Until())/3)
			w.reschedule(l, time.Now().Add(max(retry, time.Millisecond)))
		}
	}
}
