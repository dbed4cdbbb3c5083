package pubsub

import (
	"strings"
	"time"
)

// recentNotices is how many payloads per channel are remembered to count
// the same release arriving from several nodes.
const recentNotices = 64

// channel is the hub's state for one channel name. Guarded by Hub.mu.
type channel struct {
	watchers  []*Watcher
	next      int // round-robin position for passOn
	threshold int
	idleSince time.Time // zero while watched
	confirmed []bool
	changed   chan struct{} // closed (and replaced) at each confirmation
	recent    [recentNotices]notice
	head      int
}

type notice struct {
	payload string
	count   int // nodes that published it; -1 once delivered
}

func newChannel(nodes int) *channel {
	return &channel{confirmed: make([]bool, nodes), changed: make(chan struct{})}
}

func (ch *channel) confirm(node int) {
	if !ch.confirmed[node] {
		ch.confirmed[node] = true
		close(ch.changed)
		ch.changed = make(chan struct{})
	}
}

// confirmedOf counts the confirmed nodes that down does not rule out, and
// how many nodes that is of.
func (ch *channel) confirmedOf(down []bool) (confirmed, reachable int) {
	for i, ok := range ch.confirmed {
		if !down[i] {
			reachable++
			if ok {
				confirmed++
			}
		}
	}
	return confirmed, reachable
}

func (ch *channel) unconfirm(node int) {
	if ch.confirmed[node] {
		ch.confirmed[node] = false
	}
}

func (ch *channel) confirmedAll() bool {
	for _, ok := range ch.confirmed {
		if !ok {
			return false
		}
	}
	return true
}

// seen counts one more node's notice of payload and reports whether this
// is the moment to wake a watcher: the count just reached the threshold.
func (ch *channel) seen(payload string) bool {
	payload, _, _ = strings.Cut(payload, " ") // count by release id
	for i := range ch.recent {
		n := &ch.recent[i]
		if n.payload != payload || n.count == 0 {
			continue
		}
		if n.count < 0 {
			return false // delivered already
		}
		n.count++
		if n.count >= ch.effectiveThreshold() {
			n.count = -1
			return true
		}
		return false
	}
	slot := &ch.recent[ch.head]
	ch.head = (ch.head + 1) % recentNotices
	*slot = notice{payload: payload, count: 1}
	if ch.effectiveThreshold() <= 1 {
		slot.count = -1
		return true
	}
	return false
}

// effectiveThreshold lowers the threshold by the nodes whose subscription
// is down: their notices cannot come, and waiting for them would leave the
// watchers to their fallback timers while a node is out.
func (ch *channel) effectiveThreshold() int {
	down := 0
	for _, ok := range ch.confirmed {
		if !ok {
			down++
		}
	}
	return max(ch.threshold-down, 1)
}

// wake delivers a release notice to every watcher without a filter and
// every watcher whose filter accepts payload. A filter names whom a
// notice is for (the one owner a lock was handed to: its watchers all
// re-enter), so this is no herd.
func (ch *channel) wake(payload string) {
	for _, w := range ch.watchers {
		if w.accept == nil || w.accept(payload) {
			w.signal()
		}
	}
}

// passOn gives an unused wake-up to another watcher, any one.
func (ch *channel) passOn() {
	for range ch.watchers {
		ch.next = (ch.next + 1) % len(ch.watchers)
		if ch.watchers[ch.next].signal() {
			return
		}
	}
}
