package main

import (
	"testing"
	"time"
)

// TestHandoffs: only a grant to a worker that waited across the Unlock
// counts, once per Unlock.
func TestHandoffs(t *testing.T) {
	var h handoffs
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

	h.granted(at(0), at(1)) // no Unlock yet: the lock was free
	h.unlocking(at(10))
	h.granted(at(5), at(12)) // waited since 5: a 2ms handoff
	h.granted(at(6), at(13)) // the same Unlock cannot count twice
	h.unlocking(at(20))
	h.granted(at(21), at(22)) // began after the Unlock: the releaser locked again
	h.unlocking(at(30))
	h.granted(at(25), at(34)) // 4ms

	if got := h.takeWindow(); len(got) != 2 || got[0] != 2*time.Millisecond || got[1] != 4*time.Millisecond {
		t.Errorf("window = %v, want [2ms 4ms]", got)
	}
	if got := h.takeWindow(); len(got) != 0 {
		t.Errorf("second window = %v, want empty", got)
	}
	if got := h.total(); len(got) != 2 {
		t.Errorf("total = %v, want 2 handoffs", got)
	}
}
