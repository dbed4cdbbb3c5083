package node_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/redis/go-redis/v9"
)

// On a Redis Cluster member a batch of renewals spanning every shard goes
// as one call per shard, each item answered; a shard that is down fails
// its own items only.
func TestRenewEach_oneCallPerShardAndAShardFailsItsOwnItems(t *testing.T) {
	rc := redlocktest.StartRedisCluster(t, 3)
	client := rc.Client(t)
	ctx := context.Background()
	if err := node.DeclareSet(ctx, []redis.Scripter{client}, "redlock:"); err != nil {
		t.Fatal(err)
	}
	n := node.New(0, "cluster", client)
	t.Cleanup(n.Wait)
	var batch []node.Renewal
	shardOf := make([]int, 60)
	for i := range shardOf {
		keys := keysOf(fmt.Sprintf("redlock:{renew-%d}", i))
		keys.Guard = time.Second
		if got, err := n.Acquire(ctx, nil, keys, "o", "h", time.Minute); err != nil || !got.Granted {
			t.Fatalf("acquire %s: %+v, %v", keys.Lock, got, err)
		}
		slot, err := rc.Admin(t, 0).ClusterKeySlot(ctx, keys.Lock).Result()
		if err != nil {
			t.Fatal(err)
		}
		shardOf[i] = rc.ShardOf(int(slot))
		batch = append(batch, node.Renewal{Keys: keys, Owner: "o", Hold: "h", TTL: time.Minute})
	}
	before := redlocktest.ScriptCalls(t, rc.Admin(t, 0))
	renewed, errs := n.RenewEach(ctx, batch)
	if calls := redlocktest.ScriptCalls(t, rc.Admin(t, 0)) - before; calls != 1 {
		t.Errorf("shard 0 ran %d script calls for its part of one batch; want 1", calls)
	}
	for i := range batch {
		if errs[i] != nil || renewed[i] != node.Refreshed {
			t.Fatalf("item %d (shard %d): %v, %v; want refreshed", i, shardOf[i], renewed[i], errs[i])
		}
	}
	if err := rc.Shards[2].Kill(); err != nil {
		t.Fatal(err)
	}
	shortCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	renewed, errs = n.RenewEach(shortCtx, batch)
	for i := range batch {
		switch down := shardOf[i] == 2; {
		case down && errs[i] == nil:
			t.Errorf("item %d on the killed shard answered %v", i, renewed[i])
		case !down && (errs[i] != nil || renewed[i] != node.Refreshed):
			t.Errorf("item %d (shard %d) failed with the killed shard: %v, %v", i, shardOf[i], renewed[i], errs[i])
		}
	}
}
