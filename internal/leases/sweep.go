package leases

import (
	"context"
	"sync"
	"time"

	"github.com/quorumlock/redlock/node"
)

const (
	// sweepFirstRetry and sweepLastRetry bound the wait between tries of a
	// release that a node did not answer: soon after a short outage, and
	// no more than one call per node per two seconds during a long one.
	sweepFirstRetry = 50 * time.Millisecond
	sweepLastRetry  = 2 * time.Second
	// maxSweepsPerNode bounds the releases kept for one silent node; past
	// it the oldest are dropped (and logged): their holds expire at the TTL.
	maxSweepsPerNode = 10_000
)

// Sweeper retries, until the node answers, every release that a node did
// not answer: a grant that may have landed there (a paused node that runs
// the acquire when it resumes, on a connection the client gave up on) is
// released once the node answers again, whatever client the node has. The
// retries leave a tombstone (release.lua), so an acquire that arrives after
// its release is refused. One goroutine per node with work, owned by the
// Client: it stops at Close.
type Sweeper struct {
	client *Runtime

	mu      sync.Mutex
	pending map[int][]sweep // by node, oldest first
	running map[int]bool    // a goroutine drains the node's list
}

// sweep is one release to retry; when leaving (may be nil) holds once it
// is answered, the owner leaves the node's queue (see Target.releaseNode).
type sweep struct {
	target      *Target
	owner, hold string
	leaving     func() bool
}

func NewSweeper(c *Runtime) *Sweeper {
	return &Sweeper{client: c, pending: make(map[int][]sweep), running: make(map[int]bool)}
}

// Add queues the release of hold on node i.
func (s *Sweeper) Add(m *Target, i int, owner, hold string, leaving func() bool) {
	c := s.client
	select {
	case <-c.Done:
		return // closing: what is left expires at its TTL
	default:
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	list := append(s.pending[i], sweep{target: m, owner: owner, hold: hold, leaving: leaving})
	if len(list) > maxSweepsPerNode {
		dropped := list[0]
		list = list[1:]
		dropped.target.Settings.Logger.Warn("redlock: too many releases waiting for a silent node; the oldest hold expires at its TTL",
			"lock", dropped.target.LockName, "node", i)
	}
	s.pending[i] = list
	if !s.running[i] {
		s.running[i] = true
		c.Background.Go(func() { s.run(i) })
	}
}

// run retries node i's releases until none is left or the Client closes.
func (s *Sweeper) run(i int) {
	c := s.client
	delay := sweepFirstRetry
	for {
		timer := time.NewTimer(delay)
		select {
		case <-c.Done:
			timer.Stop()
			s.mu.Lock()
			s.running[i] = false
			s.mu.Unlock()
			return
		case <-timer.C:
		}
		s.mu.Lock()
		list := s.pending[i]
		s.pending[i] = nil
		if len(list) == 0 {
			s.running[i] = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		done := 0
		for _, item := range list {
			if !item.retry(i) {
				break
			}
			done++
		}
		if done < len(list) {
			s.mu.Lock()
			s.pending[i] = append(list[done:len(list):len(list)], s.pending[i]...)
			s.mu.Unlock()
			delay = min(2*delay, sweepLastRetry)
			continue
		}
		delay = sweepFirstRetry
	}
}

// retry releases the hold once more; it reports whether the node answered.
func (item sweep) retry(i int) bool {
	m := item.target
	ctx, cancel := context.WithTimeout(context.Background(), m.Settings.RoundTimeout())
	defer cancel()
	_, _, err := m.dropHold(ctx, i, item.owner, item.hold, true)
	if err != nil && !node.Answered(err) {
		return false
	}
	if err != nil {
		m.NodeError(&m.Settings, i, err)
	} else if item.leaving != nil && item.leaving() {
		m.leaveAfterRelease(ctx, i, item.owner, item.hold)
	}
	return true
}
