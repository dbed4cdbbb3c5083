package core

import (
	"errors"
	"fmt"
	"strings"

	"github.com/quorumlock/redlock/node"
)

// Sentinel errors: redlock's errors.go documents each.
var (
	// ErrConfig: see redlock.ErrConfig, which documents it.
	ErrConfig = errors.New("redlock: invalid configuration")
	// ErrNotAcquired: see redlock.ErrNotAcquired, which documents it.
	ErrNotAcquired = errors.New("redlock: lock not acquired")
	// ErrNotHeld: see redlock.ErrNotHeld, which documents it.
	ErrNotHeld = errors.New("redlock: lock not held")
	// ErrLost: see redlock.ErrLost, which documents it.
	ErrLost = errors.New("redlock: lease lost")
	// ErrReleased: see redlock.ErrReleased, which documents it.
	ErrReleased = errors.New("redlock: lease released")
	// ErrNoQuorum: see redlock.ErrNoQuorum, which documents it.
	ErrNoQuorum = errors.New("redlock: no quorum")
	// ErrClosed reports use of a Client, Mutex or Lease after Client.Close.
	ErrClosed = errors.New("redlock: client closed")
	// ErrKeyConflict: see redlock.ErrKeyConflict, which documents it.
	ErrKeyConflict = node.ErrKeyConflict
)

// NodeError: see redlock.NodeError, which documents it.
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
