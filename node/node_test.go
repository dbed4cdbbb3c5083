package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/quorumlock/redlock/node"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func oneNode(t *testing.T) (*node.Node, *redistest.Cluster) {
	t.Helper()
	cluster := redistest.Start(t, 1)
	return node.New(0, cluster.Addrs()[0], cluster.Clients(t)[0]), cluster
}

func TestAcquireReleaseCycle(t *testing.T) {
	n, cluster := oneNode(t)
	ctx := context.Background()
	admin := cluster.Admin(t, 0)
	const key, fence, channel = "redlock:{x}", "redlock:{x}:fence", "redlock:{x}:released"

	got, err := n.Acquire(ctx, key, fence, "owner-a", "hold-1", time.Second, true)
	if err != nil || !got.Granted || got.Holds != 1 || got.Fence != 1 {
		t.Fatalf("first acquire = %+v, %v; want granted, 1 hold, fence 1", got, err)
	}
	// The same hold again is idempotent; a second hold of the owner re-enters.
	if got, err = n.Acquire(ctx, key, fence, "owner-a", "hold-1", time.Second, false); err != nil || got.Holds != 1 {
		t.Fatalf("repeated hold = %+v, %v; want still 1 hold", got, err)
	}
	if got, err = n.Acquire(ctx, key, fence, "owner-a", "hold-2", time.Second, true); err != nil || got.Holds != 2 || got.Fence != 2 {
		t.Fatalf("re-entry = %+v, %v; want 2 holds, fence 2", got, err)
	}
	other, err := n.Acquire(ctx, key, fence, "owner-b", "hold-3", time.Second, true)
	if err != nil || other.Granted || other.PTTL <= 0 || other.PTTL > time.Second || len(other.Holder) != 16 {
		t.Fatalf("other owner = %+v, %v; want refused with the holder's PTTL", other, err)
	}
	if value, _ := admin.Get(ctx, fence).Int(); value != 2 {
		t.Fatalf("fence counter %d after a refused acquire, want 2 (refusals do not count)", value)
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
		got, err := n.Release(ctx, key, channel, step.owner, step.hold)
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
	if _, err := n.Acquire(ctx, "k", "f", "o", "h1", 10*time.Second, false); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Acquire(ctx, "k", "f", "o", "h2", 100*time.Millisecond, false); err != nil {
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
	if _, err := n.Acquire(ctx, "mine", "f", "a", "h1", time.Second, false); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Acquire(ctx, "theirs", "f", "b", "h2", time.Second, false); err != nil {
		t.Fatal(err)
	}
	if err := admin.HSet(ctx, "foreign", "x", "1").Err(); err != nil {
		t.Fatal(err)
	}
	got, err := n.Renew(ctx, []node.Renewal{
		{Key: "mine", Owner: "a", Hold: "h1", TTL: 5 * time.Second},
		{Key: "lost", Owner: "a", Hold: "h3", TTL: 5 * time.Second}, // restarted empty: repaired
		{Key: "theirs", Owner: "a", Hold: "h4", TTL: 5 * time.Second},
		{Key: "foreign", Owner: "a", Hold: "h5", TTL: 5 * time.Second},
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
	if _, err := n.Acquire(ctx, "str", "f", "o", "h", time.Second, false); err == nil {
		t.Fatal("acquire on a string key: no error")
	}
	if _, err := n.Release(ctx, "str", "c", "o", "h"); err == nil {
		t.Fatal("release on a string key: no error")
	}
	if _, err := n.Renew(ctx, []node.Renewal{{Key: "str", Owner: "o", Hold: "h", TTL: time.Second}}); err == nil {
		t.Fatal("renew on a string key: no error")
	}
	if err := cluster.Admin(t, 0).HSet(ctx, "hash", "x", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Acquire(ctx, "hash", "f", "o", "h", time.Second, false); err == nil {
		t.Fatal("acquire on a hash that is not a lock: no error")
	}
}

func TestScriptFlushFallsBackToEval(t *testing.T) {
	n, cluster := oneNode(t)
	ctx := context.Background()
	for range 3 {
		if err := cluster.Admin(t, 0).ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		got, err := n.Acquire(ctx, "k", "f", "o", "h", time.Second, false)
		if err != nil || !got.Granted {
			t.Fatalf("acquire after SCRIPT FLUSH = %+v, %v", got, err)
		}
		if _, err := n.Release(ctx, "k", "c", "o", "h"); err != nil {
			t.Fatalf("release after SCRIPT FLUSH: %v", err)
		}
	}
}
