package main

import (
	"slices"
	"testing"
	"time"

	"github.com/quorumlock/redlock/integration/internal/nodes"
)

// The schedule must be a function of the seed alone (-seed replays it),
// and keep the promises that make its faults safe: a minority faulty at a
// time (a node with a faulty link counts), killed and stopped nodes down
// for longer than the TTL, every fault healed before the end. Every kind
// of fault, on nodes and on links, is drawn.
func TestPlan_replayableAndSafe(t *testing.T) {
	const d, n, clients, ttl = 60 * time.Second, 5, 4, time.Second
	for seed := range uint64(50) {
		events := plan(seed, d, n, clients, ttl)
		if !slices.Equal(events, plan(seed, d, n, clients, ttl)) {
			t.Fatalf("seed %d: two plans differ", seed)
		}
		if len(events) < 20 {
			t.Fatalf("seed %d: only %d events in %v", seed, len(events), d)
		}
		faultySince := map[int]time.Duration{}
		injected := map[int]event{}
		kinds := map[string]bool{}
		for _, e := range events {
			if (e.kind == "") == (e.link == "") {
				t.Fatalf("seed %d: %+v: not one node fault or one link fault", seed, e)
			}
			if e.link != "" && (e.client < 0 || e.client >= clients) {
				t.Fatalf("seed %d: %+v: no such client", seed, e)
			}
			if e.link == delayRequests && !e.heal && (e.delay < minDelay || e.delay > maxDelay) {
				t.Fatalf("seed %d: %+v: delay out of bounds", seed, e)
			}
			if first, ok := injected[e.node]; ok && e.heal && (first.kind != e.kind || first.link != e.link || first.client != e.client) {
				t.Fatalf("seed %d: %+v heals %+v", seed, e, first)
			}
			injected[e.node] = e
			since, faulty := faultySince[e.node]
			switch {
			case e.heal && !faulty, !e.heal && faulty:
				t.Fatalf("seed %d: %+v: node %d faulty=%v", seed, e, e.node, faulty)
			case e.heal && (e.kind == nodes.Kill || e.kind == nodes.Restart) && e.at-since <= ttl:
				t.Fatalf("seed %d: node %d back after %v, not longer than the TTL", seed, e.node, e.at-since)
			case e.heal:
				delete(faultySince, e.node)
			default:
				faultySince[e.node] = e.at
				kinds[string(e.kind)+string(e.link)] = true
			}
			if len(faultySince) > (n-1)/2 {
				t.Fatalf("seed %d: %d nodes faulty at %v", seed, len(faultySince), e.at)
			}
			if e.at > d-settle {
				t.Fatalf("seed %d: event at %v, after %v", seed, e.at, d-settle)
			}
		}
		if len(faultySince) != 0 {
			t.Fatalf("seed %d: nodes left faulty: %v", seed, faultySince)
		}
		if len(kinds) != len(nodes.Kinds)+len(linkKinds) {
			t.Fatalf("seed %d: only kinds %v", seed, kinds)
		}
	}
	if slices.Equal(plan(1, d, n, clients, ttl), plan(2, d, n, clients, ttl)) {
		t.Fatal("seeds 1 and 2 give the same plan")
	}
}
