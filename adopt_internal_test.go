package redlock

import (
	"testing"
	"time"
)

// settle waits for the notices of the nodes that have not yet named the
// lease's hold, up to handoffGrace, and ends at once when the release
// starts; a notice heard after that does not count (the release may have
// reached its node before the handing).
func TestHandoff_settle(t *testing.T) {
	const hold = "call.1"
	notice := func(h *handoff, i int) { h.heard(i, "r1 fp "+hold) }
	fresh := func() *handoff {
		h := newHandoff(3, 2)
		h.failed(hold, time.Now(), func(int) bool { return true })
		notice(h, 0)
		return h
	}

	t.Run("a notice on its way is waited for", func(t *testing.T) {
		h := fresh()
		go func() {
			time.Sleep(handoffGrace / 10)
			notice(h, 1)
		}()
		start := time.Now()
		rest := h.settle(hold, []int{0, 1, 2}, nil)
		if len(rest) != 1 || rest[0] != 2 {
			t.Fatalf("settle left %v, want [2]", rest)
		}
		if waited := time.Since(start); waited < handoffGrace {
			t.Fatalf("settle returned after %v with node 2 silent, want the grace (%v)", waited, handoffGrace)
		}
	})

	t.Run("every node heard ends the wait", func(t *testing.T) {
		h := fresh()
		notice(h, 1)
		notice(h, 2)
		if rest := h.settle(hold, []int{0, 1, 2}, nil); len(rest) != 0 {
			t.Fatalf("settle left %v, want none", rest)
		}
	})

	t.Run("the release ends the wait, and later notices do not count", func(t *testing.T) {
		h := fresh()
		got := make(chan []int, 1)
		go func() { got <- h.settle(hold, []int{0, 1, 2}, nil) }()
		h.freeze(hold)
		notice(h, 1)
		select {
		case rest := <-got:
			if len(rest) != 2 || rest[0] != 1 || rest[1] != 2 {
				t.Fatalf("settle left %v, want [1 2]: node 1's notice came after the release started", rest)
			}
		case <-time.After(handoffGrace / 2):
			t.Fatal("settle still waiting after the release started")
		}
	})

	t.Run("a closing Client ends the wait", func(t *testing.T) {
		h := fresh()
		done := make(chan struct{})
		close(done)
		if rest := h.settle(hold, []int{1, 2}, done); len(rest) != 2 {
			t.Fatalf("settle left %v, want [1 2]", rest)
		}
	})
}
