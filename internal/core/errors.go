package core

import (
	"errors"
	"fmt"
	"strings"

	"github.com/quorumlock/redlock/node"
)

// Sentinel errors. Match them with errors.Is: the library wraps them with
// detail (which node, how many votes) and joins several into one error
// whose message is one line ("...; redlock: node 1 (addr): ...") and whose
// Unwrap gives each, so errors.As finds every *NodeError.
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
	// ErrKeyConflict reports that a key of the lock holds something else
	// (a value of another type, a hash that is not a lock) on so many
	// nodes that no quorum can agree: Lock returns it at once instead of
	// waiting, since only removing the key (or another WithKeyPrefix)
	// helps. Each such node's *NodeError matches it too.
	ErrKeyConflict = node.ErrKeyConflict
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

// joinedError is errors.Join on one line: log lines and slog attributes
// stay whole.
type joinedError struct{ errs []error }

// JoinErrors is errors.Join (nil errors dropped; nil when none is left),
// with a one-line message.
func JoinErrors(errs ...error) error {
	var kept []error
	for _, err := range errs {
		if err != nil {
			kept = append(kept, err)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	return &joinedError{errs: kept}
}

func (e *joinedError) Error() string {
	parts := make([]string, len(e.errs))
	for i, err := range e.errs {
		parts[i] = strings.ReplaceAll(err.Error(), "\n", "; ")
	}
	return strings.Join(parts, "; ")
}

func (e *joinedError) Unwrap() []error { return e.errs }
