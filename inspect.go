package redlock

import (
	"context"

	"github.com/quorumlock/redlock/internal/engine"
)

// LockInfo is a lock as the nodes see it (Client.Inspect).
type LockInfo = engine.LockInfo

// NodeInfo is one node's view of a lock. Err is set when the node did not
// answer (or answered an error, such as a key of the wrong type); the
// other fields are then zero.
type NodeInfo = engine.NodeInfo

// Inspect reads the lock called name (with the Client's key prefix) on
// every node, each within the node timeout, and changes nothing: who
// holds it (as a fingerprint: node.Fingerprint of an owner id, never the
// id, which would let the reader release the lock), how often, for how
// long, who waits, the fence. Every node's view is in Nodes. It returns
// the info and an error matching ErrNoQuorum when fewer than a quorum of
// nodes answered (Held is then false: too few nodes to tell); nodes that
// failed are also *NodeError in that error, and their Err in Nodes.
func (c *Client) Inspect(ctx context.Context, name string) (LockInfo, error) {
	return c.e.Inspect(ctx, name)
}

// ForceUnlock is for operators: it removes every hold of the lock called
// name (with the Client's key prefix), whoever holds it, on every node it
// reaches, raises the fence above every counter it saw, and passes the
// lock to a waiter, if any, as a release does. The old holder is not told:
// its lease ends (ErrLost) at its first renewal that starts after
// ForceUnlock at the latest; until then only fencing tokens protect the
// resource. A lock handed to a waiter that has not claimed it yet goes to
// no one until that handing would have lapsed (at most the shorter of the
// TTL and the queue timeout): the waiter may still take its lease from
// notices on their way. It returns nil when every node answered, an error matching
// ErrNoQuorum when fewer than a quorum did (the holds on the others expire
// at their TTL), and otherwise the failing nodes' *NodeError.
// See docs/features.md, "ForceUnlock: what the old holder sees".
func (c *Client) ForceUnlock(ctx context.Context, name string) error {
	return c.e.ForceUnlock(ctx, name)
}
