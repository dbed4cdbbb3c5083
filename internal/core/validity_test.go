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

func TestSettings_quorumOf(t *testing.T) {
	tests := []struct {
		n, quorum, want int
	}{{1, 0, 1}, {2, 0, 2}, {3, 0, 2}, {4, 0, 3}, {5, 0, 3}, {5, 5, 5}, {5, 4, 4}}
	for _, tt := range tests {
		s := DefaultSettings()
		s.Quorum = tt.quorum
		if got := s.QuorumOf(tt.n); got != tt.want {
			t.Fatalf("quorumOf(%d) with quorum %d = %d, want %d", tt.n, tt.quorum, got, tt.want)
		}
		if err := s.Validate(tt.n); err != nil {
			t.Fatalf("valid quorum %d of %d rejected: %v", tt.quorum, tt.n, err)
		}
	}
}

func TestSettings_mutexOptionsDoNotLeakIntoDefaults(t *testing.T) {
	defaults := DefaultSettings().With([]Option{WithTTL(time.Minute)})
	overridden := defaults.With([]Option{WithTTL(time.Second), WithFencing()})
	if defaults.TTL != time.Minute || defaults.Fencing {
		t.Fatalf("defaults changed by a mutex's options: ttl %v fencing %v", defaults.TTL, defaults.Fencing)
	}
	if overridden.TTL != time.Second || !overridden.Fencing {
		t.Fatalf("mutex options not applied: ttl %v fencing %v", overridden.TTL, overridden.Fencing)
	}
}

func TestKeysFor_shareOneHashTag(t *testing.T) {
	k := KeysFor("redlock:", "orders/42", time.Second)
	for _, key := range []string{k.Lock, k.Fence, k.Queue, k.Alive, k.Channel} {
		if want := "redlock:{orders/42}"; len(key) < len(want) || key[:len(want)] != want {
			t.Fatalf("key %q does not start with %q", key, want)
		}
	}
}
