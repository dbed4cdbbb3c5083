package leases

import (
	"context"
	"sync"

	"github.com/quorumlock/redlock/internal/core"
)

// Gates line up, within one Client, the owners that contend for one lock:
// only the owner at the head contends on the nodes (or holds the lock); the
// others wait here, in arrival order, and the head's Unlock hands over
// without a Pub/Sub round trip. Sixteen goroutines of one process thus
// cost the nodes what one contender costs, and never split a vote among
// themselves. The owner at the head passes straight through again, so
// reentrancy is unaffected.
type Gates struct {
	mu     sync.Mutex
	byName map[string]*gate
}

type gate struct {
	owner   string        // "" when free
	entries int           // of owner: attempts in progress and live leases
	line    []*gateWaiter // the owners waiting, in arrival order
}

type gateWaiter struct {
	owner string
	ready chan struct{} // closed when the gate passes to this waiter
}

// Enter takes the gate of lock for owner. With wait false it fails at once
// when another owner is at the head; otherwise it waits until its turn,
// ctx ends or the Client closes. Each successful Enter is matched by one
// leave.
func (g *Gates) Enter(ctx context.Context, closed <-chan struct{}, lock, owner string, wait bool) error {
	g.mu.Lock()
	if g.byName == nil {
		g.byName = make(map[string]*gate)
	}
	gt := g.byName[lock]
	if gt == nil {
		gt = &gate{}
		g.byName[lock] = gt
	}
	if gt.owner == "" || gt.owner == owner {
		gt.owner = owner
		gt.entries++
		g.mu.Unlock()
		return nil
	}
	if !wait {
		g.mu.Unlock()
		return errGateBusy
	}
	waiter := &gateWaiter{owner: owner, ready: make(chan struct{})}
	gt.line = append(gt.line, waiter)
	g.mu.Unlock()

	var err error
	select {
	case <-waiter.ready:
		return nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-closed:
		err = core.ErrClosed
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-waiter.ready:
		// Handed the gate just as we gave up: pass it on.
		g.exitLocked(lock)
	default:
		for i, other := range gt.line {
			if other == waiter {
				gt.line = append(gt.line[:i], gt.line[i+1:]...)
				break
			}
		}
	}
	return err
}

// Exit gives back one entry of the owner at the head; the last one passes
// the gate to the next owner in line (with every queued entry of that
// owner) or frees it.
func (g *Gates) Exit(lock string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.exitLocked(lock)
}

func (g *Gates) exitLocked(lock string) {
	gt := g.byName[lock]
	if gt == nil || gt.entries == 0 {
		return
	}
	gt.entries--
	if gt.entries > 0 {
		return
	}
	if len(gt.line) == 0 {
		delete(g.byName, lock)
		return
	}
	gt.owner = gt.line[0].owner
	rest := gt.line[:0]
	for _, waiter := range gt.line {
		if waiter.owner == gt.owner {
			gt.entries++
			close(waiter.ready)
		} else {
			rest = append(rest, waiter)
		}
	}
	gt.line = rest
}

// errGateBusy: another owner of this Client is acquiring or holding the lock.
var errGateBusy = core.ErrNotAcquired
