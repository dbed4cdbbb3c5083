package redlock

import (
	"github.com/quorumlock/redlock/internal/core"
	"github.com/quorumlock/redlock/internal/engine"
)

// Sentinel errors. Match them with errors.Is: the library wraps them with
// detail (which node, how many votes) and joins several into one error
// whose message is one line ("...; redlock: node 1 (addr): ...") and whose
// Unwrap gives each, so errors.As finds every *NodeError.
var (
	// ErrConfig reports an invalid argument or option: no nodes, a nil
	// client, an empty name, a TTL that leaves no validity window, a quorum
	// that is not a majority of the nodes, a malformed URL.
	ErrConfig = core.ErrConfig
	// ErrNotAcquired reports that the lock was not taken: another owner holds
	// it (TryLock), or Lock's ctx ended first (then the error also matches
	// the ctx's error).
	ErrNotAcquired = core.ErrNotAcquired
	// ErrNotHeld reports an Unlock or Extend by an owner that does not hold
	// the lock on a quorum of nodes any more (it expired, or another owner
	// took it). Nothing of the other owner's was touched.
	ErrNotHeld = core.ErrNotHeld
	// ErrLost is a lease's Err and its Context's cause once its validity
	// window ended without a quorum renewal.
	ErrLost = core.ErrLost
	// ErrReleased is a lease's Err and its Context's cause after Unlock, and
	// the error of a second Unlock of the same lease.
	ErrReleased = core.ErrReleased
	// ErrNoQuorum reports that too few nodes answered to decide. It is
	// joined with one *NodeError per failing node.
	ErrNoQuorum = core.ErrNoQuorum
	// ErrClosed reports use of a Client, Mutex or Lease after Client.Close.
	ErrClosed = core.ErrClosed
	// ErrKeyConflict reports that a key of the lock holds something else
	// (a value of another type, a hash that is not a lock) on so many
	// nodes that no quorum can agree: Lock returns it at once instead of
	// waiting, since only removing the key (or another WithKeyPrefix)
	// helps. Each such node's *NodeError matches it too.
	ErrKeyConflict = core.ErrKeyConflict
)

// NodeError is the failure of one node in a round: a network error, a
// timeout, a reply of the wrong shape, a WRONGTYPE key.
type NodeError = core.NodeError

// ErrNoLeader reports that an election has no leader now (Election.Leader).
var ErrNoLeader = engine.ErrNoLeader

// ErrQuarantined matches a node's refusal to vote after it lost its data,
// and an answer not counted because the node's clock runs fast:
// errors.Is(err, ErrQuarantined) on a *NodeError, or on ErrNoQuorum's
// error when such a node was among the failing ones.
var ErrQuarantined = core.ErrQuarantined
