package main

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/quorumlock/redlock/integration/internal/nodes"
)

// event is one step of the fault schedule: at offset at, node goes under
// kind, or is healed of it; or, for a link fault (link set, kind empty),
// Client client's link to node does.
type event struct {
	at     time.Duration
	node   int
	kind   nodes.Kind
	link   linkKind
	client int
	delay  time.Duration // delayRequests
	heal   bool
}

// Bounds of the random schedule.
const (
	firstFault = time.Second            // the workload warms up first
	settle     = 2 * time.Second        // every fault is healed this long before the end
	minGap     = 300 * time.Millisecond // between two fault starts
	maxGap     = 1500 * time.Millisecond
	minBlip    = 300 * time.Millisecond // pause and disconnect length
	maxBlip    = 2500 * time.Millisecond
	minExtra   = 200 * time.Millisecond // kill and restart: down for TTL plus this much
	maxExtra   = 1500 * time.Millisecond
	minDelay   = 20 * time.Millisecond // delayRequests, around the 100 ms node timeout
	maxDelay   = 300 * time.Millisecond
)

// plan draws the fault schedule of a run of length d over n nodes and
// clients Clients from seed alone, so that -seed replays it. The faults
// are the safe ones: at most a minority ((n-1)/2) of the nodes is faulty at
// any time, counting a node whose link to one Client is under a one-way
// fault as faulty, and a node killed or stopped stays down for longer than
// the TTL before it comes back empty, as the first assumption in docs/safety.md asks
// (an empty node back at once can complete a quorum for a second owner).
// Each fault hits a node that is healthy then, and heals before d - settle.
// Node faults and link faults are drawn alike, one kind of the seven at a
// time.
func plan(seed uint64, d time.Duration, n, clients int, ttl time.Duration) []event {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	between := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(rng.Int64N(int64(hi-lo)+1)) }
	var spans []span
	var events []event
	end := d - settle
	for at := firstFault; ; at += between(minGap, maxGap) {
		if at >= end {
			break
		}
		var e event
		if k := rng.IntN(len(nodes.Kinds) + len(linkKinds)); k < len(nodes.Kinds) {
			e.kind = nodes.Kinds[k]
		} else {
			e.link = linkKinds[k-len(nodes.Kinds)]
			e.client = rng.IntN(clients)
			if e.link == delayRequests {
				e.delay = between(minDelay, maxDelay).Round(time.Millisecond)
			}
		}
		length := between(minBlip, maxBlip)
		if e.kind == nodes.Kill || e.kind == nodes.Restart {
			length = ttl + between(minExtra, maxExtra)
		}
		healthy := healthyAt(spans, n, at)
		if n-len(healthy) >= (n-1)/2 || at+length > end {
			continue
		}
		e.node = healthy[rng.IntN(len(healthy))]
		spans = append(spans, span{node: e.node, from: at, to: at + length})
		e.at = at
		healed := e
		healed.at, healed.heal = at+length, true
		events = append(events, e, healed)
	}
	// In time order; at equal times heals first, so the minority bound
	// holds at every step.
	slices.SortStableFunc(events, func(a, b event) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		return cmp.Compare(boolInt(!a.heal), boolInt(!b.heal))
	})
	return events
}

// span is a node's fault from its start to its heal.
type span struct {
	node     int
	from, to time.Duration
}

// healthyAt lists the nodes of n that no span covers at at.
func healthyAt(spans []span, n int, at time.Duration) []int {
	busy := make([]bool, n)
	for _, s := range spans {
		if s.from <= at && at < s.to {
			busy[s.node] = true
		}
	}
	var healthy []int
	for i := range n {
		if !busy[i] {
			healthy = append(healthy, i)
		}
	}
	return healthy
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// execute runs the schedule from start, one event at a time: node faults
// on cl, link faults on lk. Each heal of a node returns only once the node
// answers again, so the events keep their planned order even when Docker
// is slow, and with it the minority bound; a link heals at once. It stops
// early, without error, when ctx ends. It returns how many faults it
// injected.
func execute(ctx context.Context, cl *nodes.Cluster, lk *links, events []event, start time.Time, say func(string, ...any)) (int, error) {
	faults := 0
	for _, e := range events {
		if !sleepUntil(ctx, start.Add(e.at)) {
			return faults, nil
		}
		var err error
		switch {
		case e.link != "" && e.heal:
			lk.heal(e.client, e.node)
		case e.link != "":
			err = lk.inject(e.client, e.node, e.link, e.delay)
		case e.heal:
			err = cl.Heal(ctx, e.node)
		default:
			err = cl.Inject(ctx, e.node, e.kind)
		}
		if ctx.Err() != nil {
			return faults, nil
		}
		if err != nil {
			return faults, fmt.Errorf("fault schedule at +%v: %w", e.at, err)
		}
		if !e.heal {
			faults++
		}
		say("+%5.1fs  %-22s node %d%s  (%d faulty)", time.Since(start).Seconds(), e.verb(), e.node+1, e.whose(), faultyNow(cl, lk))
	}
	return faults, nil
}

// verb says what the event does to the node or link.
func (e event) verb() string {
	switch {
	case e.link == delayRequests && !e.heal:
		return fmt.Sprintf("%s %v", e.link, e.delay)
	case e.link != "" && !e.heal:
		return string(e.link)
	case e.link == holdRequests:
		return "release requests"
	case e.link == holdReplies:
		return "release replies"
	case e.link == delayRequests:
		return "undelay requests"
	case !e.heal && e.kind == nodes.Restart:
		return "stop (restart)"
	case !e.heal:
		return string(e.kind)
	case e.kind == nodes.Pause:
		return "unpause"
	case e.kind == nodes.Disconnect:
		return "reconnect"
	}
	return "start (" + string(e.kind) + ")"
}

// whose names the Client of a link fault.
func (e event) whose() string {
	if e.link == "" {
		return ""
	}
	return fmt.Sprintf(", link of client %d", e.client+1)
}

// faultyNow counts the nodes under a fault: their own, or one on a link to them.
func faultyNow(cl *nodes.Cluster, lk *links) int {
	faulty := 0
	for i := range cl.N() {
		if cl.Fault(i) != "" || lk != nil && lk.faulty(i) {
			faulty++
		}
	}
	return faulty
}

// sleepUntil waits for t; false when ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}
