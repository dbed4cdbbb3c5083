package node_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quorumlock/redlock/node"
)

// Row L2: one Client once used an hour's TTL; afterwards only short leases
// exist. LowerGuard lowers the marker's record where no key under the
// prefix outlives the lower guard and the node votes; a restart then
// waits the lower guard, not the hour. It refuses while a longer lease
// lives, and on a quarantined node.
func TestLowerGuard_safeOnlyWhenNoLeaseOutlivesIt(t *testing.T) {
	n, cluster := oneNode(t)
	ctx := context.Background()
	admin := cluster.Admin(t, 0)
	long := keysOf("redlock:{long}")
	long.Guard = time.Hour
	if got, err := n.Acquire(ctx, nil, long, "a", "a.1", time.Hour); err != nil || !got.Granted {
		t.Fatalf("Acquire with an hour's TTL = %+v, %v", got, err)
	}
	var outlives *node.LeaseOutlives
	if _, err := node.LowerGuard(ctx, admin, "redlock:", 2*time.Second); !errors.As(err, &outlives) ||
		outlives.Key != long.Lock || outlives.Left < 59*time.Minute || !errors.Is(err, node.ErrLeaseOutlives) {
		t.Fatalf("LowerGuard under an hour's lease = %v; want it refused, naming %s", err, long.Lock)
	}
	if _, err := release(ctx, n, long, "a", "a.1", 0); err != nil {
		t.Fatal(err)
	}
	from, err := node.LowerGuard(ctx, admin, "redlock:", 2*time.Second)
	if err != nil || from != time.Hour {
		t.Fatalf("LowerGuard once the lease is gone = %v, %v; want lowered from an hour", from, err)
	}
	if err := admin.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Servers[0].Restart(true); err != nil {
		t.Fatal(err)
	}
	fresh := node.New(0, cluster.Addrs()[0], cluster.Clients(t)[0]) // n carries the hour it heard
	t.Cleanup(fresh.Wait)
	short := keysOf("redlock:{short}")
	short.Guard = time.Second
	q := quarantineOf(t, fresh, short, "b.1")
	if q.Why != node.WhyRestarted || q.Until.Sub(q.Since) != 2*time.Second {
		t.Fatalf("after the restart: %s (%v..%v); want the restart rule for the lowered 2s", q, q.Since, q.Until)
	}
	if _, err := node.LowerGuard(ctx, admin, "redlock:", time.Second); !errors.As(err, &q) {
		t.Fatalf("LowerGuard on a quarantined node = %v; want its *Quarantine", err)
	}
}
