package engine

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/quorumlock/redlock/internal/core"
	"github.com/quorumlock/redlock/internal/leases"
	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/quorum"
	"github.com/quorumlock/redlock/reentrant"
)

// LockInfo is a lock as the nodes see it (Client.Inspect).
type LockInfo struct {
	Name string
	// Held: one owner holds it on a quorum of the nodes (counted among
	// those that answered). Holds, Owner and PTTL are that owner's.
	Held  bool
	Holds int    // that owner's hold count (the least over that quorum)
	Owner string // that owner's fingerprint (never the owner id itself)
	// Readers: that owner is the readers of an RWMutex (Owner is then
	// node.Fingerprint(node.Readers), and Holds counts read holds).
	Readers bool
	// PTTL is how long a quorum still holds it: the smallest remaining
	// TTL over the quorum of its nodes whose keys live longest (-1 ms: no
	// expiry on any of them).
	PTTL time.Duration
	// Waiting is the length of the waiters' queue (the longest any node
	// has): waiters of either mode that were refused and wait, and any
	// whose heartbeat lapsed that no script has evicted yet.
	Waiting int
	Fence   uint64 // the highest fencing counter any node has
	// Forced: on some node a ForceUnlock ended a handing to a waiter, and
	// keeps the lock there, held by no client, until the handing would
	// have lapsed (NodeInfo.Forced, its PTTL): no one takes it there
	// before.
	Forced bool
	Nodes  []NodeInfo // one per node, in node order
}

// NodeInfo: see redlock.NodeInfo, which documents it.
type NodeInfo struct {
	Node  int
	Addr  string
	Err   error
	Owner string // fingerprint of the owner holding it here, or the waiter it was handed to; "" when free here
	Holds int    // that owner's holds here (0 when free, or handed and not claimed)
	// Handed: the lock was handed to the first waiter here (Owner), which
	// has not claimed or renewed it here yet. A waiter told so by a quorum
	// holds the lock (it takes the lease from the notices), so Inspect
	// counts a handed node as one hold of that owner's.
	Handed bool
	// Forced: a ForceUnlock ended a handing here; Owner is then
	// node.Fingerprint(node.ForcedOwner), and the lock is free here once
	// PTTL has passed.
	Forced  bool
	PTTL    time.Duration // remaining time here; -2 ms: free, -1 ms: no expiry
	Waiting int
	Fence   uint64
}

// Inspect implements redlock.Client.Inspect, which documents it.
func (c *Client) Inspect(ctx context.Context, name string) (LockInfo, error) {
	info := LockInfo{Name: name}
	if ctx == nil {
		return info, fmt.Errorf("%w: nil context", core.ErrConfig)
	}
	m := c.Mutex(name)
	if m.err != nil {
		return info, m.err
	}
	if !c.runtime.Begin() {
		return info, core.ErrClosed
	}
	defer c.runtime.End()
	return m.inspect(ctx)
}

// inspect is Inspect of m.
func (m *Mutex) inspect(ctx context.Context) (LockInfo, error) {
	c := m.client
	info := m.readNodes(ctx)
	need := m.target.Settings.QuorumOf(len(c.runtime.Nodes))
	answered, holders := 0, make(map[string]int)
	var nodeErrs []error
	for _, n := range info.Nodes {
		if n.Err != nil {
			nodeErrs = append(nodeErrs, c.runtime.NodeError(&m.target.Settings, n.Node, n.Err))
			continue
		}
		answered++
		info.Waiting = max(info.Waiting, n.Waiting)
		info.Fence = max(info.Fence, n.Fence)
		info.Forced = info.Forced || n.Forced
		if n.Holds > 0 || n.Handed {
			holders[n.Owner]++
		}
	}
	if answered < need {
		return info, leases.Verdict{NodeErrs: nodeErrs}.With(fmt.Errorf("%w: %d of %d nodes answered, %d needed",
			core.ErrNoQuorum, answered, len(c.runtime.Nodes), need))
	}
	for owner, count := range holders {
		if count >= need {
			info.Held, info.Owner = true, owner
			info.Readers = owner == node.Fingerprint(node.Readers)
		}
	}
	if info.Held {
		quorumHold(&info, need)
	}
	return info, nil
}

// forcedOwner is node.ForcedOwner as the nodes name it to a reader.
var forcedOwner = node.Fingerprint(node.ForcedOwner)

// readNodes reads the lock's state on every node, an error for each node
// that did not answer.
func (m *Mutex) readNodes(ctx context.Context) LockInfo {
	c := m.client
	info := LockInfo{Name: m.target.LockName, Nodes: make([]NodeInfo, len(c.runtime.Nodes))}
	keys := m.target.Keys.Node()
	m.eachNode(ctx, make([]error, len(c.runtime.Nodes)), func(ctx context.Context, i int, n *node.Node) error {
		view, err := n.Inspect(ctx, keys)
		info.Nodes[i] = NodeInfo{Node: i, Addr: n.Addr(), Err: err}
		if err == nil {
			info.Nodes[i] = NodeInfo{Node: i, Addr: n.Addr(), Owner: view.Holder, Holds: int(view.Holds),
				Handed: view.Handed, Forced: view.Holder == forcedOwner, PTTL: view.PTTL, Waiting: int(view.Waiting), Fence: view.Fence}
		}
		return err
	})
	return info
}

// quorumHold sets the holds and PTTL of info's owner as a quorum of need
// nodes has them: the fewest holds, and the need-th longest PTTL.
func quorumHold(info *LockInfo, need int) {
	var pttls []time.Duration
	for _, n := range info.Nodes {
		if n.Err != nil || n.Owner != info.Owner || (n.Holds == 0 && !n.Handed) {
			continue
		}
		// A handed lock is one hold: the lease the waiter takes from
		// the notices (until its first renewal makes it a hold).
		if holds := max(n.Holds, 1); info.Holds == 0 || holds < info.Holds {
			info.Holds = holds
		}
		pttls = append(pttls, n.PTTL)
	}
	// A key without expiry (-1 ms) counts as the longest.
	slices.SortFunc(pttls, func(a, b time.Duration) int {
		return cmp.Compare(forever(b), forever(a))
	})
	info.PTTL = pttls[need-1]
}

// ForceUnlock implements redlock.Client.ForceUnlock, which documents it.
func (c *Client) ForceUnlock(ctx context.Context, name string) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil context", core.ErrConfig)
	}
	m := c.Mutex(name)
	if m.err != nil {
		return m.err
	}
	if !c.runtime.Begin() {
		return core.ErrClosed
	}
	defer c.runtime.End()
	keys, notice := m.target.Keys.Node(), reentrant.NewID()
	// Until every request of the old holder's still on its way is past
	// its deadline (node.Tombstone).
	tombstone := node.Tombstone(time.Duration(c.longest.Load()), m.target.Settings.NodeTimeout)
	forced := make([]node.Forced, len(c.runtime.Nodes))
	errs := make([]error, len(c.runtime.Nodes))
	m.eachNode(ctx, errs, func(ctx context.Context, i int, n *node.Node) (err error) {
		forced[i], err = n.ForceRelease(ctx, keys, tombstone, m.target.Queue.Window(), notice)
		return err
	})
	removed, highest := 0, uint64(0)
	for i, f := range forced {
		if errs[i] == nil {
			removed += int(f.Removed)
			highest = max(highest, f.Fence)
			if f.Next != "" {
				// A waiter of this Client may be next: wake it now.
				c.runtime.Hub.Wake(m.target.Queue.Channel, notice+" "+f.Next)
			}
		}
	}
	// No counter seen (never fenced): no token of this lock was confirmed by
	// a quorum, and every token to come is above the nodes' clocks in µs
	// anyway, so a counter of 1 would add nothing but a key kept forever.
	if highest > 0 && highest < node.MaxToken {
		m.eachNode(ctx, errs, func(ctx context.Context, _ int, n *node.Node) error {
			_, err := n.RaiseFence(ctx, keys.Fence, highest+1)
			return err
		})
	}
	var nodeErrs []error
	for i, err := range errs {
		if err != nil {
			nodeErrs = append(nodeErrs, c.runtime.NodeError(&m.target.Settings, i, err))
		}
	}
	m.target.Settings.Logger.Warn("redlock: lock force-unlocked", "lock", name, "holds", removed,
		"nodes", len(c.runtime.Nodes)-len(nodeErrs), "of", len(c.runtime.Nodes))
	need := m.target.Settings.QuorumOf(len(c.runtime.Nodes))
	switch answered := len(c.runtime.Nodes) - len(nodeErrs); {
	case answered < need:
		return leases.Verdict{NodeErrs: nodeErrs}.With(fmt.Errorf("%w: ForceUnlock reached %d of %d nodes, %d needed",
			core.ErrNoQuorum, answered, len(c.runtime.Nodes), need))
	case len(nodeErrs) > 0:
		return leases.Verdict{NodeErrs: nodeErrs}.With(fmt.Errorf("redlock: ForceUnlock reached %d of %d nodes", answered, len(c.runtime.Nodes)))
	}
	return nil
}

// forever orders a PTTL of -1 ms (no expiry) after every other.
func forever(pttl time.Duration) time.Duration {
	if pttl < 0 {
		return math.MaxInt64
	}
	return pttl
}

// eachNode calls fn on every node i whose errs[i] is nil, all at once and
// each within the node timeout, and records fn's error in errs[i].
func (m *Mutex) eachNode(ctx context.Context, errs []error, fn func(ctx context.Context, i int, n *node.Node) error) {
	var live []int
	for i, err := range errs {
		if err == nil {
			live = append(live, i)
		}
	}
	quorum.Each(ctx, live, m.target.Settings.RoundTimeout(), func(ctx context.Context, i int) {
		errs[i] = fn(ctx, i, m.client.runtime.Nodes[i])
	})
}
