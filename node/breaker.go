package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// ErrNotSent marks a call that never left the client: the node is down
// (see breaker), or the caller gave up while the call waited its turn. Its
// fate is known: it did not run.
var ErrNotSent = errors.New("not sent")

// Unknown reports whether err leaves the call's fate unknown: it may have
// run on the node, or may still run there (a timeout, a broken
// connection). A call that was answered, or never sent, is not unknown.
func Unknown(err error) bool {
	return !Answered(err) && !errors.Is(err, ErrNotSent)
}

const (
	// breakerThreshold is how many sends in a row must fail without an
	// answer before the node counts as down. One: each Client learns it on
	// its own, at the cost of a node timeout, and a hiccup costs little
	// (the prober pings at once, and the first answer closes the breaker).
	breakerThreshold = 1
	// probeInterval is how long the prober waits between pings to a node
	// that is down: short against a lease's life, so a node that comes back
	// votes again within it, and long against a round trip, so a dead node
	// costs almost nothing. Each ping may wait probeTimeout for its answer,
	// so a node far away, or one that resumes, is back at its first answer.
	probeInterval = 250 * time.Millisecond
	// minSilence is how long a send must have waited for its deadline
	// before the timeout says something of the node: a caller whose
	// deadline was microseconds away learns nothing about it.
	minSilence = 50 * time.Millisecond
)

// breaker remembers that a node fails every call without answering (it is
// dead, paused or cut off), so that calls to it fail at once, not sent,
// instead of each waiting for its timeout: a round decides on the other
// nodes' answers at once, and nothing queues behind a dead node. While it
// is open a prober pings the node every probeInterval; the first answer
// (to a ping or to a call already in flight) closes it.
type breaker struct {
	ping   func(ctx context.Context) error // PING the node
	timing timing                          // the node's learned round trip

	mu       sync.Mutex
	failures int   // sends in a row that failed without an answer
	last     error // the last of those failures
	since    time.Time
	probing  bool
	stop     context.Context // cancelled by close: the prober returns
	halt     context.CancelFunc
	stopped  bool
	probes   sync.WaitGroup
}

// allow returns nil when a call may go out, or why it may not.
func (b *breaker) allow() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.failures < breakerThreshold {
		return nil
	}
	return fmt.Errorf("%w: the node did not answer its last %d calls since %s (last: %v); pinged every %v",
		ErrNotSent, b.failures, b.since.Format("15:04:05.000"), b.last, probeInterval)
}

// record takes the outcome of one send (a lone call, a pipeline or a
// ping) that waited for its answer for waited: answered when the node
// replied to any call of it.
func (b *breaker) record(answered bool, err error, waited time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if answered {
		b.failures, b.last = 0, nil
		b.timing.observe(waited)
		return
	}
	if timedOut(err) && waited < minSilence {
		return // the caller's deadline was too close to tell
	}
	if b.failures == 0 {
		b.since = time.Now()
	}
	b.failures++
	b.last = err
	if b.failures >= breakerThreshold && !b.probing && !b.stopped && b.ping != nil {
		b.probing = true
		if b.stop == nil {
			b.stop, b.halt = context.WithCancel(context.Background())
		}
		b.probes.Go(b.probe)
	}
}

// probe pings the node at once, then every probeInterval, until it
// answers or the breaker is closed for good.
func (b *breaker) probe() {
	ticker := time.NewTicker(probeInterval)
	defer ticker.Stop()
	for first := true; ; first = false {
		b.mu.Lock()
		stop, down := b.stop, b.failures >= breakerThreshold
		if !down {
			b.probing = false
		}
		b.mu.Unlock()
		if !down {
			return
		}
		if !first {
			select {
			case <-stop.Done():
				b.mu.Lock()
				b.probing = false
				b.mu.Unlock()
				return
			case <-ticker.C:
			}
		}
		ctx, cancel := context.WithTimeout(stop, b.timing.probeTimeout())
		sent := time.Now()
		err := b.ping(ctx)
		cancel()
		b.record(Answered(err), err, time.Since(sent))
	}
}

// close stops the prober for good and waits for it.
func (b *breaker) close() {
	b.mu.Lock()
	if !b.stopped {
		b.stopped = true
		if b.halt != nil {
			b.halt()
		}
	}
	b.mu.Unlock()
	b.probes.Wait()
}

// timedOut reports whether err is a deadline running out, the context's or
// the connection's (go-redis sets the socket deadline from the context).
func timedOut(err error) bool {
	var netErr net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout())
}
