//go:build topology

package topology_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/quorumlock/redlock/redlocktest"
	"github.com/redis/go-redis/v9"
)

// Members that are go-redis Rings of two redis-server shards: 200
// Lock+Unlock of new names while every shard's script cache is flushed
// twice; no call fails, and every shard has served locks (the ring spread
// them) and has the scripts loaded again.
func TestRing_membersLockThroughFlushedScriptCaches(t *testing.T) {
	var shards []*redlocktest.Nodes
	clients := make([]redis.UniversalClient, 3)
	for i := range clients {
		nodes := redlocktest.Start(t, 2)
		shards = append(shards, nodes)
		ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": nodes.Addrs()[0], "b": nodes.Addrs()[1]}})
		t.Cleanup(func() { _ = ring.Close() })
		clients[i] = ring
	}
	c := newLockClient(t, clients)
	ctx := context.Background()
	flush := func() {
		for _, nodes := range shards {
			for j := range nodes.Servers {
				if err := redlocktest.FlushScripts(ctx, nodes.Admin(t, j)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for i := range 200 {
		if i == 50 || i == 150 {
			flush()
		}
		lease, err := c.Mutex(fmt.Sprintf("ring-%d", i)).Lock(ctx)
		if err == nil {
			err = lease.Unlock(ctx)
		}
		if err != nil {
			t.Fatalf("cycle %d: %v", i, err)
		}
	}
	for i, nodes := range shards {
		for j := range nodes.Servers {
			admin := nodes.Admin(t, j)
			calls := commandCalls(t, admin, "evalsha") + commandCalls(t, admin, "eval") + commandCalls(t, admin, "fcall")
			if calls == 0 {
				t.Errorf("member %d, shard %d ran no lock script: the ring did not spread the names", i, j)
			}
		}
	}
}

// commandCalls is how many times the server ran command (INFO commandstats).
func commandCalls(t *testing.T, admin *redis.Client, command string) int64 {
	t.Helper()
	stats, err := admin.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	var calls int64
	for _, line := range strings.Split(stats, "\n") {
		if _, err := fmt.Sscanf(line, "cmdstat_"+command+":calls=%d", &calls); err == nil {
			return calls
		}
	}
	return 0
}
