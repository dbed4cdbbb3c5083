//go:build topology

package topology_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/redis/go-redis/v9"
)

// Members that are go-redis Rings of two redis-server shards are refused:
// a Ring's heartbeat moves a dead shard's keys to a live one, so a lock
// would move without its lease and be granted again there (issue 40,
// row 6). New says so and names the remedy.
func TestRing_membersAreRefused(t *testing.T) {
	clients := make([]redis.UniversalClient, 3)
	for i := range clients {
		nodes := redlocktest.Start(t, 2)
		ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": nodes.Addrs()[0], "b": nodes.Addrs()[1]}})
		t.Cleanup(func() { _ = ring.Close() })
		clients[i] = ring
	}
	c, err := redlock.New(clients)
	if c != nil {
		_ = c.Close()
	}
	if !errors.Is(err, redlock.ErrConfig) || !strings.Contains(err.Error(), "Ring") || !strings.Contains(err.Error(), "Redis Cluster") {
		t.Fatalf("New over Ring members = %v; want ErrConfig naming the Ring and the remedy", err)
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
