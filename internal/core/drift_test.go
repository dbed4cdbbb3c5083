package core

import (
	"testing"
	"time"
)

func TestValidity(t *testing.T) {
	tests := []struct {
		name    string
		ttl     time.Duration
		elapsed time.Duration
		drift   float64
		want    time.Duration
	}{
		{"paper example", 10 * time.Second, 0, 0.01, 10*time.Second - 100*time.Millisecond - 2*time.Millisecond},
		{"elapsed counts", 10 * time.Second, time.Second, 0.01, 9*time.Second - 102*time.Millisecond},
		{"no drift still keeps the slack", time.Second, 0, 0, time.Second - 2*time.Millisecond},
		{"round outlasted the TTL", 100 * time.Millisecond, 99 * time.Millisecond, 0.01, -2 * time.Millisecond},
		{"tiny TTL has no window", time.Millisecond, 0, 0.01, -time.Millisecond - 10*time.Microsecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Validity(tt.ttl, tt.elapsed, tt.drift); got != tt.want {
				t.Fatalf("validity(%v, %v, %v) = %v, want %v", tt.ttl, tt.elapsed, tt.drift, got, tt.want)
			}
		})
	}
}

func TestValidUntil_neverLaterThanNodeExpiry(t *testing.T) {
	start := time.Now()
	for _, ttl := range []time.Duration{10 * time.Millisecond, time.Second, 30 * time.Second} {
		for _, drift := range []float64{0, 0.01, 0.1} {
			until := ValidUntil(start, ttl, drift)
			// A node whose clock runs fast by drift expires the key after
			// ttl*(1-drift) of our time at the earliest.
			earliestExpiry := start.Add(time.Duration(float64(ttl) * (1 - drift)))
			if until.After(earliestExpiry) {
				t.Fatalf("ttl %v drift %v: Until %v after the earliest node expiry %v", ttl, drift,
					until.Sub(start), earliestExpiry.Sub(start))
			}
		}
	}
}
