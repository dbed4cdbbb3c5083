package reentrant

import (
	"context"
	"strings"
	"sync"
	"testing"
)

func TestNewID_uniqueAndUnguessable(t *testing.T) {
	const goroutines, perGoroutine = 8, 1000
	ids := make(chan string, goroutines*perGoroutine)
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range perGoroutine {
				ids <- NewID()
			}
		})
	}
	wg.Wait()
	close(ids)
	seen := make(map[string]bool)
	for id := range ids {
		if seen[id] {
			t.Fatalf("duplicate id %q", id)
		}
		seen[id] = true
		random, _, ok := strings.Cut(id, ":")
		if !ok || len(random) != 32 {
			t.Fatalf("id %q: want 32 hex digits of randomness before ':'", id)
		}
	}
}

func TestNewProcessID_differsBetweenDraws(t *testing.T) {
	if newProcessID() == newProcessID() {
		t.Fatal("two draws of 128 random bits were equal")
	}
}

func TestOwner_carriedByContext(t *testing.T) {
	tests := []struct {
		name      string
		ctx       context.Context
		wantOwner string
		wantOK    bool
	}{
		{"none", context.Background(), "", false},
		{"set", WithOwner(context.Background(), "request-42"), "request-42", true},
		{"innermost wins", WithOwner(WithOwner(context.Background(), "a"), "b"), "b", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			owner, ok := Owner(tt.ctx)
			if owner != tt.wantOwner || ok != tt.wantOK {
				t.Fatalf("Owner() = %q, %v; want %q, %v", owner, ok, tt.wantOwner, tt.wantOK)
			}
		})
	}
}
