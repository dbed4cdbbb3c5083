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

func TestChannel_wake_allUnfilteredAndEveryOneNamed(t *testing.T) {
	ch := newChannel(1)
	plain := []*Watcher{{wake: make(chan struct{}, 1)}, {wake: make(chan struct{}, 1)}}
	isA := func(p string) bool { return p == "r1 a" }
	named := []*Watcher{
		{wake: make(chan struct{}, 1), accept: isA},
		{wake: make(chan struct{}, 1), accept: isA},
		{wake: make(chan struct{}, 1), accept: func(string) bool { return false }},
	}
	ch.watchers = append(append([]*Watcher{}, plain...), named...)
	ch.wake("r1 a")
	for i, w := range plain {
		if !w.pending() {
			t.Fatalf("unfiltered watcher %d not woken", i)
		}
	}
	woken := 0
	for _, w := range named {
		if w.pending() {
			woken++
		}
	}
	if woken != 2 || named[2].pending() {
		t.Fatalf("%d filtered watchers woken, want exactly the two named", woken)
	}
	for _, w := range ch.watchers {
		select {
		case <-w.wake:
		default:
		}
	}
	ch.passOn()
	pending := 0
	for _, w := range ch.watchers {
		if w.pending() {
			pending++
		}
	}
	if pending != 1 {
		t.Fatalf("passOn woke %d watchers, want 1", pending)
	}
}

func TestChannel_grantedWatcherHearsButTakesNoWakeUp(t *testing.T) {
	h := &Hub{channels: map[string]*channel{}}
	ch := newChannel(1)
	h.channels["c"] = ch
	var heard []string
	granted := &Watcher{hub: h, name: "c", wake: make(chan struct{}, 1),
		heard: func(_ int, payload string) { heard = append(heard, payload) }}
	waiting := &Watcher{hub: h, name: "c", wake: make(chan struct{}, 1), accept: func(string) bool { return false }}
	ch.watchers = []*Watcher{granted, waiting}
	granted.Granted()

	h.deliver(0, "c", "r1 a")
	if len(heard) != 1 || heard[0] != "r1 a" {
		t.Fatalf("granted watcher heard %q, want the notice", heard)
	}
	if granted.pending() {
		t.Fatal("granted watcher woken by a notice")
	}
	// A wake-up passed on must reach the one still waiting, whatever the
	// round-robin position.
	for range 3 {
		ch.passOn()
		if granted.pending() {
			t.Fatal("granted watcher took a wake-up passed on")
		}
		if !waiting.pending() {
			t.Fatal("the waiting watcher was not given the wake-up passed on")
		}
	}
}
