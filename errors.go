package redlock

import (
	"errors"
	"fmt"
)

// Sentinel errors. Match them with errors.Is: the library wraps them with
// detail (which node, how many votes) and joins several with errors.Join.
var (
	// ErrConfig reports an invalid argument or option: no nodes, a nil
	// client, an empty name, a TTL that leaves no validity window, a quorum
	// that is not a majority of the nodes, a malformed URL.
	ErrConfig = errors.New("redlock: invalid configuration")
	// ErrNotAcquired reports that the lock was not taken: another owner holds
	// it (TryLock), or Lock's ctx ended first (then the error also matches
	// the ctx's error).
	ErrNotAcquired = errors.New("redlock: lock not acquired")
	// ErrNotHeld reports an Unlock or Extend by an owner that does not hold
	// the lock on a quorum of nodes any more (it expired, or another owner
	// took it). Nothing of the other owner's was touched.
	ErrNotHeld = errors.New("redlock: lock not held")
	// ErrLost is a lease's Err and its Context's cause once its validity
	// window ended without a quorum renewal.
	ErrLost = errors.New("redlock: lease lost")
	// ErrReleased is a lease's Err and its Context's cause after Unlock, and
	// the error of a second Unlock of the same lease.
	ErrReleased = errors.New("redlock: lease released")
	// ErrNoQuorum reports that too few nodes answered to decide. It is
	// joined with one *NodeError per failing node.
	ErrNoQuorum = errors.New("redlock: no quorum")
	// ErrClosed reports use of a Client, Mutex or Lease after Client.Close.
	ErrClosed = errors.New("redlock: client closed")
)

// NodeError is the failure of one node in a round: a network error, a
// timeout, a reply of the wrong shape, a WRONGTYPE key.
type NodeError struct {
	Node int    // index of the node in the list given to New or Dial
	Addr string // the node's address, for logs
	Err  error
}

func (e *NodeError) Error() string {
	return fmt.Sprintf("redlock: node %d (%s): %v", e.Node, e.Addr, e.Err)
}

func (e *NodeError) Unwrap() error { return e.Err }
