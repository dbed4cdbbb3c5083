package node_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock/node"
)

// A node that evicted a lock key under an evicting policy, which was then
// set back to noeviction: the marker stayed, the key did not. The next
// judgement sees the evictions the marker had not counted and keeps the
// node out for the guard, as after a flush.
func TestGuard_evictionsSeenAfterThePolicyIsSetBack(t *testing.T) {
	n, cluster := oneNode(t)
	ctx := context.Background()
	admin := cluster.Admin(t, 0)
	keys := keysOf("redlock:{evicted}")
	keys.Guard = 3 * time.Second
	if got, err := n.Acquire(ctx, nil, keys, "a", "h1", 2*time.Second); err != nil || !got.Granted {
		t.Fatalf("Acquire by a = %+v, %v", got, err)
	}
	used, err := admin.Info(ctx, "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	bytes, _ := strconv.Atoi(strings.TrimSpace(strings.Split(strings.Split(used, "used_memory:")[1], "\n")[0]))
	// volatile-ttl evicts the key with the shortest TTL first: a's lock.
	for _, kv := range [][2]string{{"maxmemory-policy", "volatile-ttl"}, {"maxmemory", strconv.Itoa(bytes + 200_000)}} {
		if err := admin.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; admin.Exists(ctx, keys.Lock).Val() == 1; i++ {
		if i > 10_000 {
			t.Fatal("the lock key was never evicted")
		}
		admin.Set(ctx, "tenant:"+strconv.Itoa(i), strings.Repeat("x", 1000), time.Hour) // errors once full: fine
	}
	for _, kv := range [][2]string{{"maxmemory", "0"}, {"maxmemory-policy", "noeviction"}} {
		if err := admin.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(1100 * time.Millisecond) // past the once-a-second judgement
	got, err := n.Acquire(ctx, nil, keys, "b", "h2", time.Second)
	var q *node.Quarantine
	if !errors.As(err, &q) || q.Why != node.WhyFlushed {
		t.Fatalf("Acquire by b after a's key was evicted = %+v, %v; want the flush rule", got, err)
	}
}
