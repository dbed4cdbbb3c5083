package node_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock/node"
)

// permits.lua stores a count for the life asked, lengthens the life of an
// equal count (never shortens it, and gives one to a count stored without
// expiry), and leaves another count and its life alone.
func TestPermits_countLivesWhileUsed(t *testing.T) {
	n, cluster := oneNode(t)
	ctx := context.Background()
	admin := cluster.Admin(t, 0)
	keys := node.Keys{Lock: "redlock:{s}:permits", Marker: "redlock:node"}
	life := func() time.Duration {
		t.Helper()
		pttl, err := admin.PTTL(ctx, keys.Lock).Result()
		if err != nil {
			t.Fatal(err)
		}
		return pttl
	}
	steps := []struct {
		permits  int
		life     time.Duration
		want     int
		min, max time.Duration // the count's life after the call
	}{
		{2, time.Second, 2, 900 * time.Millisecond, time.Second},          // stored
		{2, 10 * time.Second, 2, 9 * time.Second, 10 * time.Second},       // lengthened
		{2, time.Second, 2, 9 * time.Second, 10 * time.Second},            // not shortened
		{3, 100 * time.Second, 2, 9 * time.Second, 10 * time.Second},      // another count: left alone
		{2, 100 * time.Millisecond, 2, 9 * time.Second, 10 * time.Second}, // still not shortened
	}
	for i, step := range steps {
		got, err := n.Permits(ctx, keys, step.permits, step.life)
		if left := life(); err != nil || got != step.want || left < step.min || left > step.max {
			t.Fatalf("step %d: Permits(%d, %v) = %d, %v, life %v; want %d, life in [%v, %v]",
				i, step.permits, step.life, got, err, left, step.want, step.min, step.max)
		}
	}
	if err := admin.Set(ctx, keys.Lock, "2", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := n.Permits(ctx, keys, 2, time.Second); err != nil || got != 2 || life() <= 0 || life() > time.Second {
		t.Fatalf("a count stored without expiry: %d, %v, life %v; want 2 with a life of at most 1s", got, err, life())
	}
}

// leader.lua keeps a record for the life asked while its term publishes
// it (never shortening it); an earlier term changes neither the record nor
// its life; a later term replaces it, with its own life.
func TestPublish_recordLivesWhileItsLeaderPublishes(t *testing.T) {
	n, cluster := oneNode(t)
	ctx := context.Background()
	admin := cluster.Admin(t, 0)
	const key = "redlock:{e}:leader"
	owner := strings.Repeat("a", 16)
	steps := []struct {
		term     uint64
		life     time.Duration
		want     uint64
		min, max time.Duration // the record's life after the call
	}{
		{5, time.Second, 5, 900 * time.Millisecond, time.Second},
		{5, 10 * time.Second, 5, 9 * time.Second, 10 * time.Second},
		{5, time.Second, 5, 9 * time.Second, 10 * time.Second},
		{4, 100 * time.Second, 5, 9 * time.Second, 10 * time.Second},
		{6, time.Second, 6, 900 * time.Millisecond, time.Second},
	}
	for i, step := range steps {
		got, err := n.Publish(ctx, key, node.Record{Term: step.term, Owner: owner, Value: "v"}, step.life)
		left, pttlErr := admin.PTTL(ctx, key).Result()
		if err != nil || pttlErr != nil || got != step.want || left < step.min || left > step.max {
			t.Fatalf("step %d: Publish(term %d, %v) = %d, %v, life %v (%v); want %d, life in [%v, %v]",
				i, step.term, step.life, got, err, left, pttlErr, step.want, step.min, step.max)
		}
	}
}
