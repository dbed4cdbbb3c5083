package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/quorumlock/redlock/internal/core"
	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/quorum"
)

// votesAgain: the need-th earliest moment a node may vote, counting nodes
// that answered, failed otherwise or are out of quarantine as now.
func TestVotesAgain(t *testing.T) {
	quarantined := func(left time.Duration) quorum.Reply[node.Acquired] {
		return quorum.Reply[node.Acquired]{Vote: quorum.Failed, Err: &core.NodeError{Err: &node.Quarantine{Left: left}}}
	}
	refused := quorum.Reply[node.Acquired]{Vote: quorum.No}
	down := quorum.Reply[node.Acquired]{Vote: quorum.Failed, Err: node.ErrNotSent}
	for _, tc := range []struct {
		replies []quorum.Reply[node.Acquired]
		need    int
		want    time.Duration // 0: zero time
	}{
		{[]quorum.Reply[node.Acquired]{quarantined(time.Second), quarantined(3 * time.Second), refused}, 2, time.Second},
		{[]quorum.Reply[node.Acquired]{quarantined(time.Second), quarantined(3 * time.Second), refused}, 3, 3 * time.Second},
		{[]quorum.Reply[node.Acquired]{quarantined(time.Second), down, refused}, 2, 0},
		{[]quorum.Reply[node.Acquired]{quarantined(-1), quarantined(0), quarantined(time.Second)}, 2, 0},
		{[]quorum.Reply[node.Acquired]{quarantined(time.Second)}, 2, 0},
	} {
		now := time.Now()
		got := votesAgain(tc.replies, tc.need)
		switch {
		case tc.want == 0 && !got.IsZero():
			t.Errorf("votesAgain(need %d) = %v; want zero", tc.need, got)
		case tc.want != 0 && (got.Sub(now) < tc.want || got.Sub(now) > tc.want+100*time.Millisecond):
			t.Errorf("votesAgain(need %d) = now + %v; want now + %v", tc.need, got.Sub(now), tc.want)
		}
	}
}

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
