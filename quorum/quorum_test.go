package quorum

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// votesCall answers votes[node] after delays[node] (zero: at once). A delay
// of -1 never answers until ctx is done, then fails.
func votesCall(votes []Vote, delays []time.Duration) Call[int] {
	return func(ctx context.Context, node int) Reply[int] {
		if delays != nil && delays[node] != 0 {
			wait := delays[node]
			if wait < 0 {
				wait = time.Hour
			}
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return Reply[int]{Vote: Failed, Err: ctx.Err()}
			}
		}
		return Reply[int]{Vote: votes[node], Value: node}
	}
}

func TestTally_Decided(t *testing.T) {
	tests := []struct {
		name          string
		yes, no, pend int
		need          int
		want          bool
	}{
		{"quorum reached early", 3, 0, 2, 3, true},
		{"still possible", 2, 2, 1, 3, false},
		{"impossible", 2, 3, 0, 3, true},
		{"impossible with pending", 0, 3, 2, 3, true},
		{"single node granted", 1, 0, 0, 1, true},
		{"every node needed, one refused", 4, 1, 0, 5, true},
		{"every node needed, one pending", 4, 0, 1, 5, false},
		{"nothing yet", 0, 0, 5, 3, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tally := Tally[int]{Replies: make([]Reply[int], tt.yes+tt.no+tt.pend), Yes: tt.yes, No: tt.no, Answered: tt.yes + tt.no}
			if got := tally.Decided(tt.need); got != tt.want {
				t.Fatalf("Decided(%d) with %d yes, %d no, %d pending = %v, want %v", tt.need, tt.yes, tt.no, tt.pend, got, tt.want)
			}
		})
	}
}

func TestRound_returnsAtQuorumWithoutWaitingForStragglers(t *testing.T) {
	var background sync.WaitGroup
	votes := []Vote{Yes, Yes, Yes, Yes, Yes}
	delays := []time.Duration{0, 0, 0, time.Second, time.Second}
	start := time.Now()
	round := Start(context.Background(), 0, 5, 3, &background, votesCall(votes, delays))
	tally := round.Wait(context.Background())
	if elapsed := time.Since(start); elapsed > 500*time.Millisecond {
		t.Fatalf("Wait took %v: it waited for stragglers", elapsed)
	}
	if tally.Yes != 3 || tally.Replies[3].Vote != Pending {
		t.Fatalf("tally = %+v, want 3 yes and node 3 pending", tally)
	}
	var mu sync.Mutex
	var late []int
	round.Detach(func(node int, reply Reply[int]) {
		mu.Lock()
		defer mu.Unlock()
		late = append(late, node)
	})
	background.Wait()
	if len(late) != 2 {
		t.Fatalf("late answers delivered for nodes %v, want the two stragglers", late)
	}
}

func TestRound_givesUpAsSoonAsQuorumImpossible(t *testing.T) {
	var background sync.WaitGroup
	votes := []Vote{No, Failed, No, Yes, Yes}
	delays := []time.Duration{0, 0, 0, -1, -1}
	ctx, cancel := context.WithCancel(context.Background())
	round := Start(ctx, 0, 5, 3, &background, votesCall(votes, delays))
	tally := round.Wait(context.Background())
	if tally.No != 3 || !tally.Decided(3) {
		t.Fatalf("tally = %+v, want decided with 3 refusals", tally)
	}
	cancel()
	final := round.WaitAll(context.Background())
	background.Wait()
	if final.Answered != 5 || final.Replies[3].Vote != Failed {
		t.Fatalf("after cancel: %+v, want all answered, node 3 failed", final)
	}
}

func TestRound_timeoutFailsSilentNodes(t *testing.T) {
	var background sync.WaitGroup
	votes := []Vote{Yes, Yes, Yes}
	round := Start(context.Background(), 30*time.Millisecond, 3, 2, &background, votesCall(votes, []time.Duration{0, -1, -1}))
	tally := round.Wait(context.Background())
	background.Wait()
	if tally.Yes != 1 || tally.No != 2 || tally.Replies[1].Vote != Failed {
		t.Fatalf("tally = %+v, want 1 yes and the two silent nodes failed by the timeout", tally)
	}
}

func TestRound_WaitReturnsWhenCtxDone(t *testing.T) {
	var background sync.WaitGroup
	votes := []Vote{Yes, Yes, Yes}
	roundCtx, cancelRound := context.WithCancel(context.Background())
	round := Start(roundCtx, 0, 3, 2, &background, votesCall(votes, []time.Duration{-1, -1, -1}))
	waitCtx, cancelWait := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancelWait()
	tally := round.Wait(waitCtx)
	if tally.Answered != 0 || !errors.Is(waitCtx.Err(), context.DeadlineExceeded) {
		t.Fatalf("tally = %+v, want nothing answered at the deadline", tally)
	}
	cancelRound()
	background.Wait()
}

func TestRound_DetachSeesEveryAnswerExactlyOnce(t *testing.T) {
	for range 200 {
		var background sync.WaitGroup
		const n = 5
		votes := []Vote{Yes, Yes, Yes, Yes, Yes}
		round := Start(context.Background(), 0, n, 3, &background, votesCall(votes, nil))
		var mu sync.Mutex
		seen := make(map[int]int)
		tally := round.Detach(func(node int, _ Reply[int]) {
			mu.Lock()
			defer mu.Unlock()
			seen[node]++
		})
		background.Wait()
		for node, reply := range tally.Replies {
			if reply.Vote != Pending {
				seen[node]++
			}
		}
		for node := range n {
			if seen[node] != 1 {
				t.Fatalf("node %d seen %d times, want once", node, seen[node])
			}
		}
	}
}

// Each calls fn once on every given node, and only those, bounds each call
// by the timeout, and returns only once every call has returned.
func TestEach_callsEveryGivenNodeAndWaits(t *testing.T) {
	var mu sync.Mutex
	seen := map[int]int{}
	var finished atomic.Int32
	Each(context.Background(), []int{0, 2, 4}, 20*time.Millisecond, func(ctx context.Context, i int) {
		if _, ok := ctx.Deadline(); !ok {
			t.Errorf("node %d: no deadline", i)
		}
		<-ctx.Done() // the timeout ends every call
		mu.Lock()
		seen[i]++
		mu.Unlock()
		finished.Add(1)
	})
	if finished.Load() != 3 {
		t.Fatalf("Each returned with %d of 3 calls finished", finished.Load())
	}
	if len(seen) != 3 || seen[0] != 1 || seen[2] != 1 || seen[4] != 1 {
		t.Fatalf("calls per node: %v, want nodes 0, 2, 4 once each", seen)
	}
}
