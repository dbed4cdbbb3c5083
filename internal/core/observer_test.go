package core

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

func TestJoinObservers_callsEveryHookAndLeavesAbsentOnesNil(t *testing.T) {
	var seen []string
	a := Observer{
		Lost: func(e LostEvent) { seen = append(seen, "a lost "+e.Name) },
		Call: func(_ context.Context, e CallEvent) func(CallResult) {
			seen = append(seen, "a begin "+e.Op)
			return func(CallResult) { seen = append(seen, "a end "+e.Op) }
		},
	}
	b := Observer{
		Lost: func(e LostEvent) { seen = append(seen, "b lost "+e.Name) },
		Call: func(context.Context, CallEvent) func(CallResult) { seen = append(seen, "b begin"); return nil },
	}
	o := JoinObservers(a, b, Observer{})
	if o.Acquired != nil || o.Quarantined != nil || o.NotAcquired != nil {
		t.Fatal("a hook no observer has is not nil: the library would call it for nothing")
	}
	o.Lost(LostEvent{Name: "x"})
	o.Call(context.Background(), CallEvent{Op: "Lock"})(CallResult{})
	want := "a lost x|b lost x|a begin Lock|b begin|a end Lock"
	if got := strings.Join(seen, "|"); got != want {
		t.Fatalf("hooks ran %q, want %q", got, want)
	}
}

func TestOutcome_namesEachEnding(t *testing.T) {
	cases := map[error]string{
		nil:                      "ok",
		context.Canceled:         "cancelled",
		ErrNoQuorum:              "no_quorum",
		ErrNotAcquired:           "refused",
		ErrLost:                  "lost",
		ErrClosed:                "closed",
		ErrConfig:                "config",
		context.DeadlineExceeded: "cancelled",
	}
	for err, want := range cases {
		if got := Outcome(err); got != want {
			t.Errorf("Outcome(%v) = %q, want %q", err, got, want)
		}
	}
	// A Lock whose ctx ended matches ErrNotAcquired and the ctx's error: cancelled.
	if got := Outcome(fmt.Errorf("%w: %w", ErrNotAcquired, context.DeadlineExceeded)); got != "cancelled" {
		t.Errorf("a Lock whose ctx ended: %q", got)
	}
}
