package core

import (
	"testing"
	"time"
)

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
