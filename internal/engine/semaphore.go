package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/quorumlock/redlock/internal/core"
	"github.com/quorumlock/redlock/internal/leases"
	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/reentrant"
)

// Semaphore: see redlock.Semaphore, which documents it.
type Semaphore struct {
	client   *Client
	name     string
	permits  int
	settings core.Settings
	slots    []*Mutex
	count    node.Keys // where the count is stored, with the restart guard
	err      error     // invalid configuration, reported by Acquire and TryAcquire

	mu sync.Mutex
	// confirmed is how long the count is known to stay on a quorum (the
	// last check a quorum confirmed): no permit is valid past it.
	confirmed time.Time
	users     int                        // Acquire and TryAcquire calls running, plus permits out
	out       map[*leases.Lease]struct{} // permits of this value not ended yet
	keeping   bool                       // a keeper checks the count while there are users
	bound     *time.Timer                // fires at confirmed while permits are out
}

// Semaphore implements redlock.Client.Semaphore, which documents it.
func (c *Client) Semaphore(name string, permits int, opts ...core.Option) *Semaphore {
	own := core.DefaultSettings().With(opts) // what the caller asked of this semaphore
	opts = append(slices.Clip(opts), func(s *core.Settings) { s.Fair, s.Fencing = false, false })
	s := &Semaphore{client: c, name: name, permits: permits, settings: c.defaults.With(opts), out: make(map[*leases.Lease]struct{})}
	switch {
	case name == "":
		s.err = fmt.Errorf("%w: empty semaphore name", core.ErrConfig)
	case permits < 1 || permits > node.MaxPermits:
		s.err = fmt.Errorf("%w: permits must be in 1..%d, got %d", core.ErrConfig, node.MaxPermits, permits)
	case own.Fair:
		s.err = fmt.Errorf("%w: a Semaphore has no fair mode (WithFair)", core.ErrConfig)
	case own.Fencing:
		s.err = fmt.Errorf("%w: a Semaphore has no fencing tokens (WithFencing): permits are held at once", core.ErrConfig)
	default:
		s.err = s.settings.Validate(len(c.runtime.Nodes))
	}
	if s.err != nil {
		return s
	}
	s.slots = make([]*Mutex, permits)
	for i := range s.slots {
		s.slots[i] = c.Mutex(name+":permit"+strconv.Itoa(i), opts...)
	}
	k := core.KeysFor(s.settings.KeyPrefix, name, s.slots[0].target.Keys.Guard)
	s.count = node.Keys{Lock: k.Lock + ":permits", Marker: k.Marker, Guard: k.Guard}
	return s
}

// Name is the semaphore's name.
func (s *Semaphore) Name() string { return s.name }

// Acquire implements redlock.Semaphore.Acquire, which documents it.
func (s *Semaphore) Acquire(ctx context.Context) (*Lease, error) {
	return observed(ctx, &s.settings.Observer, s.event("Acquire"), func(*callStats) (*Lease, error) { return s.acquire(ctx, true) })
}

// TryAcquire implements redlock.Semaphore.TryAcquire, which documents it.
func (s *Semaphore) TryAcquire(ctx context.Context) (*Lease, error) {
	return observed(ctx, &s.settings.Observer, s.event("TryAcquire"), func(*callStats) (*Lease, error) { return s.acquire(ctx, false) })
}

// event describes a call of s's as it starts.
func (s *Semaphore) event(op string) core.CallEvent {
	n := len(s.client.runtime.Nodes)
	return core.CallEvent{Op: op, Kind: "Semaphore", Name: s.name, Nodes: n, Quorum: s.settings.QuorumOf(n)}
}

func (s *Semaphore) acquire(ctx context.Context, wait bool) (*Lease, error) {
	c := s.client
	if err := c.runtime.BeginCall(ctx, s.err); err != nil {
		return nil, err
	}
	defer c.runtime.End()
	s.addUser()
	defer s.dropUser()
	if err := s.confirm(ctx, wait); err != nil {
		return nil, err
	}
	// Every permit is a holder of its own.
	ctx = reentrant.WithOwner(ctx, reentrant.NewID())
	var busy, last error
	start := rand.IntN(s.permits)
	for j := range s.permits {
		i := (start + j) % s.permits
		lease, err := s.slots[i].acquire(ctx, false)
		if err == nil {
			return s.lent(ctx, lease)
		}
		switch {
		case ctx.Err() != nil:
			return nil, gaveUp(ctx, err)
		case errors.Is(err, core.ErrConfig), errors.Is(err, core.ErrClosed):
			return nil, err
		case errors.Is(err, core.ErrNotAcquired) && busy == nil:
			busy = fmt.Errorf("permit %d: %w", i, err)
		}
		last = err // a key conflict on this slot: try the others
	}
	if !wait {
		if busy == nil {
			return nil, last // no slot was refused: too few nodes answered, or key conflicts
		}
		return nil, fmt.Errorf("%w: all %d permits of %q are held (%w)", core.ErrNotAcquired, s.permits, s.name, busy)
	}
	return s.waitAny(ctx)
}

// lent puts a permit behind a Lease and counts it out until it ends. When
// the count's confirmation has less than half a TTL left (the keeper could
// not reach a quorum while this call waited), it is checked again first;
// a permit that would be valid no longer is given back.
func (s *Semaphore) lent(ctx context.Context, l *leases.Lease) (*Lease, error) {
	if time.Until(s.confirmedUntil()) < s.settings.TTL/2 {
		err := s.check(ctx)
		if err != nil && !time.Now().Before(s.confirmedUntil()) {
			_ = l.Unlock(context.WithoutCancel(ctx))
			if ctx.Err() != nil {
				return nil, gaveUp(ctx, err)
			}
			return nil, fmt.Errorf("%w (the permit taken was given back)", err)
		}
	}
	s.mu.Lock()
	s.out[l] = struct{}{}
	s.users++
	if s.bound == nil {
		s.bound = time.AfterFunc(time.Until(s.confirmed), s.unconfirmed)
	}
	s.mu.Unlock()
	context.AfterFunc(l.Context(), func() {
		s.mu.Lock()
		delete(s.out, l)
		if len(s.out) == 0 && s.bound != nil {
			s.bound.Stop()
			s.bound = nil
		}
		s.mu.Unlock()
		s.dropUser()
	})
	return &Lease{held: &permit{slot: l, sem: s}}, nil
}

// permit is a Semaphore's permit: its slot's lease, valid no longer than
// the count it was granted under is known to stay on a quorum.
type permit struct {
	slot *leases.Lease // the lease of the permit's slot
	sem  *Semaphore
}

func (p *permit) Context() context.Context         { return p.slot.Context() }
func (p *permit) Err() error                       { return p.slot.Err() }
func (p *permit) Token() uint64                    { return p.slot.Token() }
func (p *permit) Owner() string                    { return p.slot.Owner() }
func (p *permit) Unlock(ctx context.Context) error { return p.slot.Unlock(ctx) }
func (p *permit) Extend(ctx context.Context) error { return p.slot.Extend(ctx) }

func (p *permit) Until() time.Time {
	until, confirmed := p.slot.Until(), p.sem.confirmedUntil()
	if confirmed.Before(until) {
		return confirmed
	}
	return until
}

func (s *Semaphore) confirmedUntil() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.confirmed
}

// unconfirmed runs at the end of the count's confirmation while permits
// are out: unless a check moved it meanwhile, they are lost, as the count
// may expire on the nodes from then on.
func (s *Semaphore) unconfirmed() {
	s.mu.Lock()
	if len(s.out) == 0 {
		s.bound = nil
		s.mu.Unlock()
		return
	}
	if left := time.Until(s.confirmed); left > 0 {
		s.bound.Reset(left)
		s.mu.Unlock()
		return
	}
	lost := make([]*leases.Lease, 0, len(s.out))
	for l := range s.out {
		lost = append(lost, l)
	}
	s.mu.Unlock()
	cause := fmt.Errorf("%w: the permit count of semaphore %q was not confirmed on a quorum for a TTL", core.ErrLost, s.name)
	for _, l := range lost {
		l.Lose(cause)
	}
}

// addUser counts a user of the count (a call, or a permit out) and starts
// the keeper if none runs.
func (s *Semaphore) addUser() {
	s.mu.Lock()
	s.users++
	start := !s.keeping
	s.keeping = true
	s.mu.Unlock()
	if start {
		s.client.runtime.Background.Go(s.keep)
	}
}

func (s *Semaphore) dropUser() {
	s.mu.Lock()
	s.users--
	s.mu.Unlock()
}

// keep checks the count every third of the TTL while the value has users:
// that keeps the count on the nodes (and stores it again where a node lost
// it) and moves the permits' bound. It ends at the first tick without
// users, or when the Client closes.
func (s *Semaphore) keep() {
	c := s.client
	ticker := time.NewTicker(s.settings.TTL / 3)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
		case <-c.runtime.Done:
			return
		}
		s.mu.Lock()
		if s.users == 0 {
			s.keeping = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), s.settings.RoundTimeout())
		if err := s.check(ctx); err != nil {
			s.settings.Logger.Warn("redlock: semaphore permit count not confirmed", "semaphore", s.name, "err", err)
		}
		cancel()
	}
}

// waitAny waits on every slot at once, as a Mutex waits, and keeps the
// first permit granted: the other slots' waits are cancelled, and a
// permit granted at the same moment is given back before it returns.
func (s *Semaphore) waitAny(ctx context.Context) (*Lease, error) {
	race, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	type result struct {
		slot  int
		lease *leases.Lease
		err   error
	}
	results := make(chan result, len(s.slots))
	var wg sync.WaitGroup
	for i, slot := range s.slots {
		wg.Go(func() {
			lease, err := slot.acquire(race, true)
			results <- result{i, lease, err}
		})
	}
	var won *leases.Lease
	var failed error // the first failure that did not come from the race's end
	failures := 0
	for range s.slots {
		r := <-results
		switch {
		case r.err == nil && won == nil:
			won = r.lease
			cancel(errPermitTaken)
		case r.err == nil:
			_ = r.lease.Unlock(context.WithoutCancel(ctx))
		case !errors.Is(context.Cause(race), errPermitTaken) && ctx.Err() == nil:
			// This slot gave up (a key conflict there, the Client
			// closing): the others wait on, unless none is left.
			failures++
			if failed == nil {
				failed = fmt.Errorf("permit %d of %q: %w", r.slot, s.name, r.err)
			}
			if failures == len(s.slots) || errors.Is(r.err, core.ErrClosed) {
				cancel(r.err)
			}
		}
	}
	wg.Wait()
	switch {
	case won != nil:
		return s.lent(ctx, won)
	case ctx.Err() != nil:
		return nil, gaveUp(ctx, nil)
	}
	return nil, failed
}

// errPermitTaken ends the other slots' waits once one was granted.
var errPermitTaken = errors.New("redlock: a permit was granted")

// confirm checks the count unless its confirmation has more than half a
// TTL left. With wait, too few nodes answering is waited out (with
// backoff) until ctx ends, as Lock waits; an ended ctx gives Lock's error.
func (s *Semaphore) confirm(ctx context.Context, wait bool) error {
	if time.Until(s.confirmedUntil()) > s.settings.TTL/2 {
		return nil
	}
	pacer := s.slots[0].newPacer()
	for {
		err := s.check(ctx)
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return gaveUp(ctx, err)
		case !wait || !errors.Is(err, core.ErrNoQuorum):
			return err
		}
		delay, ok := pacer.next(outcome{minPTTL: -1, err: err})
		if !ok {
			return err
		}
		timer := time.NewTimer(delay)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return gaveUp(ctx, err)
		case <-s.client.runtime.Done:
			timer.Stop()
			return core.ErrClosed
		}
	}
}

// check stores the count on the nodes where none is, keeps it there for a
// TTL, and fails when a node that answered has another one (or one that is
// not a count). A quorum must answer; then the count stays on a quorum
// until a TTL after the check began (less the drift allowance), and the
// permits may be valid until then.
func (s *Semaphore) check(ctx context.Context) error {
	c := s.client
	start := time.Now()
	stored := make([]int, len(c.runtime.Nodes))
	errs := make([]error, len(c.runtime.Nodes))
	s.slots[0].eachNode(ctx, errs, func(ctx context.Context, i int, n *node.Node) (err error) {
		stored[i], err = n.Permits(ctx, s.count, s.permits, s.settings.TTL)
		return err
	})
	var nodeErrs []error
	for i, err := range errs {
		if errors.Is(err, node.ErrBadReply) {
			return fmt.Errorf("%w: semaphore %q: node %d (%s) holds something else than a permit count at %s: %w",
				core.ErrConfig, s.name, i, c.runtime.Nodes[i].Addr(), s.count.Lock, err)
		}
		if err != nil {
			nodeErrs = append(nodeErrs, c.runtime.NodeError(&s.settings, i, err))
			continue
		}
		if stored[i] != s.permits {
			return fmt.Errorf("%w: semaphore %q has %d permits on node %d (%s), not %d: every Client must use one count "+
				"(to change it, stop every process that uses it: %s expires a TTL after the last one stopped)",
				core.ErrConfig, s.name, stored[i], i, c.runtime.Nodes[i].Addr(), s.permits, s.count.Lock)
		}
	}
	need := s.settings.QuorumOf(len(c.runtime.Nodes))
	if answered := len(c.runtime.Nodes) - len(nodeErrs); answered < need {
		return leases.Verdict{NodeErrs: nodeErrs}.With(fmt.Errorf("%w: the permit count was confirmed by %d of %d nodes, %d needed",
			core.ErrNoQuorum, answered, len(c.runtime.Nodes), need))
	}
	s.mu.Lock()
	if until := core.ValidUntil(start, s.settings.TTL, s.settings.DriftFactor); until.After(s.confirmed) {
		s.confirmed = until
	}
	s.mu.Unlock()
	return nil
}
