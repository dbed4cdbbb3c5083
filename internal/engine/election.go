package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/quorumlock/redlock/internal/core"
	"github.com/quorumlock/redlock/internal/leases"
	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/reentrant"
)

// ErrNoLeader reports that an election has no leader now (Election.Leader).
var ErrNoLeader = errors.New("redlock: no leader")

// Leader: see redlock.Leader, which documents it.
type Leader struct {
	Value string
	Term  uint64
}

// Election: see redlock.Election, which documents it.
type Election struct {
	client *Client
	name   string
	mutex  *Mutex
	record string // the published leader, on every node
	err    error  // invalid configuration, reported by every method
}

// Election implements redlock.Client.Election, which documents it.
func (c *Client) Election(name string, opts ...core.Option) *Election {
	e := &Election{client: c, name: name, mutex: c.Mutex(name, append(slices.Clip(opts), core.WithFencing())...)}
	e.err = e.mutex.err
	if name == "" {
		e.err = fmt.Errorf("%w: empty election name", core.ErrConfig)
	}
	e.record = e.mutex.target.Keys.Lock + ":leader"
	return e
}

// Name is the election's name.
func (e *Election) Name() string { return e.name }

// Campaign implements redlock.Election.Campaign, which documents it.
func (e *Election) Campaign(ctx context.Context, value string) (*Lease, error) {
	return observed(ctx, &e.mutex.target.Settings.Observer, e.mutex.event("Campaign", "Election"), func(stats *callStats) (*Lease, error) {
		return e.campaign(ctx, value, stats)
	})
}

func (e *Election) campaign(ctx context.Context, value string, stats *callStats) (*Lease, error) {
	c := e.client
	if err := c.runtime.BeginCall(ctx, e.err); err != nil {
		return nil, err
	}
	defer c.runtime.End()
	lease, err := e.mutex.acquireStats(reentrant.WithOwner(ctx, reentrant.NewID()), true, stats)
	if err != nil {
		return nil, err
	}
	record := node.Record{Term: lease.Token(), Owner: node.Fingerprint(lease.Owner()), Value: value}
	err = e.publish(ctx, lease, record)
	if err == nil && ctx.Err() != nil {
		err = ctx.Err() // published as the caller stopped waiting: it would never resign
	}
	if err != nil {
		_ = lease.Unlock(context.WithoutCancel(ctx))
		if ctx.Err() != nil {
			return nil, gaveUp(ctx, err)
		}
		return nil, err
	}
	c.runtime.Background.Go(func() { e.keepPublished(lease, record) })
	return &Lease{held: lease}, nil
}

// keepPublished publishes the record again every third of the TTL until
// the leadership ends (or the Client closes): that keeps it from expiring,
// and a node that lost it (restarted empty) has it back, as the lease's
// renewals put the lock back there: Leader goes on naming the leader.
func (e *Election) keepPublished(lease *leases.Lease, record node.Record) {
	c := e.client
	ticker := time.NewTicker(e.mutex.target.Settings.TTL / 3)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
		case <-lease.Context().Done():
			return
		case <-c.runtime.Done:
			return
		}
		errs := make([]error, len(c.runtime.Nodes))
		e.mutex.eachNode(lease.Context(), errs, func(ctx context.Context, _ int, n *node.Node) error {
			_, err := n.Publish(ctx, e.record, record, e.mutex.target.Settings.TTL)
			return err
		})
	}
}

// publish writes the leader record on every node; a quorum must hold it
// for this term, and the lease must still be valid.
func (e *Election) publish(ctx context.Context, lease *leases.Lease, record node.Record) error {
	c := e.client
	stored := make([]uint64, len(c.runtime.Nodes))
	errs := make([]error, len(c.runtime.Nodes))
	e.mutex.eachNode(ctx, errs, func(ctx context.Context, i int, n *node.Node) (err error) {
		stored[i], err = n.Publish(ctx, e.record, record, e.mutex.target.Settings.TTL)
		return err
	})
	published, later := 0, uint64(0)
	var nodeErrs []error
	for i, err := range errs {
		switch {
		case err != nil:
			nodeErrs = append(nodeErrs, c.runtime.NodeError(&e.mutex.target.Settings, i, err))
		case stored[i] == record.Term:
			published++
		default:
			later = max(later, stored[i])
		}
	}
	need := e.mutex.target.Settings.QuorumOf(len(c.runtime.Nodes))
	switch {
	case later > 0:
		return fmt.Errorf("%w: term %d was published, after this one (%d): this leadership is over", core.ErrNotAcquired, later, record.Term)
	case published < need:
		return leases.Verdict{NodeErrs: nodeErrs}.With(fmt.Errorf("%w: the leader was published on %d of %d nodes, %d needed",
			core.ErrNoQuorum, published, len(c.runtime.Nodes), need))
	}
	if err := lease.Err(); err != nil {
		return fmt.Errorf("%w: leadership ended while it was published: %w", core.ErrNotAcquired, err)
	}
	return nil
}

// Leader implements redlock.Election.Leader, which documents it.
func (e *Election) Leader(ctx context.Context) (Leader, error) {
	c := e.client
	if err := c.runtime.BeginCall(ctx, e.err); err != nil {
		return Leader{}, err
	}
	defer c.runtime.End()
	// The lock and the records are read at once: two rounds, one wait.
	var info LockInfo
	var err error
	records := make([]node.Record, len(c.runtime.Nodes))
	errs := make([]error, len(c.runtime.Nodes))
	var reads sync.WaitGroup
	reads.Go(func() { info, err = e.mutex.inspect(ctx) })
	e.mutex.eachNode(ctx, errs, func(ctx context.Context, i int, n *node.Node) (err error) {
		records[i], err = n.Published(ctx, e.record)
		return err
	})
	reads.Wait()
	switch {
	case err != nil:
		return Leader{}, err
	case !info.Held:
		return Leader{}, fmt.Errorf("%w: election %q: no candidate holds it on a quorum", ErrNoLeader, e.name)
	}
	var latest node.Record
	var nodeErrs []error
	for i, err := range errs {
		if err != nil {
			nodeErrs = append(nodeErrs, c.runtime.NodeError(&e.mutex.target.Settings, i, err))
		} else if records[i].Term > latest.Term {
			latest = records[i]
		}
	}
	need := e.mutex.target.Settings.QuorumOf(len(c.runtime.Nodes))
	if answered := len(c.runtime.Nodes) - len(nodeErrs); answered < need {
		return Leader{}, leases.Verdict{NodeErrs: nodeErrs}.With(fmt.Errorf("%w: %d of %d nodes answered, %d needed",
			core.ErrNoQuorum, answered, len(c.runtime.Nodes), need))
	}
	if latest.Owner != info.Owner {
		return Leader{}, fmt.Errorf("%w: election %q: its holder has not published its value yet", ErrNoLeader, e.name)
	}
	return Leader{Value: latest.Value, Term: latest.Term}, nil
}

// Observe implements redlock.Election.Observe, which documents it.
func (e *Election) Observe(ctx context.Context) <-chan Leader {
	ch := make(chan Leader)
	c := e.client
	if e.err != nil || ctx == nil || !c.runtime.Begin() {
		close(ch)
		return ch
	}
	every := min(max(e.mutex.target.Settings.TTL/10, 10*time.Millisecond), time.Second)
	go func() {
		defer c.runtime.End()
		defer close(ch)
		ticker := time.NewTicker(every)
		defer ticker.Stop()
		var sent Leader
		first := true
		for {
			now, err := e.Leader(ctx)
			if errors.Is(err, core.ErrClosed) || ctx.Err() != nil {
				return
			}
			if err != nil {
				now = Leader{}
			}
			if first || now != sent {
				select {
				case ch <- now:
					sent, first = now, false
				case <-ticker.C:
					continue // not taken: read again, send the latest
				case <-ctx.Done():
					return
				case <-c.runtime.Done:
					return
				}
			}
			select {
			case <-ticker.C:
			case <-ctx.Done():
				return
			case <-c.runtime.Done:
				return
			}
		}
	}()
	return ch
}
