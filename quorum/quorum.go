// Package quorum fans one call out to N nodes and counts the answers. It
// decides as early as the count allows: as soon as enough nodes agreed, or
// as soon as too many refused for agreement to be possible. Calls still in
// flight then (stragglers) run on and their answers are still delivered, so
// that a caller can undo what a late node granted. It knows nothing of Redis.
package quorum

import (
	"context"
	"sync"
	"time"
)

// Vote is one node's answer in a round.
type Vote int

const (
	Pending Vote = iota // no answer yet
	Yes                 // the node agreed (granted, renewed, released)
	No                  // the node answered and refused
	Failed              // the call failed: unknown whether it took effect
)

// Reply is one node's answer.
type Reply[T any] struct {
	Vote  Vote
	Value T
	Err   error
}

// Call is one node's part of a round. It must respect ctx.
type Call[T any] func(ctx context.Context, node int) Reply[T]

// Round is one fan-out in progress.
type Round[T any] struct {
	need   int
	notify chan struct{} // poked after every answer; capacity 1
	cancel context.CancelFunc

	mu       sync.Mutex
	replies  []Reply[T]
	yes, no  int // no counts refusals and failures
	answered int
	late     func(node int, reply Reply[T])
}

// Start calls call on n nodes at once and returns the running round. need
// is the number of Yes votes that decides it. Each call gets ctx bounded by
// timeout (none when zero), cancelled once every node answered. Each call
// runs in a goroutine tracked by background, so its owner can wait for
// stragglers.
func Start[T any](ctx context.Context, timeout time.Duration, n, need int, background *sync.WaitGroup, call Call[T]) *Round[T] {
	var cancel context.CancelFunc
	if timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, timeout)
	} else {
		ctx, cancel = context.WithCancel(ctx)
	}
	round := &Round[T]{
		need:    need,
		notify:  make(chan struct{}, 1),
		cancel:  cancel,
		replies: make([]Reply[T], n),
	}
	for node := range n {
		background.Go(func() { round.record(node, call(ctx, node)) })
	}
	return round
}

func (r *Round[T]) record(node int, reply Reply[T]) {
	if reply.Vote == Pending {
		reply.Vote = Failed // a call must answer; treat a non-answer as unknown
	}
	r.mu.Lock()
	r.replies[node] = reply
	r.answered++
	switch reply.Vote {
	case Yes:
		r.yes++
	default:
		r.no++
	}
	late, all := r.late, r.answered == len(r.replies)
	r.mu.Unlock()
	if all {
		r.cancel()
	}
	if late != nil {
		late(node, reply)
		return
	}
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

// Tally is a snapshot of a round.
type Tally[T any] struct {
	Replies  []Reply[T] // by node; Vote is Pending for nodes yet to answer
	Yes, No  int
	Answered int
}

// Decided reports whether the tally settles the round: enough Yes votes,
// or so many refusals that enough Yes votes cannot come.
func (t Tally[T]) Decided(need int) bool {
	return t.Yes >= need || t.No > len(t.Replies)-need || t.Answered == len(t.Replies)
}

func (r *Round[T]) snapshot() Tally[T] {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tallyLocked()
}

func (r *Round[T]) tallyLocked() Tally[T] {
	return Tally[T]{
		Replies:  append([]Reply[T](nil), r.replies...),
		Yes:      r.yes,
		No:       r.no,
		Answered: r.answered,
	}
}

// Wait blocks until the round is decided or ctx is done, and returns the
// tally at that moment.
func (r *Round[T]) Wait(ctx context.Context) Tally[T] {
	return r.waitFor(ctx, func(t Tally[T]) bool { return t.Decided(r.need) })
}

// WaitAll blocks until every node answered or ctx is done.
func (r *Round[T]) WaitAll(ctx context.Context) Tally[T] {
	return r.waitFor(ctx, func(t Tally[T]) bool { return t.Answered == len(t.Replies) })
}

func (r *Round[T]) waitFor(ctx context.Context, done func(Tally[T]) bool) Tally[T] {
	for {
		tally := r.snapshot()
		if done(tally) {
			return tally
		}
		select {
		case <-r.notify:
		case <-ctx.Done():
			return r.snapshot()
		}
	}
}

// Detach hands every answer still to come to late, called from the
// straggler's goroutine, and returns the tally of the answers already in.
// Between them, the two see every answer exactly once.
func (r *Round[T]) Detach(late func(node int, reply Reply[T])) Tally[T] {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.late = late
	return r.tallyLocked()
}

// Each calls fn on the given nodes at once and waits for all of them:
// for work every node must finish (an undo, leaving a queue, a read of
// each), where a round's early return would leave calls behind. Each call
// gets ctx bounded by timeout (none when zero); fn reports its own failures.
func Each(ctx context.Context, nodes []int, timeout time.Duration, fn func(ctx context.Context, node int)) {
	var wg sync.WaitGroup
	for _, i := range nodes {
		wg.Go(func() {
			ctx, cancel := ctx, context.CancelFunc(func() {})
			if timeout > 0 {
				ctx, cancel = context.WithTimeout(ctx, timeout)
			}
			defer cancel()
			fn(ctx, i)
		})
	}
	wg.Wait()
}
