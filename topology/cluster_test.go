//go:build topology

package topology_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/redis/go-redis/v9"
)

// clusterMembers starts n members, each a brand-new Redis Cluster of 3
// shards, and returns them with a ClusterClient of each.
func clusterMembers(t *testing.T, n int) ([]*redlocktest.RedisCluster, []redis.UniversalClient) {
	t.Helper()
	members := make([]*redlocktest.RedisCluster, n)
	clients := make([]redis.UniversalClient, n)
	for i := range n {
		members[i] = redlocktest.StartRedisCluster(t, 3)
		clients[i] = members[i].Client(t)
	}
	return members, clients
}

// declare runs what `redlock init` runs on the members.
func declare(t *testing.T, clients []redis.UniversalClient) { declareAll(t, clients) }

func declareAll(t testing.TB, clients []redis.UniversalClient) {
	t.Helper()
	scripters := make([]redis.Scripter, len(clients))
	for i, c := range clients {
		scripters[i] = c
	}
	if err := node.DeclareSet(context.Background(), scripters, redlock.DefaultKeyPrefix); err != nil {
		t.Fatalf("declaring the Cluster members: %v", err)
	}
}

func newLockClient(t *testing.T, clients []redis.UniversalClient, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	c, err := redlock.New(clients, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// A brand-new Cluster member does not vote for a slot it cannot prove
// unseen, and says to run init; after init, every new name's first
// TryLock is granted at once (no slot waits out a guard) and unlocks.
func TestCluster_newNamesVoteAtOnceAfterInit(t *testing.T) {
	_, clients := clusterMembers(t, 3)
	c := newLockClient(t, clients)
	ctx := context.Background()
	_, err := c.Mutex("before-init").TryLock(ctx)
	if !errors.Is(err, redlock.ErrQuarantined) || !strings.Contains(err.Error(), "redlock init") {
		t.Fatalf("TryLock on undeclared Cluster members: %v; want ErrQuarantined naming redlock init", err)
	}
	declare(t, clients)
	for i := range 200 {
		lease, err := c.Mutex(fmt.Sprintf("new-%d", i)).TryLock(ctx)
		if err != nil {
			t.Fatalf("first TryLock of new name %d after init: %v", i, err)
		}
		if err := lease.Unlock(ctx); err != nil {
			t.Fatalf("Unlock of new name %d: %v", i, err)
		}
	}
}

// 1,000 Lock+Unlock by 8 workers on new names, while every shard's script
// cache and Functions are flushed twice (as a restart without persistence
// empties them): no call fails, NOSCRIPT, function not found or otherwise.
func TestCluster_noCallFailsForTheScriptCache(t *testing.T) {
	members, clients := clusterMembers(t, 3)
	declare(t, clients)
	c := newLockClient(t, clients)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < 1000; i += 8 {
				if i == 300 || i == 700 {
					flushScripts(t, members)
				}
				lease, err := c.Mutex(fmt.Sprintf("n-%d", i)).Lock(ctx)
				if err == nil {
					err = lease.Unlock(ctx)
				}
				if err != nil {
					errs <- fmt.Errorf("cycle %d: %w", i, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// The calls went as functions of the library, loaded on every shard
	// again after each flush.
	for i, m := range members {
		for j := range m.Shards {
			if commandCalls(t, m.Admin(t, j), "fcall") == 0 {
				t.Errorf("member %d, shard %d ran no FCALL", i, j)
			}
		}
	}
}

func flushScripts(t *testing.T, members []*redlocktest.RedisCluster) {
	for _, m := range members {
		for j := range m.Shards {
			if err := redlocktest.FlushScripts(context.Background(), m.Admin(t, j)); err != nil {
				t.Errorf("SCRIPT FLUSH, FUNCTION FLUSH: %v", err)
			}
		}
	}
}

// namesOnShard returns n lock names whose keys hash to the slots of shard
// j of member m.
func namesOnShard(t *testing.T, m *redlocktest.RedisCluster, j, n int, tag string) []string {
	t.Helper()
	var names []string
	for i := 0; len(names) < n; i++ {
		name := fmt.Sprintf("%s-%d", tag, i)
		slot, err := m.Admin(t, j).ClusterKeySlot(context.Background(), name).Result()
		if err != nil {
			t.Fatal(err)
		}
		if m.ShardOf(int(slot)) == j {
			names = append(names, name)
		}
	}
	return names
}

// A shard restarted empty under a live lease does not vote for any of its
// slots until the guard has passed since its start: with the lock's shard
// restarted on two of three members, nobody else gets the lock while the
// lease lasts; once the guard has passed the restarted shards vote again.
func TestCluster_shardRestartedEmptyUnderALiveLease(t *testing.T) {
	const ttl = 3 * time.Second
	members, clients := clusterMembers(t, 3)
	declare(t, clients)
	ctx := context.Background()
	name := namesOnShard(t, members[0], 1, 1, "held")[0]
	holder := newLockClient(t, clients, redlock.WithTTL(ttl), redlock.WithWatchdog(false))
	if _, err := holder.Mutex(name).Lock(ctx); err != nil {
		t.Fatal(err)
	}
	validUntil := time.Now().Add(ttl)
	for _, m := range members[:2] {
		if err := m.Shards[1].Restart(false); err != nil {
			t.Fatal(err)
		}
		m.WaitOK(t)
	}
	other := newLockClient(t, clients, redlock.WithTTL(ttl))
	deadline := time.Now().Add(ttl + 10*time.Second)
	for {
		lease, err := other.Mutex(name).TryLock(ctx)
		if err == nil {
			if time.Now().Before(validUntil) {
				t.Fatalf("a second owner got %q %v before the first lease ended", name, time.Until(validUntil))
			}
			_ = lease.Unlock(ctx)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the restarted shards did not vote again a guard after their start: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A shard restarted empty votes, once the guard has passed since its
// start, for slots it has never seen (nothing came to it since from
// elsewhere): no new name waits out a guard of its own. Before that, it
// says it restarted.
func TestCluster_restartedShardVotesForUnseenSlotsAfterItsGuard(t *testing.T) {
	const ttl = 5 * time.Second
	members, clients := clusterMembers(t, 1)
	declare(t, clients)
	c := newLockClient(t, clients, redlock.WithTTL(ttl))
	ctx := context.Background()
	names := namesOnShard(t, members[0], 0, 20, "unseen")
	restarted := time.Now()
	if err := members[0].Shards[0].Restart(false); err != nil {
		t.Fatal(err)
	}
	members[0].WaitOK(t)
	_, err := c.Mutex(names[0]).TryLock(ctx)
	var q *node.Quarantine
	if !errors.As(err, &q) || q.Why != node.WhyNew {
		t.Fatalf("TryLock %v after the shard's restart: %v; want a quarantine, new since its start",
			time.Since(restarted), err)
	}
	time.Sleep(time.Until(q.Until) + 100*time.Millisecond)
	for _, name := range names[1:] {
		lease, err := c.Mutex(name).TryLock(ctx)
		if err != nil {
			t.Fatalf("TryLock of %q, a slot the restarted shard never saw, a guard after its start: %v", name, err)
		}
		_ = lease.Unlock(ctx)
	}
}

// Each shard of a Cluster member runs its slots' scripts on its own clock,
// and each is checked: a shard whose clock runs ten times fast does not
// count (a *ClockQuarantine), while the true shards of the same member
// grant.
func TestCluster_clockCheckedShardByShard(t *testing.T) {
	libfaketime := redlocktest.RequireFaketime(t)
	members, clients := clusterMembers(t, 1)
	declare(t, clients)
	fast := members[0].Shards[2]
	fast.SetEnv(redlocktest.FastClock(libfaketime, 10))
	if err := fast.Restart(false); err != nil {
		t.Fatal(err)
	}
	members[0].WaitOK(t)
	c := newLockClient(t, clients, redlock.WithTTL(time.Second))
	ctx := context.Background()
	for _, name := range namesOnShard(t, members[0], 0, 3, "true") {
		lease, err := c.Mutex(name).TryLock(ctx)
		if err != nil {
			t.Fatalf("TryLock of %q on a shard with a true clock: %v", name, err)
		}
		_ = lease.Unlock(ctx)
	}
	name := namesOnShard(t, members[0], 2, 1, "fast")[0]
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		lease, err := c.Mutex(name).TryLock(ctx)
		var q *node.ClockQuarantine
		switch {
		case err == nil:
			_ = lease.Unlock(ctx)
			t.Fatalf("TryLock of %q granted by a shard whose clock runs ten times fast", name)
		case errors.As(err, &q):
			return
		case time.Now().After(deadline):
			t.Fatalf("TryLock of %q on the fast shard: %v; want a *ClockQuarantine", name, err)
		}
	}
}

// Dial takes a Cluster member as redis+cluster://host:port?addr=...: the
// lock is taken on a Cluster client (its key is found on the shard of its
// slot), and a malformed one is ErrConfig.
func TestCluster_dialClusterURLs(t *testing.T) {
	members, clients := clusterMembers(t, 3)
	declare(t, clients)
	urls := make([]string, len(members))
	for i, m := range members {
		addrs := m.Addrs()
		urls[i] = "redis+cluster://" + addrs[0] + "?addr=" + addrs[1]
	}
	c, err := redlock.Dial(urls)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	name := namesOnShard(t, members[0], 2, 1, "dialed")[0]
	lease, err := c.Mutex(name).TryLock(ctx)
	if err != nil {
		t.Fatalf("TryLock through Dial's Cluster URLs: %v", err)
	}
	defer lease.Unlock(ctx)
	// TryLock returns once a quorum granted; the third grant may still be
	// on its way.
	for i, m := range members {
		slot, _ := m.Admin(t, 0).ClusterKeySlot(ctx, name).Result()
		shard := m.Admin(t, m.ShardOf(int(slot)))
		n, err := int64(0), error(nil)
		for deadline := time.Now().Add(2 * time.Second); n != 1 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			n, err = shard.Exists(ctx, redlock.DefaultKeyPrefix+"{"+name+"}").Result()
		}
		if err != nil || n != 1 {
			t.Errorf("member %d: the lock's key is not on the shard of its slot: %d, %v", i, n, err)
		}
	}
	if _, err := redlock.Dial([]string{"redis+cluster://u:secret@127.0.0.1:1?nonsense=1"}); !errors.Is(err, redlock.ErrConfig) ||
		strings.Contains(err.Error(), "secret") {
		t.Fatalf("Dial of a malformed Cluster URL: %v; want ErrConfig without the password", err)
	}
}

// init on Cluster members that serve a lock declares none: the shard that
// holds it names its key (or a slot marker that voted within its guard).
func TestCluster_initRefusesMembersInUse(t *testing.T) {
	_, clients := clusterMembers(t, 3)
	declareAll(t, clients)
	c := newLockClient(t, clients)
	if _, err := c.Mutex("in-use").TryLock(context.Background()); err != nil {
		t.Fatal(err)
	}
	scripters := make([]redis.Scripter, len(clients))
	for i, client := range clients {
		scripters[i] = client
	}
	err := node.DeclareSet(context.Background(), scripters, redlock.DefaultKeyPrefix)
	var refused *node.SetRefused
	if !errors.As(err, &refused) || refused.Declared != 0 || !errors.Is(err, node.ErrNotNew) ||
		!strings.Contains(err.Error(), "in-use") && !strings.Contains(err.Error(), "voted so recently") {
		t.Fatalf("init on members in use: %v; want none declared, the lock's key or a live marker named", err)
	}
}
