package node

import (
	"context"
	"sync"
	"time"
)

const (
	// timeoutRTTs is how many round trips a call gets before it counts as
	// unanswered: room for a slow script and a busy node, on any distance.
	timeoutRTTs = 3
	// unknownProbe bounds a breaker's ping to a node that never answered:
	// enough for a new connection (TCP, HELLO, CLIENT SETINFO and the
	// ping: four round trips) through a link of several hundred ms.
	unknownProbe = 2 * time.Second
)

// timing learns a node's round trip from the sends it answered, so that
// timeouts, the breaker's pings and Close's grace fit a node 100 ms away
// as well as one on loopback. The estimate drops at once to a faster
// sample (the first send to a node also opens its connection, which a
// later send does not) and rises by a quarter of a slower one.
type timing struct {
	mu   sync.Mutex
	rtt  time.Duration
	seen bool
}

func (t *timing) observe(d time.Duration) {
	if d <= 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case !t.seen || d < t.rtt:
		t.rtt, t.seen = d, true
	default:
		t.rtt += (d - t.rtt) / 4
	}
}

func (t *timing) get() (time.Duration, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rtt, t.seen
}

// RTT returns the node's learned round trip, and false before it answered
// any call.
func (n *Node) RTT() (time.Duration, bool) { return n.calls.health.timing.get() }

// Timeout returns how long a call to the node may wait for its answer:
// floor (the configured node timeout), or timeoutRTTs round trips for a
// node too far away for it, so that no reachable node fails every call for
// its distance alone.
func (n *Node) Timeout(floor time.Duration) time.Duration {
	rtt, _ := n.RTT()
	return max(floor, timeoutRTTs*rtt)
}

// probeTimeout bounds one of the breaker's pings: room for a new
// connection's four round trips, timeoutRTTs times over.
func (t *timing) probeTimeout() time.Duration {
	rtt, seen := t.get()
	if !seen {
		return unknownProbe
	}
	return max(probeInterval, 4*timeoutRTTs*rtt)
}

// Warm opens a connection to the node and reads its clock (with check, so
// that the first call's answer can be judged at once) and the longest
// guard its marker records, ahead of the first call: calls made meanwhile queue behind it and share its connection.
// A node far away then costs its first Lock a round trip, not the five of
// a new connection and the clock's first readings.
func (n *Node) Warm(ctx context.Context, check ClockCheck) error {
	var keys []string
	if n.marker != "" && !n.cluster {
		keys = []string{MarkerFor(n.client, n.marker, "")}
	}
	return n.calls.run(ctx, nil, probeScript, check, keys).Err()
}

// ClockOffset is the node's clock minus this process's wall clock, read
// from the TIME that rides along with its calls (the reading of the
// shortest recent round trip, and that round trip); false when there is
// none: the node's clock is not read on a Cluster or Ring.
func (n *Node) ClockOffset() (offset, trip time.Duration, ok bool) {
	return n.calls.clock.offset()
}
