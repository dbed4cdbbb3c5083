package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/quorumlock/redlock/node"
)

// A request that lands after its deadline (the node paused while it was on
// its way, for longer than the TTL it asked for) takes and re-creates
// nothing: the tombstone of a release that came first may be gone by then.
func TestDeadline_lateRequestsTakeNothing(t *testing.T) {
	n, cluster := oneNode(t)
	ctx := context.Background()
	admin := cluster.Admin(t, 0)
	const ttl = 300 * time.Millisecond
	// A first call reads the node's clock: the deadlines need it.
	if _, err := n.Acquire(ctx, nil, keysOf("warm"), "a", "w1", time.Second); err != nil {
		t.Fatal(err)
	}
	// The client gives up on each (its read timeout is shorter than the
	// pause), so only what the node did tells: it must have done nothing.
	late := func(call func(ctx context.Context) error) error {
		cluster.Pause(t, 0)
		errc := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			errc <- call(ctx)
		}()
		time.Sleep(2 * ttl) // the request waits in the node's socket past its deadline
		cluster.Resume(t, 0)
		err := <-errc
		if _, pingErr := admin.Ping(ctx).Result(); pingErr != nil { // after the late request ran
			t.Fatal(pingErr)
		}
		return err
	}
	err := late(func(ctx context.Context) error {
		_, err := n.Renew(ctx, []node.Renewal{{Keys: keysOf("renewed"), Owner: "a", Hold: "h1", TTL: ttl}})
		return err
	})
	if err == nil {
		t.Fatal("late renewal of a missing hold: answered in time")
	}
	err = late(func(ctx context.Context) error {
		_, err := n.Acquire(ctx, nil, keysOf("acquired"), "a", "h2", ttl)
		return err
	})
	if err == nil {
		t.Fatal("late acquire: answered in time")
	}
	if keys, _ := admin.Exists(ctx, "renewed", "acquired").Result(); keys != 0 {
		t.Fatalf("%d of the lock keys exist after late requests, want 0", keys)
	}
	// In time, the same renewal re-creates the missing hold (it repairs),
	// once the node counts as up again.
	var got []node.Renewed
	for end := time.Now().Add(3 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		got, err = n.Renew(ctx, []node.Renewal{{Keys: keysOf("renewed"), Owner: "a", Hold: "h1", TTL: ttl}})
		if err == nil || time.Now().After(end) {
			break
		}
	}
	if err != nil || got[0] != node.Refreshed {
		t.Fatalf("renewal in time: %v, %v", got, err)
	}
}
