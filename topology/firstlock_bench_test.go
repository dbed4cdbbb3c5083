//go:build topology

package topology_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/redis/go-redis/v9"
)

// BenchmarkFirstLockOfANewName: TryLock and Unlock of a name never used
// before, on three plain nodes and on three declared members that are
// 3-shard Clusters (each op touches a slot's marker for the first time
// often: 16,384 slots per member).
func BenchmarkFirstLockOfANewName(b *testing.B) {
	b.Run("plain", func(b *testing.B) {
		benchNewNames(b, redlocktest.Start(b, 3).Clients(b))
	})
	b.Run("cluster", func(b *testing.B) {
		clients := make([]redis.UniversalClient, 3)
		for i := range clients {
			clients[i] = redlocktest.StartRedisCluster(b, 3).Client(b)
		}
		declareAll(b, clients)
		benchNewNames(b, clients)
	})
	b.Run("cluster-seen", func(b *testing.B) {
		clients := make([]redis.UniversalClient, 3)
		for i := range clients {
			clients[i] = redlocktest.StartRedisCluster(b, 3).Client(b)
		}
		declareAll(b, clients)
		c, err := redlock.New(clients)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		for i := range 64 {
			mustCycle(b, c, fmt.Sprintf("seen-%d", i))
		}
		for i := 0; b.Loop(); i++ {
			mustCycle(b, c, fmt.Sprintf("seen-%d", i%64))
		}
	})
}

func benchNewNames(b *testing.B, clients []redis.UniversalClient) {
	c, err := redlock.New(clients)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	mustCycle(b, c, "warm-up")
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		mustCycle(b, c, fmt.Sprintf("new-%d", i))
	}
}

func mustCycle(b *testing.B, c *redlock.Client, name string) {
	lease, err := c.Mutex(name).TryLock(context.Background())
	if err != nil {
		b.Fatalf("TryLock %q: %v", name, err)
	}
	if err := lease.Unlock(context.Background()); err != nil {
		b.Fatalf("Unlock %q: %v", name, err)
	}
}
