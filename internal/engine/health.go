package engine

import "sync/atomic"

// health remembers which nodes failed their last call, so that the lead
// node of a contended attempt is one that answers. Every client that sees
// the same nodes up picks the same lead.
type health struct {
	failing []atomic.Bool
}

func newHealth(nodes int) *health { return &health{failing: make([]atomic.Bool, nodes)} }

func (h *health) record(node int, err error) { h.failing[node].Store(err != nil) }

// lead is the first node that did not fail its last call (node 0 if all did).
func (h *health) lead() int {
	for i := range h.failing {
		if !h.failing[i].Load() {
			return i
		}
	}
	return 0
}
