package chaos

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest/faultproxy"
	"github.com/quorumlock/redlock/redlocktest/workload"
)

// oneWay is a fault on one direction of a link.
type oneWay int

const (
	heldRequests oneWay = iota // the client's commands wait, the node's answers flow
	heldReplies                // the commands run, their answers wait
	slowRequests               // the client's commands arrive late (a one-way delay)
	oneWayKinds
)

func (f oneWay) String() string {
	return [...]string{"requests held", "replies held", "requests delayed"}[f]
}

// linkFault is the one-way fault a client is under, on a minority of its links.
type linkFault struct {
	kind  oneWay
	nodes []int
	delay time.Duration // slowRequests
	ticks int           // left before it is lifted
}

func (f linkFault) apply(proxies []*faultproxy.Proxy, on bool) {
	for _, i := range f.nodes {
		switch f.kind {
		case heldRequests:
			proxies[i].HoldRequests(on)
		case heldReplies:
			proxies[i].HoldReplies(on)
		case slowRequests:
			if on {
				proxies[i].SetRequestLatency(f.delay)
			} else {
				proxies[i].SetRequestLatency(0)
			}
		}
	}
}

// One-way faults on a minority of each client's links: a link that is slow
// in one direction only, so that the client's votes split between nodes
// that answer now and nodes that hear it late. Three clients contend in
// every mode; each is always under one fault on one or two of its five
// links (never a majority), for 150 ms to 900 ms (past the 800 ms TTL now
// and then), and then under the next kind:
//   - its requests held while the other clients' go through: its acquire
//     on those nodes loses the race to another client's, or wins a node
//     the others then miss; the call times out, and when the hold is
//     lifted the held commands run late and in order — an acquire after
//     the lock moved on, a release after the next grant, a fencing
//     write-back after the next round;
//   - its replies held: the commands run at once, the answers arrive after
//     the client gave up on them;
//   - a one-way delay of 50 ms to 250 ms on its requests: commands run
//     late (beyond the 100 ms node timeout about two times in three) while
//     their replies come straight back.
//
// Every mode is fenced, so the checker also sees whether a grant's token
// ever falls below an earlier one's.
func TestOneWayFaults(t *testing.T) {
	c := newCluster(t, setup{clients: 3, nodeTimeout: 100 * time.Millisecond,
		options: []redlock.Option{redlock.WithTTL(800 * time.Millisecond)}})
	var injected [oneWayKinds]int
	r := c.run(5*time.Second, workload.Config{}, func(ctx context.Context) {
		faults := make([]linkFault, len(c.clients))
		for k := range faults {
			faults[k].kind = oneWay(k) // every kind at once from the start
			faults[k].ticks = -1       // nothing to lift yet
		}
		every(ctx, 150*time.Millisecond, func(int) {
			for k := range faults {
				f := &faults[k]
				if f.ticks > 0 {
					f.ticks--
					continue
				}
				if f.ticks == 0 {
					f.apply(c.proxies[k], false) // what was held goes through now, late
					f.kind = (f.kind + 1) % oneWayKinds
				}
				*f = linkFault{kind: f.kind, nodes: pick(1 + rand.IntN(2)),
					delay: time.Duration(50+rand.IntN(201)) * time.Millisecond, ticks: rand.IntN(6)}
				f.apply(c.proxies[k], true)
				injected[f.kind]++
				c.faults.Add(int64(len(f.nodes)))
			}
		})
	})
	t.Logf("one-way faults: %d with requests held, %d with replies held, %d with requests delayed (each on 1 or 2 links of a client)",
		injected[heldRequests], injected[heldReplies], injected[slowRequests])
	for kind, n := range injected {
		if n == 0 {
			t.Errorf("no fault of kind %v", oneWay(kind))
		}
	}
	c.requireSafe(r, 100)
}
