//go:build topology

package topology_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest"
)

// lockAll locks n names "<prefix>-<i>" with c, unlocked at cleanup.
func lockAll(t *testing.T, c *redlock.Client, prefix string, n int) ([]string, []*redlock.Lease) {
	t.Helper()
	ctx := context.Background()
	names, leases := make([]string, n), make([]*redlock.Lease, n)
	for i := range n {
		names[i] = fmt.Sprintf("%s-%d", prefix, i)
		l, err := c.Mutex(names[i]).Lock(ctx)
		if err != nil {
			t.Fatalf("Lock %s: %v", names[i], err)
		}
		leases[i] = l
		t.Cleanup(func() { _ = l.Unlock(context.Background()) })
	}
	return names, leases
}

// scriptCalls sums the script calls every shard of m has counted.
func scriptCalls(t *testing.T, m *redlocktest.RedisCluster) int64 {
	t.Helper()
	var sum int64
	for i := range m.Shards {
		sum += redlocktest.ScriptCalls(t, m.Admin(t, i))
	}
	return sum
}

// The watchdog renews the leases of a Cluster member in one call per
// shard, as a plain node's in one call: 300 leases renewed every 500 ms
// for 3 s cost each member a few dozen calls, not one per lease (1,800).
func TestCluster_renewalsBatchedPerShard(t *testing.T) {
	members, clients := clusterMembers(t, 3)
	declare(t, clients)
	ttl := 1500 * time.Millisecond
	holder := newLockClient(t, clients, redlock.WithTTL(ttl))
	_, leases := lockAll(t, holder, "batched", 300)
	before := scriptCalls(t, members[0])
	time.Sleep(3 * time.Second)
	calls := scriptCalls(t, members[0]) - before
	for i, l := range leases {
		if err := l.Context().Err(); err != nil {
			t.Fatalf("lease %d lost: %v", i, context.Cause(l.Context()))
		}
	}
	// 6 periods, batches of up to 300 leases cut into 3 shards' calls (and
	// a period's leases may fall due in a few batches).
	if calls > 150 {
		t.Errorf("member 0 took %d script calls to renew 300 leases for 6 periods: want one per shard per batch", calls)
	}
	t.Logf("member 0: %d script calls for 300 leases over 3 s", calls)
}

// Slots move between a member's shards (as `redis-cli --cluster reshard`
// moves them: IMPORTING, MIGRATING, MIGRATE, SETSLOT NODE) while the
// leases in them renew in per-shard batches. No lease is lost, none can
// be taken by another Client meanwhile, and the renewals reach each moved
// lock where it now lives.
func TestCluster_slotMovesWhileItsLeasesRenew(t *testing.T) {
	members, clients := clusterMembers(t, 3)
	declare(t, clients)
	ttl := 1500 * time.Millisecond
	holder := newLockClient(t, clients, redlock.WithTTL(ttl))
	rival := newLockClient(t, clients, redlock.WithTTL(ttl))
	names, leases := lockAll(t, holder, "moved", 300)
	ctx := context.Background()
	m := members[0]
	slots := make([]int, 2)
	for i := range slots {
		slot, err := m.Admin(t, 0).ClusterKeySlot(ctx, redlock.DefaultKeyPrefix+"{"+names[i]+"}").Result()
		if err != nil {
			t.Fatal(err)
		}
		slots[i] = int(slot)
	}
	for _, slot := range slots {
		m.MoveSlot(t, slot, (m.ShardOf(slot)+1)%3)
	}
	// Nothing else touches the moved keys here (a call of one slot would
	// refresh the client's slot map by its MOVED): only the renewals,
	// which must find each moved lock where it now lives.
	// Renewed every TTL/3, each lock keeps more than TTL/5 there once a
	// renewal in flight at the move has had its retry (TTL/10 on).
	time.Sleep(ttl / 3)
	for end := time.Now().Add(3 * ttl); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		for i, slot := range slots {
			key := redlock.DefaultKeyPrefix + "{" + names[i] + "}"
			if pttl, err := m.Admin(t, m.ShardOf(slot)).PTTL(ctx, key).Result(); err != nil || pttl < ttl/5 {
				t.Fatalf("%s moved to shard %d: PTTL %v (%v): its renewals did not reach it there", key, m.ShardOf(slot), pttl, err)
			}
		}
	}
	tryRivals(t, rival, names)
	for i, l := range leases {
		if err := l.Context().Err(); err != nil {
			t.Errorf("lease %s lost: %v", names[i], context.Cause(l.Context()))
		}
	}
}

// tryRivals fails t for any name rival can lock.
func tryRivals(t *testing.T, rival *redlock.Client, names []string) {
	t.Helper()
	for _, name := range names {
		if l, err := rival.Mutex(name).TryLock(context.Background()); err == nil {
			_ = l.Unlock(context.Background())
			t.Errorf("%s locked by a second Client while its lease was held", name)
		}
	}
}
