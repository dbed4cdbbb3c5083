package redlock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest"
)

// A fencing counter that holds a string that is not a counter (another
// program's key, a hand-made SET) fails the fenced attempt on that node
// with a key conflict and nothing taken: the lock stays free for others.
// The acquire script used to grant there first, and the attempt's undo
// left those grants in place for the TTL.
func TestFencing_garbageCounterTakesNothing(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	const name = "ledger"
	for i := range 2 {
		if err := cluster.Admin(t, i).Set(ctx, "redlock:{"+name+"}:fence", "not-a-number", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	fenced := newClient(t, cluster, redlock.WithFencing(), redlock.WithWatchdog(false), redlock.WithTTL(5*time.Second))
	if _, err := fenced.Mutex(name).TryLock(ctx); !errors.Is(err, redlock.ErrKeyConflict) {
		t.Fatalf("fenced TryLock over a garbage counter: %v; want ErrKeyConflict", err)
	}
	time.Sleep(100 * time.Millisecond) // any undo still out
	for i := range 3 {
		if n, err := cluster.Admin(t, i).Exists(ctx, "redlock:{"+name+"}").Result(); err != nil || n != 0 {
			t.Errorf("node %d: the lock key exists after the failed attempt (%d, %v)", i, n, err)
		}
	}
	plain := newClient(t, cluster, redlock.WithWatchdog(false))
	mustUnlock(t, mustLock(t, ctx, plain.Mutex(name)))
}
