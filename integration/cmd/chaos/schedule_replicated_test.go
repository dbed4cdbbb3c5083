package main

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/quorumlock/redlock/integration/internal/nodes"
)

// The replicated schedule too is a function of the seed alone, and keeps
// its promises: one member of three faulty at a time, counting a member
// for the TTL after the heal of a fault whose old master may have granted
// beside its successor; a failover after a cut kills the master of the
// member it cut; every fault healed before the end. Every kind is drawn,
// and the first fault is a failover after a cut.
func TestPlanReplicated_replayableAndSafe(t *testing.T) {
	const d, n, clients, ttl = 60 * time.Second, 3, 4, time.Second
	kinds := map[string]bool{}
	for seed := range uint64(50) {
		events := planReplicated(seed, d, n, clients, ttl)
		if !slices.Equal(events, planReplicated(seed, d, n, clients, ttl)) {
			t.Fatalf("seed %d: two plans differ", seed)
		}
		if countFaults(events) < 5 {
			t.Fatalf("seed %d: only %d faults in %v", seed, countFaults(events), d)
		}
		if len(events) < 2 || events[0].fault != nodes.Cut || !events[1].step {
			t.Fatalf("seed %d: the first fault is not a failover after a cut: %+v", seed, events[:min(2, len(events))])
		}
		checkReplicated(t, seed, events, d, ttl, kinds)
	}
	if len(kinds) != len(memberChoices) {
		t.Fatalf("kinds drawn: %v, of %d", kinds, len(memberChoices))
	}
	if slices.Equal(planReplicated(1, d, n, clients, ttl), planReplicated(2, d, n, clients, ttl)) {
		t.Fatal("seeds 1 and 2 give the same plan")
	}
}

// checkReplicated checks one plan, and notes the kinds it draws.
func checkReplicated(t *testing.T, seed uint64, events []memberEvent, d, ttl time.Duration, kinds map[string]bool) {
	t.Helper()
	var open *memberEvent    // the fault in place
	var freeAt time.Duration // when the member last healed counts as healthy
	var killAt time.Duration // a failover's kill
	for _, e := range events {
		switch {
		case e.at > d-settle:
			t.Fatalf("seed %d: %+v after %v", seed, e, d-settle)
		case e.heal && (open == nil || open.member != e.member || open.fault != e.fault || open.link != e.link || open.client != e.client):
			t.Fatalf("seed %d: %+v heals %+v", seed, e, open)
		case e.heal:
			if e.fault == nodes.Failover && e.at-killAt < minFailover {
				t.Fatalf("seed %d: %+v: healed %v after the kill", seed, e, e.at-killAt)
			}
			kind := fmt.Sprint(e.fault, e.link)
			if open.step {
				kind = "cut, failover"
			}
			kinds[kind] = true
			freeAt, open = e.at, nil
			if e.fault.Split() {
				freeAt += ttl
			}
		case e.step && (open == nil || open.fault != nodes.Cut || open.member != e.member || e.fault != nodes.Failover):
			t.Fatalf("seed %d: %+v does not follow its cut (%+v)", seed, e, open)
		case e.step:
			open, killAt = &e, e.at
		case open != nil || e.at < freeAt:
			t.Fatalf("seed %d: %+v while %+v or before %v", seed, e, open, freeAt)
		default:
			open, killAt = &e, e.at
		}
	}
	if open != nil {
		t.Fatalf("seed %d: left faulty: %+v", seed, open)
	}
}
