package leases

import (
	"errors"
	"fmt"

	"github.com/quorumlock/redlock/internal/core"
	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/quorum"
)

// Verdict is a round's replies counted once: how many of the n nodes
// agreed and refused, and each failed node's *NodeError. A node still
// pending when the round was decided is neither refused nor failed.
type Verdict struct {
	Yes, refused, N, need int
	NodeErrs              []error
}

func VerdictOf[T any](m *Target, replies []quorum.Reply[T], need int) Verdict {
	v := Verdict{N: len(replies), need: need}
	for i, reply := range replies {
		switch reply.Vote {
		case quorum.Yes:
			v.Yes++
		case quorum.No:
			v.refused++
		case quorum.Failed:
			v.NodeErrs = append(v.NodeErrs, m.NodeError(&m.Settings, i, reply.Err))
		}
	}
	return v
}

// outOfReach reports whether so many nodes refused that need can never
// agree.
func (v Verdict) outOfReach() bool { return v.refused > v.N-v.need }

// Conflicts counts the node errors saying a key of the lock holds
// something else; stopped reports whether they put a quorum out of reach.
func (v Verdict) Conflicts() (count int, stopped bool) {
	return v.count(core.ErrKeyConflict)
}

// Unguarded counts the nodes that refused to vote because the restart
// guard cannot see a loss there (node.ErrUnguarded); stopped reports
// whether they put a quorum out of reach.
func (v Verdict) Unguarded() (count int, stopped bool) {
	return v.count(node.ErrUnguarded)
}

func (v Verdict) count(target error) (count int, stopped bool) {
	for _, err := range v.NodeErrs {
		if errors.Is(err, target) {
			count++
		}
	}
	return count, count > v.N-v.need
}

// Err turns the verdict into the library's error, the one place that
// does so for acquire, release, extend and fence rounds: nil when need
// nodes agreed; when refusals put a quorum out of reach, refusal's error
// (nil refusal: such a round cannot be refused) joined with the node
// errors; otherwise ErrNoQuorum with every failed node's *NodeError.
func (v Verdict) Err(refusal func(v Verdict) error) error {
	switch {
	case v.Yes >= v.need:
		return nil
	case refusal != nil && v.outOfReach():
		return v.With(refusal(v))
	}
	return v.With(fmt.Errorf("%w: %d of %d nodes agreed, %d needed", core.ErrNoQuorum, v.Yes, v.N, v.need))
}

// With joins head and the node errors, so that errors.As finds each
// *NodeError.
func (v Verdict) With(head error) error {
	return core.JoinErrors(append([]error{head}, v.NodeErrs...)...)
}

// StopError is an attempt's error after which Lock does not try again.
type StopError struct{ Err error }

func (e *StopError) Error() string { return e.Err.Error() }

func (e *StopError) Unwrap() error { return e.Err }
