package pubsub

import "testing"

func TestChannel_seen_wakesOncePerReleaseAtThreshold(t *testing.T) {
	ch := newChannel(5)
	ch.threshold = 3
	for i := range ch.confirmed {
		ch.confirm(i)
	}
	steps := []struct {
		payload string
		want    bool
	}{
		{"a", false},
		{"b", false}, // notices of two releases interleave
		{"a", false},
		{"a", true}, // third node: a quorum released
		{"a", false},
		{"a", false},
		{"b", false},
		{"b", true},
		{"c", false}, // a failed contender's partial release: one or two nodes
		{"c", false},
	}
	for i, step := range steps {
		if got := ch.seen(step.payload); got != step.want {
			t.Fatalf("step %d (%s): %v, want %v", i, step.payload, got, step.want)
		}
	}
}

func TestChannel_effectiveThreshold_discountsNodesDown(t *testing.T) {
	ch := newChannel(5)
	ch.threshold = 3
	if got := ch.effectiveThreshold(); got != 1 {
		t.Fatalf("nothing confirmed: %d, want 1", got)
	}
	for i := range 4 {
		ch.confirm(i)
	}
	if got := ch.effectiveThreshold(); got != 2 {
		t.Fatalf("one node down: %d, want 2", got)
	}
	ch.confirm(4)
	if got := ch.effectiveThreshold(); got != 3 {
		t.Fatalf("all up: %d, want 3", got)
	}
	ch.unconfirm(4)
	if got := ch.effectiveThreshold(); got != 2 {
		t.Fatalf("node 4 lost: %d, want 2", got)
	}
}

func TestChannel_wakeOne_roundRobinSkippingPending(t *testing.T) {
	ch := newChannel(1)
	watchers := []*Watcher{{wake: make(chan struct{}, 1)}, {wake: make(chan struct{}, 1)}, {wake: make(chan struct{}, 1)}}
	ch.watchers = watchers
	for range 3 {
		ch.wakeOne("")
	}
	for i, w := range watchers {
		if !w.pending() {
			t.Fatalf("watcher %d not woken after three wake-ups for three watchers", i)
		}
	}
	watchers[1].signal()
	ch.wakeOne("")
	if !watchers[0].pending() && !watchers[2].pending() {
		t.Fatal("wake-up went to the watcher that already had one")
	}
}
