package engine

import "sync/atomic"

// leadChoice remembers which nodes failed their last call, so that the lead
// node of a contended attempt is one that answers. Every client that sees
// the same nodes up picks the same lead.
type leadChoice struct {
	failing []atomic.Bool
}

func newLeadChoice(nodes int) *leadChoice { return &leadChoice{failing: make([]atomic.Bool, nodes)} }

func (h *leadChoice) record(node int, err error) { h.failing[node].Store(err != nil) }

// pick is the first node that did not fail its last call (node 0 if all did).
func (h *leadChoice) pick() int {
	for i := range h.failing {
		if !h.failing[i].Load() {
			return i
		}
	}
	return 0
}
