package engine

import (
	"slices"
	"testing"
	"time"
)

// The queues a lease taken from notices leaves (see handoff.settle): it
// waits for the notices of the nodes still silent, up to handoffGrace,
// and leaves only the ones not heard; the release starting ends the wait,
// and a notice heard after that does not count (the release may have
// reached its node before the handing).
func TestHandoff_settle(t *testing.T) {
	defer func(d time.Duration) { handoffGrace = d }(handoffGrace)
	handoffGrace = 200 * time.Millisecond // far above any scheduling stall
	const hold = "call.1"
	notice := func(h *handoff, i int) { h.heard(i, "r1 fp "+hold) }
	fresh := func() *handoff {
		h := newHandoff(3, 2)
		h.failed(hold, time.Now(), func(int) bool { return true })
		notice(h, 0)
		h.expectLeave(hold, []int{0, 1, 2})
		return h
	}
	settled := func(h *handoff, done <-chan struct{}) <-chan time.Duration {
		out := make(chan time.Duration, 1)
		start := time.Now()
		go func() {
			h.settle(hold, handoffGrace, done)
			out <- time.Since(start)
		}()
		return out
	}

	t.Run("a notice on its way is waited for, a silent node until the grace", func(t *testing.T) {
		h := fresh()
		took := settled(h, nil)
		time.Sleep(time.Millisecond)
		notice(h, 1)
		if waited := <-took; waited < handoffGrace {
			t.Fatalf("settle returned after %v with node 2 silent, want the grace (%v)", waited, handoffGrace)
		}
		if rest := h.takeLeave(hold); !slices.Equal(rest, []int{2}) {
			t.Fatalf("left %v, want [2]", rest)
		}
		if rest := h.takeLeave(hold); rest != nil {
			t.Fatalf("left %v a second time, want nothing", rest)
		}
	})

	t.Run("every node heard ends the wait", func(t *testing.T) {
		h := fresh()
		took := settled(h, nil)
		notice(h, 1)
		notice(h, 2)
		if waited := <-took; waited >= handoffGrace {
			t.Fatalf("settle waited %v with every node heard", waited)
		}
		if rest := h.takeLeave(hold); len(rest) != 0 {
			t.Fatalf("left %v, want none", rest)
		}
	})

	t.Run("the release ends the wait, and later notices do not count", func(t *testing.T) {
		h := fresh()
		took := settled(h, nil)
		h.freeze(hold)
		notice(h, 1)
		if waited := <-took; waited >= handoffGrace {
			t.Fatalf("settle waited %v after the release started", waited)
		}
		if rest := h.takeLeave(hold); !slices.Equal(rest, []int{1, 2}) {
			t.Fatalf("left %v, want [1 2]: node 1's notice came after the release started", rest)
		}
	})

	t.Run("a closing Client ends the wait", func(t *testing.T) {
		h := fresh()
		done := make(chan struct{})
		close(done)
		if waited := <-settled(h, done); waited >= handoffGrace {
			t.Fatalf("settle waited %v with the Client closing", waited)
		}
		if rest := h.takeLeave(hold); !slices.Equal(rest, []int{1, 2}) {
			t.Fatalf("left %v, want [1 2]", rest)
		}
	})
}

// Notices that hand the lock to an attempt may all come while it still
// runs (refused on those nodes, it waits for the others' answers). Once
// it failed, they are a quorum's handoff: the waiter must be told at once,
// not after a notice that may never come. The Hub's own wake-up needs one
// release id from a quorum, and a lock handed on by a release on some
// nodes and by a leave on another bears two: without this the waiter slept
// until the handed lock's TTL ran out.
func TestHandoff_noticesHeardDuringTheAttemptCountWhenItFails(t *testing.T) {
	const hold = "call.1"
	h := newHandoff(5, 3)
	h.attempting()
	h.heard(0, "release.1 fp "+hold)
	h.heard(1, "release.1 fp "+hold)
	h.heard(2, "leave-id fp "+hold)
	select {
	case <-h.ready:
		t.Fatal("ready while the attempt runs")
	default:
	}
	h.failed(hold, time.Now(), func(i int) bool { return i < 3 })
	select {
	case <-h.ready:
	default:
		t.Fatal("a quorum's notices heard during the attempt did not make the handoff ready when it failed")
	}
	if got, _, nodes := h.latest(); got != hold || !slices.Equal(nodes, []int{0, 1, 2}) {
		t.Fatalf("latest: %q on %v, want %q on [0 1 2]", got, nodes, hold)
	}

	// Fewer than a quorum named it: nothing to act on.
	h = newHandoff(5, 3)
	h.attempting()
	h.heard(0, "release.1 fp "+hold)
	h.heard(1, "release.1 fp "+hold)
	h.failed(hold, time.Now(), func(i int) bool { return i < 3 })
	select {
	case <-h.ready:
		t.Fatal("ready with notices from 2 of 5 nodes")
	default:
	}
}
