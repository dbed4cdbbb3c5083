package redlocktest

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock/redlocktest/redisproc"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// RedisCluster is one Redis Cluster of shards (masters, no replicas), each
// a redis-server process with cluster-enabled yes, the 16,384 slots dealt
// in equal ranges: one member of a lock's set, as users run it.
type RedisCluster struct {
	Shards []*redisproc.Server
	// Ranges[i] is the first and last slot of shard i as dealt at the
	// start; Moved the slots MoveSlot gave another shard since.
	Ranges [][2]int
	Moved  map[int]int
}

// StartRedisCluster starts a Redis Cluster of shards masters, brand-new and
// undeclared (nobody ran `redlock init` on it), and waits until every
// shard says cluster_state:ok. Killed by t.Cleanup.
func StartRedisCluster(t testing.TB, shards int, args ...string) *RedisCluster {
	t.Helper()
	binary := RequireRedis(t)
	base := t.TempDir()
	rc := &RedisCluster{}
	for i := range shards {
		server, err := redisproc.Start(redisproc.Config{
			Dir:    filepath.Join(base, fmt.Sprintf("shard%d", i)),
			Binary: binary, Undeclared: true,
			Args: append([]string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
				"--cluster-node-timeout", "2000"}, args...),
		})
		if err != nil {
			t.Fatalf("redlocktest: start shard %d: %v", i, err)
		}
		t.Cleanup(func() { _ = server.Kill() })
		first, last := i*16384/shards, (i+1)*16384/shards-1
		rc.Shards, rc.Ranges = append(rc.Shards, server), append(rc.Ranges, [2]int{first, last})
	}
	rc.join(t)
	return rc
}

// join gives each shard its slots, introduces every shard to the first,
// and waits for the cluster to agree.
func (rc *RedisCluster) join(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	for i, s := range rc.Shards {
		admin := newClient(t, s.Addr(), adminTimeout)
		if err := admin.ClusterAddSlotsRange(ctx, rc.Ranges[i][0], rc.Ranges[i][1]).Err(); err != nil {
			t.Fatalf("redlocktest: shard %d: CLUSTER ADDSLOTSRANGE: %v", i, err)
		}
		if i > 0 {
			if err := admin.ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(rc.Shards[0].Port())).Err(); err != nil {
				t.Fatalf("redlocktest: shard %d: CLUSTER MEET: %v", i, err)
			}
		}
	}
	rc.WaitOK(t)
}

// WaitOK waits until every running shard says cluster_state:ok and knows
// every other shard.
func (rc *RedisCluster) WaitOK(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(20 * time.Second)
	for i, s := range rc.Shards {
		admin := newClient(t, s.Addr(), adminTimeout)
		for {
			info, _ := admin.ClusterInfo(ctx).Result()
			if strings.Contains(info, "cluster_state:ok") &&
				strings.Contains(info, fmt.Sprintf("cluster_known_nodes:%d", len(rc.Shards))) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("redlocktest: shard %d not ready: %s", i, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// Addrs returns "127.0.0.1:PORT" of every shard.
func (rc *RedisCluster) Addrs() []string {
	addrs := make([]string, len(rc.Shards))
	for i, s := range rc.Shards {
		addrs[i] = s.Addr()
	}
	return addrs
}

// Client returns a ClusterClient of the cluster, timeouts as Clients',
// closed by t.Cleanup.
func (rc *RedisCluster) Client(t testing.TB) *redis.ClusterClient {
	t.Helper()
	client := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                    rc.Addrs(),
		DialTimeout:              clientTimeout,
		ReadTimeout:              clientTimeout,
		WriteTimeout:             clientTimeout,
		ContextTimeoutEnabled:    true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// ShardOf returns the index of the shard that serves slot.
func (rc *RedisCluster) ShardOf(slot int) int {
	if to, ok := rc.Moved[slot]; ok {
		return to
	}
	for i, r := range rc.Ranges {
		if slot >= r[0] && slot <= r[1] {
			return i
		}
	}
	return -1
}

// Admin returns a plain client of shard i (2 s timeouts), closed by
// t.Cleanup.
func (rc *RedisCluster) Admin(t testing.TB, i int) *redis.Client {
	t.Helper()
	return newClient(t, rc.Shards[i].Addr(), adminTimeout)
}

// MoveSlot moves slot, keys and all, to shard to, as `redis-cli --cluster
// reshard` does: IMPORTING on the target, MIGRATING on the source, MIGRATE
// of its keys a few at a time, then SETSLOT NODE on every shard. Clients
// see ASK and TRYAGAIN meanwhile, and MOVED after.
func (rc *RedisCluster) MoveSlot(t testing.TB, slot, to int) {
	t.Helper()
	ctx := context.Background()
	from := rc.ShardOf(slot)
	src, dst := rc.Admin(t, from), rc.Admin(t, to)
	srcID, err1 := src.ClusterMyID(ctx).Result()
	dstID, err2 := dst.ClusterMyID(ctx).Result()
	must(t, "CLUSTER MYID", err1, err2)
	must(t, "SETSLOT IMPORTING", dst.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID).Err())
	must(t, "SETSLOT MIGRATING", src.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID).Err())
	for {
		keys, err := src.ClusterGetKeysInSlot(ctx, slot, 4).Result()
		must(t, "GETKEYSINSLOT", err)
		if len(keys) == 0 {
			break
		}
		args := []any{"MIGRATE", "127.0.0.1", rc.Shards[to].Port(), "", 0, 5000, "KEYS"}
		for _, key := range keys {
			args = append(args, key)
		}
		must(t, "MIGRATE", src.Do(ctx, args...).Err())
	}
	for _, i := range []int{to, from} {
		must(t, "SETSLOT NODE", rc.Admin(t, i).Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", dstID).Err())
	}
	for i := range rc.Shards {
		if i != to && i != from {
			must(t, "SETSLOT NODE", rc.Admin(t, i).Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", dstID).Err())
		}
	}
	if rc.Moved == nil {
		rc.Moved = map[int]int{}
	}
	rc.Moved[slot] = to
}

// must fails t with what when any err is not nil.
func must(t testing.TB, what string, errs ...error) {
	t.Helper()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("redlocktest: %s: %v", what, err)
		}
	}
}

// ScriptCalls is how many scripts (EVAL, EVALSHA, FCALL) the server of
// admin ran since its start, from INFO commandstats (tests take
// differences: CONFIG RESETSTAT would keep a node out for the restart
// guard, since it hides a flush).
func ScriptCalls(t testing.TB, admin *redis.Client) int64 {
	t.Helper()
	info, err := admin.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatalf("redlocktest: INFO commandstats: %v", err)
	}
	var total int64
	for _, cmd := range []string{"eval", "evalsha", "fcall"} {
		_, rest, ok := strings.Cut(info, "\ncmdstat_"+cmd+":calls=")
		if !ok {
			continue
		}
		calls, _, _ := strings.Cut(rest, ",")
		n, err := strconv.ParseInt(calls, 10, 64)
		if err != nil {
			t.Fatalf("redlocktest: INFO commandstats: %s calls %q: %v", cmd, calls, err)
		}
		total += n
	}
	return total
}
