package engine

import (
	"errors"
	"fmt"

	"github.com/quorumlock/redlock/internal/core"
	"github.com/quorumlock/redlock/quorum"
)

// verdict is a round's replies counted once: how many of the n nodes
// agreed and refused, and each failed node's *NodeError. A node still
// pending when the round was decided is neither refused nor failed.
type verdict struct {
	yes, refused, n, need int
	nodeErrs              []error
}

func verdictOf[T any](m *Mutex, replies []quorum.Reply[T], need int) verdict {
	v := verdict{n: len(replies), need: need}
	for i, reply := range replies {
		switch reply.Vote {
		case quorum.Yes:
			v.yes++
		case quorum.No:
			v.refused++
		case quorum.Failed:
			v.nodeErrs = append(v.nodeErrs, m.client.nodeError(&m.settings, i, reply.Err))
		}
	}
	return v
}

// outOfReach reports whether so many nodes refused that need can never
// agree.
func (v verdict) outOfReach() bool { return v.refused > v.n-v.need }

// conflicts counts the node errors saying a key of the lock holds
// something else; stopped reports whether they put a quorum out of reach.
func (v verdict) conflicts() (count int, stopped bool) {
	for _, err := range v.nodeErrs {
		if errors.Is(err, core.ErrKeyConflict) {
			count++
		}
	}
	return count, count > v.n-v.need
}

// err turns the verdict into the library's error, the one place that
// does so for acquire, release, extend and fence rounds: nil when need
// nodes agreed; when refusals put a quorum out of reach, refusal's error
// (nil refusal: such a round cannot be refused) joined with the node
// errors; otherwise ErrNoQuorum with every failed node's *NodeError.
func (v verdict) err(refusal func(v verdict) error) error {
	switch {
	case v.yes >= v.need:
		return nil
	case refusal != nil && v.outOfReach():
		return v.with(refusal(v))
	}
	return v.with(fmt.Errorf("%w: %d of %d nodes agreed, %d needed", core.ErrNoQuorum, v.yes, v.n, v.need))
}

// with joins head and the node errors, so that errors.As finds each
// *NodeError.
func (v verdict) with(head error) error {
	return core.JoinErrors(append([]error{head}, v.nodeErrs...)...)
}
