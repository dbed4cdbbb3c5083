package redlock_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest"
)

// Issue 40, row 10: a snapshot taken before any long lease existed; A
// holds with a long TTL; a majority restarts from the snapshot (their
// record of the longest guard goes back to before A's); a new Client with
// a 1 s TTL, made with New, tries at once, its warm-up still under way.
// The restarted nodes' votes, cast under its own 1 s guard, must not count
// once the third node has answered A's: no grant until A's lease ends.
func TestGuard_shortTTLClientBorrowsTheLongestBeforeItsFirstVote(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	for i := range cluster.Servers {
		if err := cluster.Admin(t, i).Save(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	long := newClient(t, cluster, redlock.WithTTL(8*time.Second), redlock.WithWatchdog(false))
	a := mustLock(t, ctx, long.Mutex("lend")) // the nodes record its 8 s guard
	for _, i := range []int{0, 1} {
		if err := cluster.Servers[i].Restart(true); err != nil {
			t.Fatal(err)
		}
	}
	// The restarted nodes are now older than the short Client's own guard
	// (their start is known to the second: uptime_in_seconds).
	time.Sleep(2500 * time.Millisecond)
	b := newClient(t, cluster, redlock.WithTTL(time.Second)).Mutex("lend")
	neverGrantedBefore(t, ctx, b, a.Until(), func(err error) bool {
		return errors.Is(err, redlock.ErrNotAcquired) || errors.Is(err, redlock.ErrQuarantined) &&
			strings.Contains(err.Error(), "restarted")
	})
}
