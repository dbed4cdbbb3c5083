package redlock_test

import (
	"errors"
	"testing"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest"
)

func TestQuorum_everyNodeRequired(t *testing.T) {
	cluster := redlocktest.Start(t, 5)
	ctx := testContext(t)
	c := newClient(t, cluster, redlock.WithQuorum(5))
	mustUnlock(t, mustLock(t, ctx, c.Mutex("all")))
	if err := cluster.Servers[3].Kill(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Mutex("all").TryLock(ctx); !errors.Is(err, redlock.ErrNoQuorum) {
		t.Fatalf("WithQuorum(5) with a node down: %v, want ErrNoQuorum", err)
	}
	// Any 4 of 5 still locks with WithQuorum(4).
	mustUnlock(t, mustLock(t, ctx, c.Mutex("all", redlock.WithQuorum(4))))
}
