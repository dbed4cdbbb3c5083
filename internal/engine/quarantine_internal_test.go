package engine

import (
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
