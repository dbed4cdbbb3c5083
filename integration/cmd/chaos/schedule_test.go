package main

import (
	"slices"
	"testing"
	"time"

	"github.com/quorumlock/redlock/integration/internal/nodes"
)

// The schedule must be a function of the seed alone (-seed replays it),
// and keep the promises that make its faults safe: a minority faulty at a
// time, killed and stopped nodes down for longer than the TTL, every
// fault healed before the end.
func TestPlan_replayableAndSafe(t *testing.T) {
	const d, n, ttl = 60 * time.Second, 5, time.Second
	for seed := range uint64(50) {
		events := plan(seed, d, n, ttl)
		if !slices.Equal(events, plan(seed, d, n, ttl)) {
			t.Fatalf("seed %d: two plans differ", seed)
		}
		if len(events) < 20 {
			t.Fatalf("seed %d: only %d events in %v", seed, len(events), d)
		}
		faultySince := map[int]time.Duration{}
		kinds := map[nodes.Kind]bool{}
		for _, e := range events {
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
				kinds[e.kind] = true
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
		if len(kinds) != len(nodes.Kinds) {
			t.Fatalf("seed %d: only kinds %v", seed, kinds)
		}
	}
	if slices.Equal(plan(1, d, n, ttl), plan(2, d, n, ttl)) {
		t.Fatal("seeds 1 and 2 give the same plan")
	}
}
