// Package pubsub turns release notices into wake-ups. A Hub keeps one
// subscriber connection per node for all channels of a Client, with channels
// ref-counted by their watchers, so a thousand waiters cost N connections.
// It knows nothing of locks: a notice is a (channel, payload) pair, and a
// watcher is woken when the same payload came from enough nodes.
package pubsub

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// linger is how long a channel stays subscribed after its last watcher
// left: a lock contended again soon needs no new SUBSCRIBE round.
const linger = 5 * time.Second

// Hub fans release notices of many channels from N nodes out to local
// watchers. Its methods are safe for concurrent use.
type Hub struct {
	nodes   []*subscriber
	timeout time.Duration // bound on waiting for SUBSCRIBE confirmations

	mu       sync.Mutex
	channels map[string]*channel
	down     []bool // node's subscriber is known to be disconnected
	closed   bool
}

// New makes a Hub over one client per node. It opens no connection until
// the first Watch. confirmTimeout bounds how long Watch waits for the nodes
// to confirm a new subscription.
func New(clients []redis.UniversalClient, confirmTimeout time.Duration) *Hub {
	h := &Hub{timeout: confirmTimeout, channels: make(map[string]*channel), down: make([]bool, len(clients))}
	for i, client := range clients {
		h.nodes = append(h.nodes, newSubscriber(h, i, client))
	}
	return h
}

// Active reports whether name is subscribed on the nodes already, so that a
// watcher would see every notice from now on without a SUBSCRIBE round.
func (h *Hub) Active(name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch := h.channels[name]
	return ch != nil && ch.confirmedAll()
}

// Watch registers a watcher of name, woken when a payload was published on
// name by threshold nodes. It returns once threshold of the reachable
// nodes confirmed the subscription, or the confirm timeout passed, or ctx
// is done: notices published after Watch returns are not missed by those
// nodes, and the rest follow as their confirmations arrive.
// The watcher must be closed with Leave.
//
// A payload is "<release id>" or "<release id> <detail>"; notices are
// counted by release id. accept, when not nil, picks which watchers a
// payload may wake (a fair release names the one waiter it is for).
func (h *Hub) Watch(ctx context.Context, name string, threshold int, accept func(payload string) bool) *Watcher {
	return h.WatchNodes(ctx, name, threshold, accept, nil)
}

// WatchNodes is Watch that also tells heard, when not nil, of each notice
// accept lets through, with the node that sent it, before any wake-up it
// causes. heard runs on the Hub's delivery path: it must be quick and must
// not call the Hub.
func (h *Hub) WatchNodes(ctx context.Context, name string, threshold int, accept func(payload string) bool,
	heard func(node int, payload string)) *Watcher {
	w := h.Subscribe(name, threshold, accept, heard)
	w.Confirmed(ctx)
	return w
}

// Subscribe is WatchNodes that returns at once: the subscription goes out
// in the background, and Confirmed waits for it. A caller that acts before
// it is confirmed must act again once it is, since a notice published
// meanwhile may be missed.
func (h *Hub) Subscribe(name string, threshold int, accept func(payload string) bool,
	heard func(node int, payload string)) *Watcher {
	w := &Watcher{hub: h, name: name, wake: make(chan struct{}, 1), accept: accept, heard: heard, threshold: threshold}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return w // never woken: the caller falls back to its own timers
	}
	ch := h.channels[name]
	fresh := ch == nil
	if fresh {
		ch = newChannel(len(h.nodes))
		h.channels[name] = ch
	}
	w.ch = ch
	ch.watchers = append(ch.watchers, w)
	ch.idleSince = time.Time{}
	if threshold < ch.threshold || ch.threshold == 0 {
		ch.threshold = threshold
	}
	h.mu.Unlock()
	if fresh {
		// Only a new channel changes what the nodes must subscribe; the
		// writers also re-check every second (retries, lingering channels).
		for _, node := range h.nodes {
			node.kick()
		}
	}
	return w
}

// Confirmed returns once the watcher's subscription is confirmed (see
// Watch), the confirm timeout passed, or ctx is done. It reports whether
// the subscription was confirmed already when it was called.
func (w *Watcher) Confirmed(ctx context.Context) bool {
	if w.ch == nil {
		return true
	}
	return w.hub.awaitConfirmed(ctx, w.ch, w.threshold)
}

// awaitConfirmed returns once threshold of the nodes not known to be down
// (all of them, if fewer) confirmed ch's subscription, or the confirm
// timeout passed, or ctx is done. A threshold of nodes is enough: a wake-up
// needs notices from that many, and a dead or far node must not cost a
// new watcher its round trip or the timeout.
func (h *Hub) awaitConfirmed(ctx context.Context, ch *channel, threshold int) (already bool) {
	timer := time.NewTimer(h.timeout)
	defer timer.Stop()
	for first := true; ; first = false {
		h.mu.Lock()
		confirmed, reachable := ch.confirmedOf(h.down)
		changed := ch.changed
		h.mu.Unlock()
		if confirmed >= min(max(threshold, 1), reachable) {
			return first
		}
		select {
		case <-changed:
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// Wake delivers payload on name at once, as if the nodes' notices had
// reached the threshold: the caller knows of a release first hand. The
// nodes' own notices may still wake a watcher again; a spare wake-up costs
// one attempt.
func (h *Hub) Wake(name, payload string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ch := h.channels[name]; ch != nil {
		ch.wake(payload)
	}
}

// deliver is called by a node's subscriber for each message.
func (h *Hub) deliver(node int, name, payload string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch := h.channels[name]
	if ch == nil {
		return
	}
	for _, w := range ch.watchers {
		if w.heard != nil && (w.accept == nil || w.accept(payload)) {
			w.heard(node, payload)
		}
	}
	if ch.seen(payload) {
		ch.wake(payload)
	}
}

// wakeAll wakes every watcher: a node's subscriber reconnected, so notices
// may have been lost while it was away.
func (h *Hub) wakeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ch := range h.channels {
		for _, w := range ch.watchers {
			w.signal()
		}
	}
}

// confirm records that node confirmed its subscription to name.
func (h *Hub) confirm(node int, name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.down[node] = false // a confirmation proves the connection alive
	if ch := h.channels[name]; ch != nil {
		ch.confirm(node)
	}
}

// setDown records whether node's subscriber lost its connection; a lost
// connection also forgets the node's confirmations.
func (h *Hub) setDown(node int, down bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.down[node] = down
	if down {
		for _, ch := range h.channels {
			ch.unconfirm(node)
		}
	}
}

// wanted lists the channels every node should be subscribed to. Channels
// without watchers for longer than linger are forgotten here, so the
// subscribers unsubscribe them.
func (h *Hub) wanted(now time.Time) map[string]bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	names := make(map[string]bool, len(h.channels))
	for name, ch := range h.channels {
		if len(ch.watchers) == 0 && !ch.idleSince.IsZero() && now.Sub(ch.idleSince) > linger {
			delete(h.channels, name)
			continue
		}
		names[name] = true
	}
	return names
}

func (h *Hub) leave(w *Watcher, acquired bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch := h.channels[w.name]
	if ch == nil {
		return
	}
	for i, other := range ch.watchers {
		if other == w {
			ch.watchers = append(ch.watchers[:i], ch.watchers[i+1:]...)
			break
		}
	}
	if len(ch.watchers) == 0 {
		ch.idleSince = time.Now()
	}
	// A wake-up this watcher did not use is passed on, unless it took the
	// lock (then the release it signalled is the one it consumed).
	if !acquired && w.pending() {
		ch.passOn()
	}
}

// Close closes every subscriber connection and waits for their goroutines.
// Watchers still registered are never woken again.
func (h *Hub) Close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	for _, node := range h.nodes {
		node.close()
	}
}

// Watcher is one waiter's registration on a channel.
type Watcher struct {
	hub    *Hub
	name   string
	wake   chan struct{} // capacity 1: one pending wake-up at most
	accept func(payload string) bool
	heard  func(node int, payload string) // may be nil
	// ch and threshold: what Confirmed waits for (ch nil: the hub was
	// closed, nothing to wait for).
	ch        *channel
	threshold int
	// granted (under the hub's mu): the waiter took the lock; it still
	// hears notices, but takes no wake-ups (see Granted).
	granted bool
}

// Wake delivers a value when a release notice for this watcher arrived.
func (w *Watcher) Wake() <-chan struct{} { return w.wake }

// Leave unregisters the watcher; acquired tells whether the waiter took
// the lock.
func (w *Watcher) Leave(acquired bool) { w.hub.leave(w, acquired) }

// Granted says the waiter took the lock but keeps its registration a
// while, to hear the notices still on their way: from now on it is not
// woken, so that no wake-up another watcher passes on is lost on it.
func (w *Watcher) Granted() {
	w.hub.mu.Lock()
	w.granted = true
	w.hub.mu.Unlock()
}

func (w *Watcher) signal() bool {
	if w.granted {
		return false
	}
	select {
	case w.wake <- struct{}{}:
		return true
	default:
		return false
	}
}

func (w *Watcher) pending() bool {
	select {
	case <-w.wake:
		return true
	default:
		return false
	}
}
