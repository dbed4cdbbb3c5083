package leases

import (
	"errors"
	"testing"
	"time"

	"github.com/quorumlock/redlock/internal/core"
	"github.com/quorumlock/redlock/node"
)

// The clock term is the highest reading while the readings lie within the
// attempt's elapsed time of their lower median (clocks that agree: the
// rule before the bound), and that median plus elapsed when one reads
// further ahead. See docs/safety.md, "Why fencing tokens increase".
func TestClockTerm(t *testing.T) {
	const now = int64(1_800_000_000_000_000) // µs
	hours := (3 * time.Hour).Microseconds()
	for _, tc := range []struct {
		name     string
		readings []int64 // µs
		elapsed  time.Duration
		want     int64
	}{
		{"none", nil, time.Millisecond, 0},
		{"one node", []int64{now}, time.Millisecond, now},
		{"agreeing: the highest", []int64{now, now + 800}, time.Millisecond, now + 800},
		{"one of two ahead: the other + elapsed", []int64{now + hours, now}, time.Millisecond, now + 1000},
		{"one of three ahead: the median + elapsed", []int64{now, now + hours, now + 100}, time.Millisecond, now + 1100},
		{"one of three behind: the highest", []int64{now - hours, now, now + 100}, time.Millisecond, now + 100},
		{"two of four ahead: the lower median", []int64{now + hours, now, now + 2*hours, now + 50}, time.Millisecond, now + 1050},
		// Two readings: ahead or behind cannot be told apart; the lower is
		// taken (docs/safety.md says what that costs).
		{"one of two behind", []int64{now, now - hours}, time.Millisecond, now - hours + 1000},
		{"elapsed rounded up", []int64{now, now + hours}, time.Nanosecond, now + 1},
		{"a clock before 1970 reads 0", []int64{-5, 7}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fences := make([]node.Fence, len(tc.readings))
			for i, micros := range tc.readings {
				fences[i] = node.Fence{Clock: time.UnixMicro(micros)}
			}
			if got := clockTerm(fences, tc.elapsed); got != uint64(tc.want) {
				t.Fatalf("clockTerm(%v, %v) = %d; want %d", tc.readings, tc.elapsed, got, tc.want)
			}
		})
	}
}

// The token is above every counter, and at least the clock term; a counter
// at its limit fails the grant.
func TestNextToken(t *testing.T) {
	clock := time.UnixMicro(1_800_000_000_000_000)
	ahead := clock.Add(3 * time.Hour)
	fences := []node.Fence{{Counter: 5, Clock: clock}, {Counter: 9, Clock: ahead}}
	if got, err := nextToken(fences, time.Millisecond); err != nil || got != uint64(clock.UnixMicro())+1000 {
		t.Fatalf("nextToken = %d, %v; want the clock term %d", got, err, clock.UnixMicro()+1000)
	}
	high := uint64(ahead.UnixMicro()) + 7 // a counter carrying an older, inflated token
	fences[0].Counter = high
	if got, err := nextToken(fences, time.Millisecond); err != nil || got != high+1 {
		t.Fatalf("nextToken = %d, %v; want the highest counter + 1, %d", got, err, high+1)
	}
	fences[1].Counter = node.MaxToken
	if _, err := nextToken(fences, time.Millisecond); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("nextToken with a counter at its limit: %v; want ErrNotAcquired", err)
	}
}
