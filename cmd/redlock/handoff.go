package main

import (
	"slices"
	"sync"
	"time"
)

// handoffs measures how long a lock stands idle between holders: from the
// moment one holder calls Unlock to the moment Lock returns to a worker
// that was already waiting. That is the cost of passing the lock on (a
// release round, the notice, an acquire round), which throughput alone
// hides behind the hold time.
type handoffs struct {
	mu       sync.Mutex
	released time.Time       // the last Unlock not yet followed by a grant
	window   []time.Duration // since the last progress line
	all      []time.Duration
}

// unlocking records that a holder is about to call Unlock.
func (h *handoffs) unlocking(at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.released = at
}

// granted records a grant to a worker that began waiting at began. Only a
// worker that was waiting before the release counts: a holder that locks
// again after its own Unlock took no handoff. Either way the release is
// used up, since this grant followed it.
func (h *handoffs) granted(began, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	released := h.released
	h.released = time.Time{}
	if released.IsZero() || !began.Before(released) || !at.After(released) {
		return
	}
	d := at.Sub(released)
	h.window = append(h.window, d)
	h.all = append(h.all, d)
}

// takeWindow returns the handoffs since its last call, sorted.
func (h *handoffs) takeWindow() []time.Duration {
	h.mu.Lock()
	window := h.window
	h.window = nil
	h.mu.Unlock()
	slices.Sort(window)
	return window
}

// total returns every handoff of the run, sorted.
func (h *handoffs) total() []time.Duration {
	h.mu.Lock()
	all := slices.Clone(h.all)
	h.mu.Unlock()
	slices.Sort(all)
	return all
}
