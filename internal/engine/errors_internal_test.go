package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/quorumlock/redlock/internal/core"
	"github.com/quorumlock/redlock/node"
)

// telling keeps the previous attempt's error when the last one learnt
// nothing (every failing node cut short by the ctx).
func TestTelling(t *testing.T) {
	previous := errors.New("quarantined until later")
	cut := core.JoinErrors(fmt.Errorf("%w: 0 of 3", core.ErrNoQuorum),
		&core.NodeError{Err: fmt.Errorf("%w: %w", node.ErrNotSent, context.DeadlineExceeded)},
		&core.NodeError{Err: context.Canceled})
	if got := telling(cut, previous); got != previous {
		t.Errorf("telling(cut short) = %v; want the previous error", got)
	}
	told := core.JoinErrors(fmt.Errorf("%w: 0 of 2", core.ErrNoQuorum), &core.NodeError{Err: context.Canceled}, &core.NodeError{Err: &node.Quarantine{}})
	if got := telling(told, previous); got != told {
		t.Errorf("telling(with a quarantine) = %v; want it kept", got)
	}
	downToo := core.JoinErrors(fmt.Errorf("%w: 0 of 3", core.ErrNoQuorum),
		&core.NodeError{Err: fmt.Errorf("%w: %w", node.ErrNotSent, context.DeadlineExceeded)},
		&core.NodeError{Err: fmt.Errorf("%w: the node did not answer its last 3 calls", node.ErrNotSent)})
	if got := telling(downToo, previous); got != previous {
		t.Errorf("telling(cut short, the rest down) = %v; want the previous error", got)
	}
	down := core.JoinErrors(fmt.Errorf("%w: 1 of 3", core.ErrNoQuorum),
		&core.NodeError{Err: fmt.Errorf("%w: the node did not answer its last 3 calls", node.ErrNotSent)})
	if got := telling(down, previous); got != down {
		t.Errorf("telling(not cut) = %v; want it kept", got)
	}
	if got := telling(core.ErrNotAcquired, previous); got != core.ErrNotAcquired {
		t.Errorf("telling(no node errors) = %v; want it kept", got)
	}
	if got := telling(cut, nil); got != cut {
		t.Errorf("telling(cut, nil) = %v; want cut", got)
	}
}
