package engine

import (
	"context"
	"errors"

	"github.com/quorumlock/redlock/internal/core"
	"github.com/quorumlock/redlock/node"
)

// telling is err, unless the attempt was cut short by its ctx on some node
// and every other node that failed was not asked (its breaker open):
// nothing learnt, so the attempt before's, previous.
func telling(err, previous error) error {
	if previous == nil || err == nil {
		return err
	}
	var nodeErrs []*core.NodeError
	collectNodeErrors(err, &nodeErrs)
	cut := false
	for _, ne := range nodeErrs {
		switch {
		case errors.Is(ne.Err, context.Canceled) || errors.Is(ne.Err, context.DeadlineExceeded):
			cut = true
		case !errors.Is(ne.Err, node.ErrNotSent):
			return err
		}
	}
	if !cut {
		return err
	}
	return previous
}

// collectNodeErrors appends every *NodeError in err's tree to into.
func collectNodeErrors(err error, into *[]*core.NodeError) {
	switch e := err.(type) {
	case *core.NodeError:
		*into = append(*into, e)
	case interface{ Unwrap() []error }:
		for _, inner := range e.Unwrap() {
			collectNodeErrors(inner, into)
		}
	case interface{ Unwrap() error }:
		collectNodeErrors(e.Unwrap(), into)
	}
}
