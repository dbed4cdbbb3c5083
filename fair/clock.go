package fair

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
)

// clockRefresh is how long a measured offset to the nodes' clocks is used
// before it is measured again: clocks drift by milliseconds a minute at
// worst, far less than the spacing of waiters that queue order cares about.
const clockRefresh = 30 * time.Second

// Clock tells the time on the nodes' clocks, so that tickets order waiters
// by their arrival as the nodes see it: a process whose own clock is off
// by seconds is still served in arrival order. It measures the offset
// between the local clock and each node's (TIME, halfway through the round
// trip) and uses the median over the nodes that answered, measured again
// every clockRefresh. The zero Clock is ready to use; it is safe for
// concurrent use.
type Clock struct {
	// Local is the process's clock (nil: time.Now); tests replace it.
	Local func() time.Time

	mu       sync.Mutex
	offset   time.Duration // nodes' clock - local clock
	measured time.Time     // local time of the last measurement; zero: never
}

// Now is the current time on the nodes' clocks, measuring the offset over
// q's nodes first when it is due (each call bounded by q.NodeTimeout). If
// no node answers, the last offset (at first: none) is used.
func (c *Clock) Now(ctx context.Context, q *Queue) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	local := c.local()
	if c.measured.IsZero() || local.Sub(c.measured) >= clockRefresh {
		if offset, ok := c.measure(ctx, q); ok {
			c.offset = offset
		}
		c.measured = local
		local = c.local()
	}
	return local.Add(c.offset)
}

func (c *Clock) local() time.Time {
	if c.Local != nil {
		return c.Local()
	}
	return time.Now()
}

// readings is how many times measure reads each node's clock, one after
// another, keeping the reading of the shortest round trip: an offset is
// off by at most half the round trip it was read in, and one reading can
// be held up (a stalled goroutine, a busy sender) on its way out.
const readings = 3

// measure reads every node's clock at once and returns the median offset
// over the first majority of nodes to answer (or over all that answered,
// when fewer did): a paused node does not hold it up.
func (c *Clock) measure(ctx context.Context, q *Queue) (time.Duration, bool) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	var offsets []time.Duration
	enough := make(chan struct{})
	majority := len(q.Nodes)/2 + 1
	var group errgroup.Group
	for i := range q.Nodes {
		group.Go(func() error {
			ctx, cancel := context.WithTimeout(ctx, q.NodeTimeout)
			defer cancel()
			offset, ok := c.read(ctx, q, i)
			if !ok {
				return nil
			}
			mu.Lock()
			offsets = append(offsets, offset)
			if len(offsets) == majority {
				close(enough)
			}
			mu.Unlock()
			return nil
		})
	}
	all := make(chan struct{})
	waitAll := func() {
		_ = group.Wait() // failures went to OnError
		close(all)
	}
	if q.Background != nil {
		q.Background.Go(waitAll)
	} else {
		go waitAll()
		defer func() {
			cancel() // the calls still out end with their ctx, but a node's sender
			<-all
		}()
	}
	// A call still out when a majority answered may be its node's sender,
	// which waits for the reply up to the node timeout: it is left to
	// Background.
	select {
	case <-enough:
	case <-all:
	}
	mu.Lock()
	defer mu.Unlock()
	if len(offsets) == 0 {
		return 0, false
	}
	measured := slices.Clone(offsets)
	slices.Sort(measured)
	return measured[len(measured)/2], true
}

// read returns node i's offset from the best of up to readings readings
// of its clock (the one of the shortest round trip), and false when none
// succeeded.
func (c *Clock) read(ctx context.Context, q *Queue, i int) (time.Duration, bool) {
	clockOnly := q.Keys
	clockOnly.Guard = 0 // only the clock is read: a node that lost its data has one
	var best, bestTrip time.Duration
	ok := false
	for range readings {
		// The node's recent calls (the Client's warm-up, or the read
		// before) read its clock already: no call needed.
		if offset, _, known := q.Nodes[i].ClockOffset(); known && c.Local == nil {
			return offset, true
		}
		sent := c.local()
		fence, err := q.Nodes[i].ReadFence(ctx, clockOnly)
		if err != nil {
			if !ok && q.OnError != nil && !errors.Is(err, context.Canceled) {
				q.OnError(i, err)
			}
			break
		}
		received := c.local()
		trip := received.Sub(sent)
		if !ok || trip < bestTrip {
			best, bestTrip, ok = fence.Clock.Sub(sent.Add(trip/2)), trip, true
		}
	}
	return best, ok
}
