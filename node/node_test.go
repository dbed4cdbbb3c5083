package node_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/redlocktest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func oneNode(t *testing.T) (*node.Node, *redlocktest.Nodes) {
	t.Helper()
	cluster := redlocktest.Start(t, 1)
	n := node.New(0, cluster.Addrs()[0], cluster.Clients(t)[0])
	t.Cleanup(n.Wait) // stops its prober, if the node went down
	return n, cluster
}

func TestAcquireReleaseCycle(t *testing.T) {
	n, cluster := oneNode(t)
	ctx := context.Background()
	admin := cluster.Admin(t, 0)
	const key = "redlock:{x}"

	got, err := n.Acquire(ctx, nil, keysOf(key), "owner-a", "hold-1", time.Second)
	if err != nil || !got.Granted || got.Holds != 1 {
		t.Fatalf("first acquire = %+v, %v; want granted, 1 hold", got, err)
	}
	// The same hold again is idempotent; a second hold of the owner re-enters.
	if got, err = n.Acquire(ctx, nil, keysOf(key), "owner-a", "hold-1", time.Second); err != nil || got.Holds != 1 {
		t.Fatalf("repeated hold = %+v, %v; want still 1 hold", got, err)
	}
	if got, err = n.Acquire(ctx, nil, keysOf(key), "owner-a", "hold-2", time.Second); err != nil || got.Holds != 2 {
		t.Fatalf("re-entry = %+v, %v; want 2 holds", got, err)
	}
	other, err := n.Acquire(ctx, nil, keysOf(key), "owner-b", "hold-3", time.Second)
	if err != nil || other.Granted || other.PTTL <= 0 || other.PTTL > time.Second || len(other.Holder) != 16 {
		t.Fatalf("other owner = %+v, %v; want refused with the holder's PTTL", other, err)
	}

	steps := []struct {
		owner, hold string
		want        node.Released
	}{
		{"owner-b", "hold-3", node.OtherOwner},
		{"owner-a", "hold-9", node.HoldAbsent},
		{"owner-a", "hold-1", node.HoldDropped},
		{"owner-a", "hold-1", node.HoldAbsent}, // twice is harmless
		{"owner-a", "hold-2", node.LockDeleted},
		{"owner-a", "hold-2", node.HoldAbsent},
	}
	for _, step := range steps {
		got, err := release(ctx, n, keysOf(key), step.owner, step.hold, 0)
		if err != nil || got != step.want {
			t.Fatalf("release %s/%s = %v, %v; want %v", step.owner, step.hold, got, err, step.want)
		}
	}
	if exists, _ := admin.Exists(ctx, key).Result(); exists != 0 {
		t.Fatal("lock key left after the last release")
	}
}

func TestAcquire_neverShortensTheKey(t *testing.T) {
	n, cluster := oneNode(t)
	ctx := context.Background()
	if _, err := n.Acquire(ctx, nil, keysOf("k"), "o", "h1", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Acquire(ctx, nil, keysOf("k"), "o", "h2", 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if pttl, _ := cluster.Admin(t, 0).PTTL(ctx, "k").Result(); pttl < 9*time.Second {
		t.Fatalf("PTTL %v after a shorter re-entry, want the outer 10s kept", pttl)
	}
}

func TestRenew_batchRepairsAndRefuses(t *testing.T) {
	n, cluster := oneNode(t)
	ctx := context.Background()
	admin := cluster.Admin(t, 0)
	if _, err := n.Acquire(ctx, nil, keysOf("mine"), "a", "h1", time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Acquire(ctx, nil, keysOf("theirs"), "b", "h2", time.Second); err != nil {
		t.Fatal(err)
	}
	if err := admin.HSet(ctx, "foreign", "x", "1").Err(); err != nil {
		t.Fatal(err)
	}
	got, err := n.Renew(ctx, []node.Renewal{
		{Keys: keysOf("mine"), Owner: "a", Hold: "h1", TTL: 5 * time.Second},
		{Keys: keysOf("lost"), Owner: "a", Hold: "h3", TTL: 5 * time.Second}, // restarted empty: repaired
		{Keys: keysOf("theirs"), Owner: "a", Hold: "h4", TTL: 5 * time.Second},
		{Keys: keysOf("foreign"), Owner: "a", Hold: "h5", TTL: 5 * time.Second},
	})
	want := []node.Renewed{node.Refreshed, node.Refreshed, node.Taken, node.NotALock}
	if err != nil || len(got) != len(want) {
		t.Fatalf("Renew = %v, %v", got, err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("item %d: %v, want %v", i, got[i], want[i])
		}
	}
	if pttl, _ := admin.PTTL(ctx, "mine").Result(); pttl < 4*time.Second {
		t.Fatalf("renewed PTTL %v, want about 5s", pttl)
	}
	if owner, _ := admin.HGet(ctx, "lost", "owner").Result(); owner != "a" {
		t.Fatalf("repaired key owner %q, want a", owner)
	}
}

func TestWrongTypeIsAnError(t *testing.T) {
	n, cluster := oneNode(t)
	ctx := context.Background()
	if err := cluster.Admin(t, 0).Set(ctx, "str", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Acquire(ctx, nil, keysOf("str"), "o", "h", time.Second); !errors.Is(err, node.ErrKeyConflict) ||
		!node.Answered(err) || !strings.Contains(err.Error(), "str") {
		t.Fatalf("acquire on a string key: %v; want an answered ErrKeyConflict naming the key", err)
	}
	if _, err := release(ctx, n, keysOf("str"), "o", "h", 0); err == nil {
		t.Fatal("release on a string key: no error")
	}
	if _, err := n.Renew(ctx, []node.Renewal{{Keys: keysOf("str"), Owner: "o", Hold: "h", TTL: time.Second}}); err == nil {
		t.Fatal("renew on a string key: no error")
	}
	if err := cluster.Admin(t, 0).HSet(ctx, "hash", "x", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Acquire(ctx, nil, keysOf("hash"), "o", "h", time.Second); !errors.Is(err, node.ErrKeyConflict) {
		t.Fatalf("acquire on a hash that is not a lock: %v; want ErrKeyConflict", err)
	}
}

func TestScriptFlushFallsBackToEval(t *testing.T) {
	n, cluster := oneNode(t)
	ctx := context.Background()
	for range 3 {
		if err := redlocktest.FlushScripts(ctx, cluster.Admin(t, 0)); err != nil {
			t.Fatal(err)
		}
		got, err := n.Acquire(ctx, nil, keysOf("k"), "o", "h", time.Second)
		if err != nil || !got.Granted {
			t.Fatalf("acquire after SCRIPT FLUSH = %+v, %v", got, err)
		}
		if _, err := release(ctx, n, keysOf("k"), "o", "h", 0); err != nil {
			t.Fatalf("release after SCRIPT FLUSH: %v", err)
		}
	}
}

// keysOf names the keys of the lock at key, as the root package does.
// fenceKeys are the keys of a fence read of counter key.
func fenceKeys(key string) node.Keys {
	keys := keysOf("unused")
	keys.Fence = key
	return keys
}

func keysOf(key string) node.Keys {
	return node.Keys{Lock: key, Gone: key + ":gone", Fence: key + ":fence", Queue: key + ":queue", Alive: key + ":alive", Wake: key + ":wake",
		Marker: "redlock:node"}
}

// release is Node.Release without the next waiter's name.
func release(ctx context.Context, n *node.Node, keys node.Keys, owner, hold string, tombstone time.Duration) (node.Released, error) {
	released, _, err := n.Release(ctx, keys, owner, hold, tombstone, time.Second)
	return released, err
}

// A release that finds its hold missing leaves a tombstone when asked: an
// acquire or a renewal of that hold arriving afterwards (delayed on the
// way, or re-sent) is refused, and other holds are not affected.
func TestRelease_tombstoneRefusesALateAcquireAndRenewal(t *testing.T) {
	n, cluster := oneNode(t)
	ctx := context.Background()
	keys := keysOf("redlock:{late}")
	if got, err := release(ctx, n, keys, "o", "h1", 0); err != nil || got != node.HoldAbsent {
		t.Fatalf("release without tombstone = %v, %v", got, err)
	}
	if got, err := n.Acquire(ctx, nil, keys, "o", "h1", time.Second); err != nil || !got.Granted {
		t.Fatalf("acquire after a release without tombstone = %+v, %v; want granted", got, err)
	}
	if _, err := release(ctx, n, keys, "o", "h1", 0); err != nil {
		t.Fatal(err)
	}
	if got, err := release(ctx, n, keys, "o", "h2", time.Second); err != nil || got != node.HoldAbsent {
		t.Fatalf("release with tombstone = %v, %v", got, err)
	}
	if got, err := n.Acquire(ctx, nil, keys, "o", "h2", time.Second); err != nil || got.Granted || !got.Revoked {
		t.Fatalf("late acquire of a released hold = %+v, %v; want revoked", got, err)
	}
	renewed, err := n.Renew(ctx, []node.Renewal{{Keys: keys, Owner: "o", Hold: "h2", TTL: time.Second}})
	if err != nil || renewed[0] != node.Revoked {
		t.Fatalf("late renewal of a released hold = %v, %v; want refused", renewed, err)
	}
	if exists, _ := cluster.Admin(t, 0).Exists(ctx, keys.Lock).Result(); exists != 0 {
		t.Fatal("a released hold was re-created")
	}
	if pttl, _ := cluster.Admin(t, 0).PTTL(ctx, keys.Gone).Result(); pttl <= 0 || pttl > time.Second {
		t.Fatalf("tombstones live %v, want at most their lifetime", pttl)
	}
	if got, err := n.Acquire(ctx, nil, keys, "o", "h3", time.Second); err != nil || !got.Granted {
		t.Fatalf("another hold = %+v, %v; want granted", got, err)
	}
	// A hold that is there is removed, and its tombstone refuses a second
	// copy of its acquire arriving afterwards.
	if got, err := release(ctx, n, keys, "o", "h3", time.Second); err != nil || got != node.LockDeleted {
		t.Fatalf("release of a present hold with tombstone = %v, %v", got, err)
	}
	if got, err := n.Acquire(ctx, nil, keys, "o", "h3", time.Second); err != nil || !got.Revoked {
		t.Fatalf("a second copy of a released acquire = %+v, %v; want revoked", got, err)
	}
}

// With Keys.Fenced, a grant answers the counter and the node's clock, read
// with the vote; a refusal does not, and a counter of another type fails
// the acquire before it takes anything.
func TestAcquire_fencedGrantAnswersTheCounter(t *testing.T) {
	n, cluster := oneNode(t)
	ctx := context.Background()
	keys := keysOf("lf")
	keys.Fenced = true
	if err := cluster.Admin(t, 0).Set(ctx, keys.Fence, "41", 0).Err(); err != nil {
		t.Fatal(err)
	}
	got, err := n.Acquire(ctx, nil, keys, "o", "h1", time.Second)
	if err != nil || !got.Granted || got.Fence == nil || got.Fence.Counter != 41 || time.Since(got.Fence.Clock).Abs() > time.Minute {
		t.Fatalf("fenced Acquire = %+v, %v", got, err)
	}
	if got, err := n.Acquire(ctx, nil, keys, "other", "h2", time.Second); err != nil || got.Granted || got.Fence != nil {
		t.Fatalf("refused fenced Acquire = %+v, %v", got, err)
	}
	keys.Lock, keys.Fence = "lf2", "lf2:fence"
	if got, err := n.AcquireQueued(ctx, nil, keys, "o", "h3", time.Second, node.Waiter{Ticket: 1, Lifetime: time.Second, Channel: "lf2:c", Fair: true}, time.Second); err != nil || got.Fence == nil || got.Fence.Counter != 0 {
		t.Fatalf("fenced AcquireQueued of no counter = %+v, %v", got, err)
	}
	keys.Lock, keys.Fence = "lf3", "h"
	if err := cluster.Admin(t, 0).HSet(ctx, "h", "a", "b").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Acquire(ctx, nil, keys, "o", "h4", time.Second); !errors.Is(err, node.ErrKeyConflict) {
		t.Fatalf("fenced Acquire with a hash for a counter = %v, want ErrKeyConflict", err)
	}
	if exists, err := cluster.Admin(t, 0).Exists(ctx, "lf3").Result(); err != nil || exists != 0 {
		t.Fatalf("the failed acquire took the lock: %d, %v", exists, err)
	}
}

// RaiseHeldFence raises the counter only while the hold holds the lock,
// and never lowers it.
func TestRaiseHeldFence_onlyWhileTheHoldHolds(t *testing.T) {
	n, cluster := oneNode(t)
	ctx := context.Background()
	keys := keysOf("rh")
	if value, held, err := n.RaiseHeldFence(ctx, keys, "h1", 5); err != nil || held || value != 0 {
		t.Fatalf("RaiseHeldFence of a free lock = %d, %t, %v", value, held, err)
	}
	if _, err := n.Acquire(ctx, nil, keys, "o", "h1", time.Second); err != nil {
		t.Fatal(err)
	}
	if value, held, err := n.RaiseHeldFence(ctx, keys, "h2", 5); err != nil || held || value != 0 {
		t.Fatalf("RaiseHeldFence of another hold = %d, %t, %v", value, held, err)
	}
	for _, step := range []struct{ token, want uint64 }{{1 << 60, 1 << 60}, {5, 1 << 60}, {1<<60 + 1, 1<<60 + 1}} {
		if value, held, err := n.RaiseHeldFence(ctx, keys, "h1", step.token); err != nil || !held || value != step.want {
			t.Fatalf("RaiseHeldFence(%d) = %d, %t, %v; want %d", step.token, value, held, err, step.want)
		}
	}
	if _, err := release(ctx, n, keys, "o", "h1", 0); err != nil {
		t.Fatal(err)
	}
	if value, held, err := n.RaiseHeldFence(ctx, keys, "h1", 1<<61); err != nil || held {
		t.Fatalf("RaiseHeldFence after the release = %d, %t, %v", value, held, err)
	}
	if got, err := n.ReadFence(ctx, keys); err != nil || got.Counter != 1<<60+1 {
		t.Fatalf("counter after a refused write-back = %+v, %v", got, err)
	}
	// Handed to the owner naming the hold (a lease taken from the notices).
	if err := cluster.Admin(t, 0).HSet(ctx, keys.Lock, "owner", "o", "handed", "c.2").Err(); err != nil {
		t.Fatal(err)
	}
	if value, held, err := n.RaiseHeldFence(ctx, keys, "c.1", 1<<61); err != nil || held {
		t.Fatalf("RaiseHeldFence of a hold the handing does not name = %d, %t, %v", value, held, err)
	}
	if value, held, err := n.RaiseHeldFence(ctx, keys, "c.2", 1<<61); err != nil || !held || value != 1<<61 {
		t.Fatalf("RaiseHeldFence of the handed hold = %d, %t, %v", value, held, err)
	}
}

func TestReadFence_counterAndClock(t *testing.T) {
	n, cluster := oneNode(t)
	ctx := context.Background()
	got, err := n.ReadFence(ctx, fenceKeys("f"))
	if err != nil || got.Counter != 0 || time.Since(got.Clock).Abs() > time.Minute {
		t.Fatalf("ReadFence of no counter = %+v, %v", got, err)
	}
	if _, err := n.RaiseFence(ctx, "f", 1795317275550414); err != nil {
		t.Fatal(err)
	}
	if got, err = n.ReadFence(ctx, fenceKeys("f")); err != nil || got.Counter != 1795317275550414 {
		t.Fatalf("ReadFence after a raise = %+v, %v", got, err)
	}
	// Above 2^53, where Lua numbers stop being exact: compared as strings.
	for _, step := range []struct{ token, want uint64 }{{1 << 60, 1 << 60}, {1<<60 - 1, 1 << 60}, {1<<60 + 1, 1<<60 + 1}} {
		if value, err := n.RaiseFence(ctx, "big", step.token); err != nil || value != step.want {
			t.Fatalf("RaiseFence(%d) = %d, %v; want %d", step.token, value, err, step.want)
		}
	}
	if err := cluster.Admin(t, 0).HSet(ctx, "h", "a", "b").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := n.ReadFence(ctx, fenceKeys("h")); err == nil || !node.Answered(err) {
		t.Fatalf("ReadFence of a hash = %v, want a WRONGTYPE answer", err)
	}
}
