package main

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/quorumlock/redlock/integration/internal/harness"
	"github.com/quorumlock/redlock/integration/internal/nodes"
)

// memberEvent is one step of the replicated topology's fault schedule: at
// offset at, member goes under fault, or is healed of it; or, for a link
// fault (link set, fault empty), Client client's link to the member's
// master does. step marks the kill of a failover after a cut: one fault
// with its cut.
type memberEvent struct {
	at     time.Duration
	member int
	fault  nodes.Fault
	link   linkKind
	client int
	delay  time.Duration // delayRequests
	step   bool
	heal   bool
}

// choice is a kind of fault the replicated schedule draws, and its weight.
type choice struct {
	fault  nodes.Fault
	cut    bool // a Failover after cutting the replica's link
	link   linkKind
	weight int
}

// memberChoices: half the draws are failovers, most of them after a cut,
// where the promoted replica lacks grants its master made (the first).
var memberChoices = []choice{
	{fault: nodes.Failover, cut: true, weight: 3},
	{fault: nodes.Failover, weight: 2},
	{fault: nodes.ManualFailover, weight: 2},
	{fault: nodes.PauseMaster, weight: 1},
	{fault: nodes.DisconnectMaster, weight: 1},
	{fault: nodes.KillReplica, weight: 1},
	{fault: nodes.Cut, weight: 1},
	{link: holdRequests, weight: 1},
	{link: holdReplies, weight: 1},
	{link: delayRequests, weight: 1},
}

// Bounds of the replicated schedule, beside plan's.
const (
	minFailover   = 3 * time.Second // kill to heal: Sentinel promotes 2 to 3 s after the kill
	maxFailover   = 5 * time.Second
	minLead       = 200 * time.Millisecond // cut to kill: the grants the replica misses
	maxLead       = 1500 * time.Millisecond
	healAllowance = 2 * time.Second // a heal's restart and sync, kept on the plan's clock
)

// planReplicated draws the fault schedule of a run of length d over n
// members and clients Clients from seed alone, so that -seed replays it.
// As plan's, the faults are the safe ones: a minority ((n-1)/2, one of
// three) of the members is faulty at any time, counting a member whose
// master's link to one Client is under a one-way fault, and a member
// whose old master may have granted beside its successor (Fault.Split)
// stays faulty for the TTL after its heal, until those grants have ended.
// Each fault heals before d - settle. The first is always a failover
// after a cut, so that every run has one.
func planReplicated(seed uint64, d time.Duration, n, clients int, ttl time.Duration) []memberEvent {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	total := 0
	for _, c := range memberChoices {
		total += c.weight
	}
	var spans []span
	var events []memberEvent
	end := d - settle
	for at := firstFault; at < end; at += randBetween(rng, minGap, maxGap) {
		c, pick := memberChoices[0], rng.IntN(total)
		for _, c = range memberChoices {
			if pick -= c.weight; pick < 0 || len(spans) == 0 {
				break // the first fault of every run is a failover after a cut
			}
		}
		drawn, length := c.draw(rng, clients, ttl)
		healthy := healthyAt(spans, n, at)
		if n-len(healthy) >= (n-1)/2 || at+length > end {
			continue
		}
		member := healthy[rng.IntN(len(healthy))]
		spans = append(spans, span{node: member, from: at, to: at + length})
		for _, e := range drawn {
			e.at += at
			e.member = member
			events = append(events, e)
		}
	}
	// Faults never overlap on a member; at equal times heals go first.
	slices.SortStableFunc(events, func(a, b memberEvent) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		return cmp.Compare(boolInt(!a.heal), boolInt(!b.heal))
	})
	return events
}

// randBetween draws a duration in [lo, hi].
func randBetween(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
}

// draw makes c's events from offset 0 (the heal last) and how long the
// member counts as faulty: to the heal, plus healAllowance where the heal
// restarts or repoints a redis-server, plus the TTL where an old master
// may have granted beside its successor.
func (c choice) draw(rng *rand.Rand, clients int, ttl time.Duration) ([]memberEvent, time.Duration) {
	first := memberEvent{fault: c.fault, link: c.link}
	var events []memberEvent
	var length, extra time.Duration
	switch {
	case c.link != "":
		first.client = rng.IntN(clients)
		if c.link == delayRequests {
			first.delay = randBetween(rng, minDelay, maxDelay).Round(time.Millisecond)
		}
		length = randBetween(rng, minBlip, maxBlip)
	case c.fault == nodes.Failover && c.cut:
		lead := randBetween(rng, minLead, maxLead)
		events = append(events, memberEvent{fault: nodes.Cut})
		first.at, first.step = lead, true
		length, extra = lead+randBetween(rng, minFailover, maxFailover), healAllowance
	case c.fault == nodes.Failover, c.fault == nodes.ManualFailover:
		length, extra = randBetween(rng, minFailover, maxFailover), healAllowance
	case c.fault == nodes.KillReplica:
		length, extra = randBetween(rng, time.Second, 3*time.Second), healAllowance
	default: // pause, disconnect, cut: blips
		length, extra = randBetween(rng, minBlip, maxBlip), healAllowance
	}
	if c.fault.Split() {
		extra += ttl
	}
	healed := first
	healed.at, healed.heal, healed.step = length, true, false
	return append(events, first, healed), length + extra
}

// countFaults counts the faults of a schedule: a cut and its failover are one.
func countFaults(events []memberEvent) int {
	n := 0
	for _, e := range events {
		if !e.heal && !e.step {
			n++
		}
	}
	return n
}

// memberRun runs the replicated schedule: member faults on rep, link
// faults on lk, on the link to the member's master when injected.
type memberRun struct {
	rep *nodes.Replicated
	lk  *links
	say func(string, ...any)

	mu     sync.Mutex
	linked map[[2]int]int // (client, member) -> the redis-server (index in Data) whose link is faulty
}

// execute runs events from start, one at a time, as execute does for the
// plain topology: each heal returns once its member is whole again, so
// the events keep their planned order. It returns how many faults it
// injected.
func (x *memberRun) execute(ctx context.Context, events []memberEvent, start time.Time) (int, error) {
	faults := 0
	for _, e := range events {
		if !sleepUntil(ctx, start.Add(e.at)) {
			return faults, nil
		}
		note, err := x.apply(ctx, e)
		if ctx.Err() != nil {
			return faults, nil
		}
		if err != nil {
			return faults, fmt.Errorf("fault schedule at +%v: %w", e.at, err)
		}
		if !e.heal && !e.step {
			faults++
		}
		x.say("+%5.1fs  %-24s member %d%s  (%d faulty)%s", time.Since(start).Seconds(), e.verb(), e.member+1,
			event{link: e.link, client: e.client}.whose(), x.faulty(), note)
	}
	return faults, nil
}

// apply runs one event; note says how far behind the replica of a
// failover after a cut was.
func (x *memberRun) apply(ctx context.Context, e memberEvent) (note string, err error) {
	key := [2]int{e.client, e.member}
	switch {
	case e.link != "" && e.heal:
		x.mu.Lock()
		c := x.linked[key]
		delete(x.linked, key)
		x.mu.Unlock()
		x.lk.heal(e.client, c)
	case e.link != "":
		c, err := x.rep.Master(ctx, e.member)
		if err == nil {
			err = x.lk.inject(e.client, c, e.link, e.delay)
		}
		if err != nil {
			return "", err
		}
		x.mu.Lock()
		x.linked[key] = c
		x.mu.Unlock()
	case e.heal:
		split := x.rep.Fault(e.member).Split()
		if err := x.rep.Heal(ctx, e.member); err != nil || !split {
			return "", err
		}
		// The old master is a replica now; what it granted beside its
		// successor ends within the TTL, before another member's fault.
		return "", harness.Sleep(ctx, harness.TTL)
	case e.step:
		behind, err := x.rep.Behind(ctx, e.member)
		if err != nil {
			return "", err
		}
		note = fmt.Sprintf(": its replica, promoted next, is %d bytes of writes behind", behind)
		return note, x.rep.Inject(ctx, e.member, e.fault)
	default:
		return "", x.rep.Inject(ctx, e.member, e.fault)
	}
	return "", nil
}

// faulty counts the members under a fault: their own, or one on a link
// to either of their redis-servers.
func (x *memberRun) faulty() int {
	n := 0
	for i := range x.rep.N() {
		if x.rep.Fault(i) != "" || x.lk.faulty(2*i) || x.lk.faulty(2*i+1) {
			n++
		}
	}
	return n
}

// verb says what the event does to the member or link.
func (e memberEvent) verb() string {
	if e.link != "" {
		return event{link: e.link, delay: e.delay, heal: e.heal}.verb()
	}
	switch {
	case !e.heal && e.fault == nodes.Failover:
		return "kill master (failover)"
	case !e.heal:
		return string(e.fault)
	case e.fault == nodes.Failover:
		return "old master back, replica"
	case e.fault == nodes.ManualFailover:
		return "old master a replica"
	case e.fault == nodes.PauseMaster:
		return "unpause master"
	case e.fault == nodes.DisconnectMaster:
		return "reconnect master"
	case e.fault == nodes.KillReplica:
		return "start replica"
	}
	return "reconnect replication"
}
